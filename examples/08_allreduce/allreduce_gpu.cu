// An allreduce (sum) of a vector on the GPU, in one kernel with one block per PE, twice: by hand — block-scoped puts of
// each chunk to its owner, a device barrier, the owner sums its chunk, block-scoped puts of the sum to every PE, a
// device barrier — and with one call, the device form of symm::allreduce over the world team. Then once more from the
// host, with the stream form. Run it with `symmrun -n 4 --mps ./allreduce_gpu`.
#include <symm/collectives.hpp>
#include <symm/symm.hpp>

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <fmt/format.h>

#include <cstdio>
#include <stdexcept>
#include <vector>

#include "allreduce.hpp"

namespace cg = cooperative_groups;

__global__ void
allreduce_kernel(symm::array_ref<const double> x, symm::array_ref<double> staging, symm::array_ref<double> result,
                 symm::array_ref<double> by_collective, symm::world_ref w, symm::team_ref everyone) {
  using namespace allreduce;
  auto block = cg::this_thread_block();
  const int me = w.my_pe(), n = w.n_pes();
  const std::size_t c = chunk(n), mine = chunk_size(n, me);
  // Reduce-scatter: chunk q of my vector into slot `me` of PE q's staging.
  for (int q = 0; q < n; ++q) {
    symm::put(block, symm::remote(staging, q).subspan(static_cast<std::size_t>(me) * c, chunk_size(n, q)),
              x.local().subspan(chunk_begin(n, q), chunk_size(n, q)));
  }
  symm::barrier_all(block, w);
  // Sum my chunk in PE order, straight into my own result.
  auto sum = result.local().subspan(chunk_begin(n, me), mine);
  auto in = staging.local();
  for (std::size_t i = block.thread_rank(); i < mine; i += block.num_threads()) {
    double s = 0.0;
    for (int p = 0; p < n; ++p)
      s += in[static_cast<std::size_t>(p) * c + i];
    sum[i] = s;
  }
  block.sync();
  // All-gather: my summed chunk into every other PE's result.
  for (int q = 0; q < n; ++q) {
    if (q != me) symm::put(block, symm::remote(result, q).subspan(chunk_begin(n, me), mine), sum);
  }
  symm::barrier_all(block, w);

  // The same with one call: every thread of the block calls it; team barriers use their own channels.
  symm::allreduce(block, everyone, by_collective, x, symm::plus{});
}

static void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(fmt::format("{}: {}", what, cudaGetErrorString(status)));
}

int main() {
  using namespace allreduce;
  symm::world world;
  if (world.backend() != symm::backend::cuda) {
    fmt::print(stderr, "allreduce_gpu: no GPU is visible; run the host example allreduce instead\n");
    return 2;
  }
  const int me = world.my_pe(), n = world.n_pes();
  symm::array<double> x(world, count), staging(world, static_cast<std::size_t>(n) * chunk(n)), result(world, count);
  symm::array<double> by_collective(world, count), by_stream(world, count);
  const symm::team everyone = world.team(); // lives while the kernel uses its view
  std::vector<double> mine(count);
  for (std::size_t i = 0; i < count; ++i)
    mine[i] = input(me, i);
  symm::remote(x, me) = mine; // a host-side put into this PE's own device memory
  world.barrier();

  allreduce_kernel<<<1, 512>>>(x, staging, result, by_collective, world, everyone);
  check(cudaGetLastError(), "allreduce launch");
  check(cudaDeviceSynchronize(), "allreduce");
  world.barrier(); // every PE's kernel is done before the next collective starts anywhere

  // The stream form: symm launches its own kernel on the stream; the future completes with it.
  symm::allreduce(cudaStreamPerThread, everyone, by_stream, x, symm::plus{}).wait();

  std::size_t wrong = 0;
  for (const symm::array<double>* r : {&result, &by_collective, &by_stream}) {
    std::vector<double> sum = symm::remote(*r, me);
    for (std::size_t i = 0; i < count; ++i)
      wrong += sum[i] == expected(n, i) ? 0u : 1u;
  }
  if (wrong != 0) std::fprintf(stderr, "allreduce_gpu: PE %d: %zu elements of the sum are wrong\n", me, wrong);
  symm::array<int> ok(world, static_cast<std::size_t>(n));
  symm::remote(ok, 0)[static_cast<std::size_t>(me)] = wrong == 0 ? 1 : 0;
  world.barrier();
  int failures = 0;
  if (me == 0) {
    for (int v : std::vector<int>(symm::remote(ok, 0)))
      failures += v == 1 ? 0 : 1;
    if (failures == 0) {
      fmt::print("allreduce: {} PEs, {} doubles: every PE holds the correct sum (by hand and by symm::allreduce)\n", n,
                 count);
    } else {
      fmt::print("allreduce: {} of {} PEs hold a wrong sum\n", failures, n);
    }
  }
  world.barrier();
  return wrong == 0 && failures == 0 ? 0 : 1;
}
