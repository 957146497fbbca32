// A 2-D Jacobi stencil on the GPU, decomposed over a grid of PEs; one block per PE runs every iteration in one kernel.
// Row halos: one block-scoped put each. Column halos are strided, so the block packs its edge column into a
// contiguous buffer, puts that into the neighbour's receive area, and after the device barrier unpacks what it
// received. PE 0 then gets every block and compares with a serial run. Run it with `symmrun -n 4 --mps
// ./jacobi_2d_gpu`.
#include <symm/symm.hpp>

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "jacobi_2d.hpp"

namespace cg = cooperative_groups;
using namespace jacobi_2d;

namespace {

constexpr std::size_t from_west = 0, from_east = 1;
constexpr std::size_t recv_index(std::size_t parity, std::size_t side) {
  return (parity * 2 + side) * rows;
}

//! The neighbours, as plain ints: placement's constructor is host code.
struct neighbours {
  int north, south, west, east;
};

//! Sends `buf`'s edges, waits at a device barrier, unpacks the received columns. Every thread of the block calls it.
__device__ void exchange(cg::thread_block block, symm::barrier_session<cg::thread_block>& bar, const neighbours& nb,
                         symm::array_ref<double> buf, symm::array_ref<double> recv, symm::array_ref<double> pack,
                         std::size_t parity) {
  auto u = buf.local();
  auto packed = pack.local(); // 2 * rows: [west edge | east edge], this PE's own scratch
  for (std::size_t i = block.thread_rank(); i < rows; i += block.num_threads()) {
    packed[i] = u[at(i + 1, 1)];
    packed[rows + i] = u[at(i + 1, cols)];
  }
  block.sync();
  if (nb.north >= 0)
    symm::put(block, symm::remote(buf, nb.north).subspan(at(rows + 1, 1), cols), u.subspan(at(1, 1), cols));
  if (nb.south >= 0)
    symm::put(block, symm::remote(buf, nb.south).subspan(at(0, 1), cols), u.subspan(at(rows, 1), cols));
  if (nb.west >= 0)
    symm::put(block, symm::remote(recv, nb.west).subspan(recv_index(parity, from_east), rows), packed.first(rows));
  if (nb.east >= 0)
    symm::put(block, symm::remote(recv, nb.east).subspan(recv_index(parity, from_west), rows), packed.last(rows));
  bar.barrier(); // the puts are complete and visible; the neighbours' have arrived here
  auto in = recv.local();
  for (std::size_t i = block.thread_rank(); i < rows; i += block.num_threads()) {
    if (nb.west >= 0) u[at(i + 1, 0)] = in[recv_index(parity, from_west) + i];
    if (nb.east >= 0) u[at(i + 1, cols + 1)] = in[recv_index(parity, from_east) + i];
  }
  block.sync();
}

__global__ void __launch_bounds__(256)
    jacobi(symm::array_ref<double> a, symm::array_ref<double> b, symm::array_ref<double> recv,
           symm::array_ref<double> pack, symm::world_ref w, neighbours nb, int iterations) {
  auto block = cg::this_thread_block();
  symm::barrier_session bar(block, w); // one device barrier per exchange, all in this session
  std::size_t exchanges = 0;
  exchange(block, bar, nb, a, recv, pack, exchanges++ % 2);
  symm::array_ref<double> cur = a, next = b;
  for (int it = 0; it < iterations; ++it) {
    auto u = cur.local();
    auto v = next.local();
    for (std::size_t k = block.thread_rank(); k < rows * cols; k += block.num_threads()) {
      const std::size_t i = k / cols + 1, j = k % cols + 1;
      v[at(i, j)] = update(u[at(i - 1, j)], u[at(i + 1, j)], u[at(i, j - 1)], u[at(i, j + 1)]);
    }
    block.sync();
    exchange(block, bar, nb, next, recv, pack, exchanges++ % 2);
    symm::array_ref<double> t = cur;
    cur = next;
    next = t;
  }
}

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(fmt::format("{}: {}", what, cudaGetErrorString(status)));
}

} // namespace

int main() {
  symm::world world;
  if (world.backend() != symm::backend::cuda) {
    fmt::print(stderr, "jacobi_2d_gpu: no GPU is visible; run the host example jacobi_2d instead\n");
    return 2;
  }
  const int me = world.my_pe(), n = world.n_pes();
  const placement p(me, n);
  symm::array<double> a(world, block_size), b(world, block_size), recv(world, 4 * rows), pack(world, 2 * rows);

  // Initial blocks, frames included, built on the host and copied into this PE's device memory.
  std::vector<double> init(block_size, 0.0);
  if (p.north < 0) std::fill(init.begin(), init.begin() + static_cast<std::ptrdiff_t>(cols + 2), top_boundary);
  check(cudaMemcpy(b.local().data(), init.data(), block_size * sizeof(double), cudaMemcpyHostToDevice), "copy b");
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j)
      init[at(i + 1, j + 1)] =
          initial(static_cast<std::size_t>(p.r) * rows + i, static_cast<std::size_t>(p.c) * cols + j);
  check(cudaMemcpy(a.local().data(), init.data(), block_size * sizeof(double), cudaMemcpyHostToDevice), "copy a");
  world.barrier(); // every PE's frame is in place before the first puts into it

  jacobi<<<1, 256>>>(a, b, recv, pack, world, neighbours{p.north, p.south, p.west, p.east}, iterations);
  check(cudaGetLastError(), "jacobi launch");
  check(cudaDeviceSynchronize(), "jacobi");
  world.barrier();

  int status = 0;
  if (me == 0) {
    const symm::array<double>& result = iterations % 2 == 0 ? a : b;
    const std::size_t R = static_cast<std::size_t>(p.pr) * rows, C = static_cast<std::size_t>(p.pc) * cols;
    std::vector<double> all(R * C);
    for (int pe = 0; pe < n; ++pe) {
      const placement q(pe, n);
      std::vector<double> block = symm::remote(result, pe); // host-side get of PE pe's whole block
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
