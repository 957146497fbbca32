// A 2-D Jacobi stencil on the GPU, decomposed over a grid of PEs; one block per PE runs every iteration in one kernel.
// Each PE's block is a symm::mdarray with a one-point halo frame; every halo, a contiguous row or a strided column, is
// one block-scoped put of a symm::submdspan (cuda::std::submdspan) of this PE's block into the slice of the
// neighbour's, then the device barrier. PE 0 then gets every block's interior (strided host gets) and compares with a
// serial run. Run it with `symmrun -n 4 --mps ./jacobi_2d_gpu`.
#include <symm/symm.hpp>

#include <cooperative_groups.h>
#include <cuda/std/array>
#include <cuda_runtime.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "jacobi_2d.hpp"

namespace cg = cooperative_groups;
namespace md = cuda::std;
using namespace jacobi_2d;

namespace {

using block_view = symm::mdarray_ref<double, block_extents>;
constexpr int last_row = static_cast<int>(rows), last_col = static_cast<int>(cols);

//! The neighbours, as plain ints: placement's constructor is host code.
struct neighbours {
  int north, south, west, east;
};

//! Puts `buf`'s edges into the neighbours' halo frames, then waits at a device barrier. Every thread of the block
//! calls it. Double buffering keeps it race-free: a PE puts into a neighbour's copy of `buf` only after the barrier of
//! the previous exchange, by which the neighbour has finished reading that copy's halos.
__device__ void exchange(cg::thread_block block, symm::barrier_session<cg::thread_block>& bar, const neighbours& nb,
                         block_view buf) {
  auto u = buf.local();
  if (nb.north >= 0)
    symm::put(block, symm::submdspan(symm::remote(buf, nb.north), last_row + 1, inner_cols),
              symm::submdspan(u, 1, inner_cols));
  if (nb.south >= 0)
    symm::put(block, symm::submdspan(symm::remote(buf, nb.south), 0, inner_cols),
              symm::submdspan(u, last_row, inner_cols));
  if (nb.west >= 0)
    symm::put(block, symm::submdspan(symm::remote(buf, nb.west), inner_rows, last_col + 1),
              symm::submdspan(u, inner_rows, 1));
  if (nb.east >= 0)
    symm::put(block, symm::submdspan(symm::remote(buf, nb.east), inner_rows, 0),
              symm::submdspan(u, inner_rows, last_col));
  bar.barrier(); // the puts are complete and visible; the neighbours' have arrived here
}

__global__ void __launch_bounds__(256)
    jacobi(block_view a, block_view b, symm::world_ref w, neighbours nb, int iterations) {
  auto block = cg::this_thread_block();
  symm::barrier_session bar(block, w); // one device barrier per exchange, all in this session
  exchange(block, bar, nb, a);
  block_view cur = a, next = b;
  for (int it = 0; it < iterations; ++it) {
    auto u = cur.local();
    auto v = next.local();
    for (std::size_t k = block.thread_rank(); k < rows * cols; k += block.num_threads()) {
      const std::size_t i = k / cols + 1, j = k % cols + 1;
      v(i, j) = update(u(i - 1, j), u(i + 1, j), u(i, j - 1), u(i, j + 1));
    }
    block.sync();
    exchange(block, bar, nb, next);
    block_view t = cur;
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
  symm::mdarray<double, block_extents> a(world), b(world);

  // Initial blocks, frames included, built on the host and copied into this PE's device memory.
  std::vector<double> init(block_size, 0.0);
  if (p.north < 0) std::fill(init.begin(), init.begin() + static_cast<std::ptrdiff_t>(cols + 2), top_boundary);
  check(cudaMemcpy(b.local().data_handle(), init.data(), block_size * sizeof(double), cudaMemcpyHostToDevice),
        "copy b");
  md::mdspan<double, block_extents> initial_block(init.data());
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j)
      initial_block(i + 1, j + 1) =
          initial(static_cast<std::size_t>(p.r) * rows + i, static_cast<std::size_t>(p.c) * cols + j);
  check(cudaMemcpy(a.local().data_handle(), init.data(), block_size * sizeof(double), cudaMemcpyHostToDevice),
        "copy a");
  world.barrier(); // every PE's frame is in place before the first puts into it

  jacobi<<<1, 256>>>(a, b, world, neighbours{p.north, p.south, p.west, p.east}, iterations);
  check(cudaGetLastError(), "jacobi launch");
  check(cudaDeviceSynchronize(), "jacobi");
  world.barrier();

  int status = 0;
  if (me == 0) {
    const symm::mdarray<double, block_extents>& result = iterations % 2 == 0 ? a : b;
    const std::size_t R = static_cast<std::size_t>(p.pr) * rows, C = static_cast<std::size_t>(p.pc) * cols;
    std::vector<double> all(R * C);
    for (int pe = 0; pe < n; ++pe) {
      const placement q(pe, n);
      // A strided host-side get (one cudaMemcpy2D): PE pe's interior, without its frame, into its place in the domain.
      md::mdspan<double, md::dextents<std::size_t, 2>, md::layout_stride> place(
          all.data() + static_cast<std::size_t>(q.r) * rows * C + static_cast<std::size_t>(q.c) * cols,
          md::layout_stride::mapping(md::dextents<std::size_t, 2>(rows, cols), md::array<std::size_t, 2>{C, 1}));
      symm::get(place, symm::submdspan(symm::remote(result, pe), inner_rows, inner_cols));
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
