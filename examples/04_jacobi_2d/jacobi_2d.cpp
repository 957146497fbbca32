// A 2-D Jacobi stencil on the host backend, decomposed over a grid of PEs. Each PE's block is a symm::mdarray with a
// one-point halo frame; every halo, a contiguous row or a strided column, is one put of a symm::submdspan
// (cuda::std::submdspan) of this PE's block into the slice of the neighbour's (symm::remote(block, pe) is an mdspan of
// the neighbour's copy). PE 0 then gets every block's interior and compares with a serial run. Run it with `symmrun -n
// 4 ./jacobi_2d`.
#include "jacobi_2d.hpp"

#include <symm/symm.hpp>

#include <cuda/std/array>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

using namespace jacobi_2d;
namespace md = cuda::std;

namespace {

using block = symm::mdarray_ref<double, block_extents>;
constexpr int last_row = static_cast<int>(rows), last_col = static_cast<int>(cols);

//! Puts `buf`'s edges into the neighbours' halo frames and waits for theirs (barrier). Double buffering keeps it
//! race-free: a PE puts into a neighbour's copy of `buf` only after the barrier of the previous exchange, by which the
//! neighbour has finished reading that copy's halos.
void exchange(symm::world& world, const placement& p, block buf) {
  auto u = buf.local();
  if (p.north >= 0)
    symm::put(symm::submdspan(symm::remote(buf, p.north), last_row + 1, inner_cols), symm::submdspan(u, 1, inner_cols));
  if (p.south >= 0)
    symm::put(symm::submdspan(symm::remote(buf, p.south), 0, inner_cols), symm::submdspan(u, last_row, inner_cols));
  if (p.west >= 0)
    symm::put(symm::submdspan(symm::remote(buf, p.west), inner_rows, last_col + 1), symm::submdspan(u, inner_rows, 1));
  if (p.east >= 0)
    symm::put(symm::submdspan(symm::remote(buf, p.east), inner_rows, 0), symm::submdspan(u, inner_rows, last_col));
  world.barrier();
}

} // namespace

int main() {
  symm::world world({.backend = symm::backend::host});
  const int me = world.my_pe(), n = world.n_pes();
  const placement p(me, n);

  symm::mdarray<double, block_extents> a(world, block_extents{}, {.zeroed = true}),
      b(world, block_extents{}, {.zeroed = true});
  for (auto* buf : {&a, &b}) {
    if (p.north < 0)
      for (std::size_t j = 0; j < cols + 2; ++j)
        buf->local()(0, j) = top_boundary;
  }
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j)
      a.local()(i + 1, j + 1) =
          initial(static_cast<std::size_t>(p.r) * rows + i, static_cast<std::size_t>(p.c) * cols + j);
  world.barrier(); // everyone's frame is set before the first puts into it

  exchange(world, p, a);
  block cur = a, next = b;
  for (int it = 0; it < iterations; ++it) {
    auto u = cur.local();
    auto v = next.local();
    for (std::size_t i = 1; i <= rows; ++i)
      for (std::size_t j = 1; j <= cols; ++j)
        v(i, j) = update(u(i - 1, j), u(i + 1, j), u(i, j - 1), u(i, j + 1));
    exchange(world, p, next);
    std::swap(cur, next);
  }

  int status = 0;
  if (me == 0) {
    const std::size_t R = static_cast<std::size_t>(p.pr) * rows, C = static_cast<std::size_t>(p.pc) * cols;
    std::vector<double> all(R * C);
    for (int pe = 0; pe < n; ++pe) {
      const placement q(pe, n);
      // A strided get: PE pe's interior, without its frame, into its place in the whole domain.
      md::mdspan<double, md::dextents<std::size_t, 2>, md::layout_stride> place(
          all.data() + static_cast<std::size_t>(q.r) * rows * C + static_cast<std::size_t>(q.c) * cols,
          md::layout_stride::mapping(md::dextents<std::size_t, 2>(rows, cols), md::array<std::size_t, 2>{C, 1}));
      symm::get(place, symm::submdspan(symm::remote(cur, pe), inner_rows, inner_cols));
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
