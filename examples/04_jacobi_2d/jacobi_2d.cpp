// A 2-D Jacobi stencil on the host backend, decomposed over a grid of PEs. Row halos are contiguous: one put each.
// Column halos are strided in the row-major block, so each PE packs its edge column into a buffer, puts the buffer
// into the neighbour's receive area, and the neighbour unpacks it after the barrier. PE 0 then gets every block and
// compares with a serial run. Run it with `symmrun -n 4 ./jacobi_2d`.
#include "jacobi_2d.hpp"

#include <symm/symm.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

using namespace jacobi_2d;

namespace {

// Receive area for column halos: [parity][side][row]. Exchange e writes parity e % 2, so a PE never puts into the
// half its neighbour may still be unpacking from exchange e - 1.
constexpr std::size_t from_west = 0, from_east = 1;
constexpr std::size_t recv_index(std::size_t parity, std::size_t side) {
  return (parity * 2 + side) * rows;
}

//! Sends `buf`'s edges to the neighbours, waits for theirs (barrier) and unpacks the columns into `buf`'s halo frame.
void exchange(symm::world& world, const placement& p, symm::array_ref<double> buf, symm::array_ref<double> recv,
              std::size_t parity) {
  auto u = buf.local();
  // Rows: contiguous, straight into the neighbour's halo row.
  if (p.north >= 0) symm::remote(buf, p.north).subspan(at(rows + 1, 1), cols) = u.subspan(at(1, 1), cols);
  if (p.south >= 0) symm::remote(buf, p.south).subspan(at(0, 1), cols) = u.subspan(at(rows, 1), cols);
  // Columns: strided, so pack, then one put of the packed buffer.
  std::vector<double> packed(rows);
  if (p.west >= 0) {
    for (std::size_t i = 0; i < rows; ++i)
      packed[i] = u[at(i + 1, 1)];
    symm::remote(recv, p.west).subspan(recv_index(parity, from_east), rows) = packed;
  }
  if (p.east >= 0) {
    for (std::size_t i = 0; i < rows; ++i)
      packed[i] = u[at(i + 1, cols)];
    symm::remote(recv, p.east).subspan(recv_index(parity, from_west), rows) = packed;
  }
  world.barrier();
  auto in = recv.local();
  if (p.west >= 0)
    for (std::size_t i = 0; i < rows; ++i)
      u[at(i + 1, 0)] = in[recv_index(parity, from_west) + i];
  if (p.east >= 0)
    for (std::size_t i = 0; i < rows; ++i)
      u[at(i + 1, cols + 1)] = in[recv_index(parity, from_east) + i];
}

} // namespace

int main() {
  symm::world world({.backend = symm::backend::host});
  const int me = world.my_pe(), n = world.n_pes();
  const placement p(me, n);

  symm::array<double> a(world, block_size), b(world, block_size), recv(world, 4 * rows);
  for (auto* buf : {&a, &b}) {
    auto u = buf->local();
    std::fill(u.begin(), u.end(), 0.0);
    if (p.north < 0)
      for (std::size_t j = 0; j < cols + 2; ++j)
        u[at(0, j)] = top_boundary;
  }
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j)
      a.local()[at(i + 1, j + 1)] =
          initial(static_cast<std::size_t>(p.r) * rows + i, static_cast<std::size_t>(p.c) * cols + j);
  world.barrier(); // everyone's frame is set before the first puts into it

  std::size_t exchanges = 0;
  exchange(world, p, a, recv, exchanges++ % 2);
  symm::array_ref<double> cur = a, next = b;
  for (int it = 0; it < iterations; ++it) {
    auto u = cur.local();
    auto v = next.local();
    for (std::size_t i = 1; i <= rows; ++i)
      for (std::size_t j = 1; j <= cols; ++j)
        v[at(i, j)] = update(u[at(i - 1, j)], u[at(i + 1, j)], u[at(i, j - 1)], u[at(i, j + 1)]);
    exchange(world, p, next, recv, exchanges++ % 2);
    std::swap(cur, next);
  }

  int status = 0;
  if (me == 0) {
    const std::size_t R = static_cast<std::size_t>(p.pr) * rows, C = static_cast<std::size_t>(p.pc) * cols;
    std::vector<double> all(R * C);
    for (int pe = 0; pe < n; ++pe) {
      const placement q(pe, n);
      std::vector<double> block = symm::remote(cur, pe); // get: PE pe's whole block, halos included
      for (std::size_t i = 0; i < rows; ++i)
        for (std::size_t j = 0; j < cols; ++j)
          all[(static_cast<std::size_t>(q.r) * rows + i) * C + static_cast<std::size_t>(q.c) * cols + j] =
              block[at(i + 1, j + 1)];
    }
    auto expected = serial(R, C);
    double max_diff = 0.0;
    for (std::size_t k = 0; k < all.size(); ++k)
      max_diff = std::max(max_diff, std::abs(all[k] - expected[k]));
    if (max_diff <= 1e-12) {
      fmt::print("jacobi_2d: {} x {} PEs, {} x {} points, {} iterations: matches the serial result (max |diff| = "
                 "{:.1e})\n",
                 p.pr, p.pc, R, C, iterations, max_diff);
    } else {
      fmt::print("jacobi_2d: differs from the serial result by up to {}\n", max_diff);
      status = 1;
    }
  }
  world.barrier();
  return status;
}
