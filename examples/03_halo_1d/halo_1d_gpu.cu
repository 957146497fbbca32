// A 1-D Jacobi stencil on the GPU. One block per PE runs every iteration in one kernel: compute the new values, put
// the two edge values into the neighbours' halo cells (block-scoped puts through the peer mapping), then a device
// barrier of the kernel's barrier session. PE 0 then gets every PE's piece and compares with a serial run on the host.
// Run it with `symmrun -n 4 --mps ./halo_1d_gpu`.
#include <symm/symm.hpp>

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "halo_1d.hpp"

namespace cg = cooperative_groups;

__global__ void jacobi(symm::array_ref<double> a, symm::array_ref<double> b, symm::world_ref w, int iterations) {
  auto block = cg::this_thread_block();
  const int me = w.my_pe(), n = w.n_pes();
  const std::size_t m = a.size() - 2;
  symm::array_ref<double> cur = a, next = b;
  // Many barriers in one kernel: a session keeps the barrier's state in registers between them.
  symm::barrier_session bar(block, w);
  for (int it = 0; it < iterations; ++it) {
    auto u = cur.local();
    auto v = next.local();
    for (std::size_t i = 1 + block.thread_rank(); i <= m; i += block.num_threads())
      v[i] = 0.5 * (u[i - 1] + u[i + 1]);
    block.sync();
    // Block-scoped puts of one element each: every thread calls them, the block syncs inside.
    if (me > 0) symm::put(block, symm::remote(next, me - 1).subspan(m + 1, 1), v.subspan(1, 1));
    if (me < n - 1) symm::put(block, symm::remote(next, me + 1).subspan(0, 1), v.subspan(m, 1));
    bar.barrier(); // quiet + barrier: the puts are visible on the neighbours; they have finished reading `cur`
    symm::array_ref<double> t = cur;
    cur = next;
    next = t;
  }
}

// Initial values and the first halo exchange, by one block: the same kernel style as the loop.
__global__ void init(symm::array_ref<double> a, symm::array_ref<double> b, symm::world_ref w) {
  auto block = cg::this_thread_block();
  const int me = w.my_pe(), n = w.n_pes();
  const std::size_t m = a.size() - 2;
  auto u = a.local();
  for (std::size_t i = block.thread_rank(); i < m; i += block.num_threads()) {
    u[i + 1] = static_cast<double>((static_cast<std::size_t>(me) * m + i) % 17) * 0.125; // halo_1d::initial
  }
  if (block.thread_rank() == 0) {
    a.local()[0] = b.local()[0] = me == 0 ? halo_1d::left_boundary : 0.0;
    a.local()[m + 1] = b.local()[m + 1] = me == n - 1 ? halo_1d::right_boundary : 0.0;
  }
  symm::sync_all(block, w); // every PE has set its own halos before any neighbour puts into them
  if (me > 0) symm::put(block, symm::remote(a, me - 1).subspan(m + 1, 1), u.subspan(1, 1));
  if (me < n - 1) symm::put(block, symm::remote(a, me + 1).subspan(0, 1), u.subspan(m, 1));
  symm::barrier_all(block, w);
}

static void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(fmt::format("{}: {}", what, cudaGetErrorString(status)));
}

int main() {
  using namespace halo_1d;
  symm::world world;
  if (world.backend() != symm::backend::cuda) {
    fmt::print(stderr, "halo_1d_gpu: no GPU is visible; run the host example halo_1d instead\n");
    return 2;
  }
  const int me = world.my_pe(), n = world.n_pes();
  constexpr std::size_t m = points_per_pe;
  symm::array<double> a(world, m + 2), b(world, m + 2);

  init<<<1, 256>>>(a, b, world);
  check(cudaGetLastError(), "init launch");
  jacobi<<<1, 256>>>(a, b, world, iterations);
  check(cudaGetLastError(), "jacobi launch");
  check(cudaDeviceSynchronize(), "jacobi");
  world.barrier(); // every PE's kernel is done (each synchronised before arriving)

  int status = 0;
  if (me == 0) {
    const symm::array<double>& result = iterations % 2 == 0 ? a : b;
    std::vector<double> all;
    for (int pe = 0; pe < n; ++pe) {
      std::vector<double> piece = symm::remote(result, pe).subspan(1, m); // host-side get from PE pe's GPU memory
      all.insert(all.end(), piece.begin(), piece.end());
    }
    auto expected = serial(all.size());
    double max_diff = 0.0;
    for (std::size_t i = 0; i < all.size(); ++i)
      max_diff = std::max(max_diff, std::abs(all[i] - expected[i]));
    if (max_diff <= 1e-12) {
      fmt::print("halo_1d: {} PEs x {} points, {} iterations: matches the serial result (max |diff| = {:.1e})\n", n, m,
                 iterations, max_diff);
    } else {
      fmt::print("halo_1d: differs from the serial result by up to {}\n", max_diff);
      status = 1;
    }
  }
  world.barrier();
  return status;
}
