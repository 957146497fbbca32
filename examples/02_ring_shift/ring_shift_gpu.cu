// Ring shift on the GPU: one kernel per PE runs all n_pes steps. Each step the block puts its current values into
// the right neighbour's landing slot (a block-cooperative put through the peer mapping), then a device barrier
// makes them visible, and the block takes what its left neighbour sent. After a full turn every PE holds its own
// values again. Run it with `symmrun -n 4 --mps ./ring_shift_gpu`.
#include <symm/symm.hpp>

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <fmt/format.h>

#include <cstdio>
#include <stdexcept>
#include <vector>

namespace cg = cooperative_groups;

// `slots` and `current` are views (offset, extent, peer table) passed by value; `w` carries the PE numbers and the
// device barrier's flags. No global device state, so no -rdc.
__global__ void ring_shift(symm::array_ref<int> slots, symm::array_ref<int> current, symm::world_ref w,
                           unsigned* mismatches) {
  auto block = cg::this_thread_block();
  const int me = w.my_pe(), n = w.n_pes(), right = (me + 1) % n;
  auto cur = current.local();
  const std::size_t count = cur.size();

  for (std::size_t i = block.thread_rank(); i < count; i += block.num_threads())
    cur[i] = me * 100000 + static_cast<int>(i);
  block.sync();
  for (int step = 0; step < n; ++step) {
    const std::size_t slot = static_cast<std::size_t>(step % 2) * count;
    symm::put(block, symm::remote(slots, right).subspan(slot, count), cur); // the block shares the copy
    symm::barrier_all(block, w);                                            // quiet + barrier of one block per PE
    auto landed = slots.local().subspan(slot, count);
    for (std::size_t i = block.thread_rank(); i < count; i += block.num_threads())
      cur[i] = landed[i];
    block.sync();
  }
  for (std::size_t i = block.thread_rank(); i < count; i += block.num_threads()) {
    if (cur[i] != me * 100000 + static_cast<int>(i)) atomicAdd(mismatches, 1u);
  }
}

static void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(fmt::format("{}: {}", what, cudaGetErrorString(status)));
}

int main() {
  symm::world world; // the cuda backend when a GPU is visible
  if (world.backend() != symm::backend::cuda) {
    fmt::print(stderr, "ring_shift_gpu: no GPU is visible; run the host example ring_shift instead\n");
    return 2;
  }
  const int me = world.my_pe(), n = world.n_pes();
  constexpr std::size_t count = 4096;
  symm::array<int> slots(world, 2 * count), current(world, count);
  symm::array<int> ok(world, static_cast<std::size_t>(n));

  unsigned* mismatches = nullptr;
  check(cudaMalloc(&mismatches, sizeof(unsigned)), "cudaMalloc");
  check(cudaMemset(mismatches, 0, sizeof(unsigned)), "cudaMemset");
  // Every PE launches the kernel: the device barrier inside waits for one block of every PE.
  ring_shift<<<1, 256>>>(slots, current, world, mismatches);
  check(cudaGetLastError(), "ring_shift launch");
  check(cudaDeviceSynchronize(), "ring_shift");
  unsigned bad = 0;
  check(cudaMemcpy(&bad, mismatches, sizeof(bad), cudaMemcpyDeviceToHost), "cudaMemcpy");
  check(cudaFree(mismatches), "cudaFree");

  if (bad != 0) std::fprintf(stderr, "ring_shift_gpu: PE %d: %u values are not its own after the turn\n", me, bad);
  symm::remote(ok, 0)[static_cast<std::size_t>(me)] = bad == 0 ? 1 : 0; // host-side p into PE 0's device memory
  world.barrier();

  int failures = 0;
  if (me == 0) {
    std::vector<int> flags = symm::remote(ok, 0); // host-side get (the data is in device memory)
    for (int v : flags)
      failures += v == 1 ? 0 : 1;
    if (failures == 0) fmt::print("ring_shift: all {} PEs got their own {} values back after {} steps\n", n, count, n);
    else fmt::print("ring_shift: {} of {} PEs got wrong values\n", failures, n);
  }
  return bad == 0 && failures == 0 ? 0 : 1;
}
