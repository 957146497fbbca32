// A pipeline round a ring of PEs on the GPU: one block per PE produces chunks for its right neighbour and consumes
// its left neighbour's, all in one kernel. A block-scoped put_signal delivers a chunk and then sets the consumer's
// `ready` signal; the consumer waits on it in the kernel, checks the chunk, and frees the slot by an atomic store into
// the producer's `consumed` word. Run it with `symmrun -n 4 --mps ./pipeline_gpu`.
#include <symm/signal.hpp>
#include <symm/symm.hpp>
#include <symm/wait.hpp>

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <fmt/format.h>

#include <cstdint>
#include <cstdio>
#include <stdexcept>

#include "pipeline.hpp"

namespace cg = cooperative_groups;

__global__ void run(symm::array_ref<std::int64_t> box, symm::array_ref<std::int64_t> staging, symm::signal_ref ready,
                    symm::scalar_ref<std::uint64_t> consumed, symm::world_ref w, unsigned long long* bad) {
  using namespace pipeline;
  auto block = cg::this_thread_block();
  const int me = w.my_pe(), n = w.n_pes();
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  auto out = staging.local();
  unsigned long long wrong = 0;
  for (std::uint64_t k = 0; k < chunks; ++k) {
    // Produce chunk k into the staging buffer, once the consumer has freed slot k % slots.
    if (k >= slots && block.thread_rank() == 0) symm::wait_until(consumed, symm::cmp::ge, k - slots + 1);
    block.sync();
    for (std::size_t i = block.thread_rank(); i < chunk; i += block.num_threads())
      out[i] = value(me, k, i);
    block.sync();
    symm::put_signal(block, symm::remote(box, right).subspan((k % slots) * chunk, chunk), out,
                     symm::remote(ready, right), k + 1, symm::signal_op::set);

    // Consume chunk k from the left: one thread waits (acquire), the block barrier passes that on to the others.
    if (block.thread_rank() == 0) symm::signal_wait_until(ready, symm::cmp::ge, k + 1);
    block.sync();
    auto in = box.local().subspan((k % slots) * chunk, chunk);
    for (std::size_t i = block.thread_rank(); i < chunk; i += block.num_threads()) {
      wrong += in[i] == value(left, k, i) ? 0u : 1u;
    }
    block.sync(); // every thread has read the slot before the producer hears it is free
    if (block.thread_rank() == 0) symm::remote(consumed, left).store(k + 1, cuda::memory_order_release);
  }
  if (wrong != 0) atomicAdd(bad, wrong);
}

static void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(fmt::format("{}: {}", what, cudaGetErrorString(status)));
}

int main() {
  using namespace pipeline;
  symm::world world;
  if (world.backend() != symm::backend::cuda) {
    fmt::print(stderr, "pipeline_gpu: no GPU is visible; run the host example pipeline instead\n");
    return 2;
  }
  const int me = world.my_pe(), n = world.n_pes();
  symm::array<std::int64_t> box(world, slots * chunk), staging(world, chunk);
  symm::signal ready(world); // 0 on every PE after construction
  symm::scalar<std::uint64_t> consumed(world);
  symm::remote(consumed, me) = 0; // host-side p of this PE's own word
  world.barrier();

  unsigned long long* bad = nullptr;
  check(cudaMalloc(&bad, sizeof(*bad)), "cudaMalloc");
  check(cudaMemset(bad, 0, sizeof(*bad)), "cudaMemset");
  run<<<1, 256>>>(box, staging, ready, consumed, world, bad); // every PE's kernel runs at once: it needs its neighbours
  check(cudaGetLastError(), "run launch");
  check(cudaDeviceSynchronize(), "run");
  unsigned long long wrong = 0;
  check(cudaMemcpy(&wrong, bad, sizeof(wrong), cudaMemcpyDeviceToHost), "cudaMemcpy");
  check(cudaFree(bad), "cudaFree");

  if (wrong != 0) std::fprintf(stderr, "pipeline_gpu: PE %d: %llu values arrived wrong\n", me, wrong);
  symm::array<int> ok(world, static_cast<std::size_t>(n));
  symm::remote(ok, 0)[static_cast<std::size_t>(me)] = wrong == 0 ? 1 : 0;
  world.barrier();
  int failures = 0;
  if (me == 0) {
    for (int v : std::vector<int>(symm::remote(ok, 0)))
      failures += v == 1 ? 0 : 1;
    if (failures == 0) {
      fmt::print("pipeline: {} PEs, {} chunks of {} values through {} slots per link: every chunk arrived intact\n", n,
                 chunks, chunk, slots);
    } else {
      fmt::print("pipeline: {} of {} PEs received wrong data\n", failures, n);
    }
  }
  world.barrier();
  return wrong == 0 && failures == 0 ? 0 : 1;
}
