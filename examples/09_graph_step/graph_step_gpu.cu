// One step of an iterative program on the GPU, recorded once as a CUDA graph and replayed `steps` times: a ring halo
// exchange (stream put into the right neighbour, stream barrier), a stream allreduce of a small vector, and a message
// to the right neighbour with a stream put_signal, which the receiver's stream waits for. A kernel inside the graph
// checks every value received, so every replay is checked on the device; the host only waits at the end.
// Run it with `symmrun -n 4 --mps ./graph_step_gpu`.
#include <symm/collectives.hpp>
#include <symm/signal.hpp>
#include <symm/stream_sync.hpp>
#include <symm/symm.hpp>

#include <cuda_runtime.h>

#include <fmt/format.h>

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <vector>

#include "graph_step.hpp"

//! The step's first kernel. Kernel arguments are recorded as they are at capture, so the step number lives in device
//! memory and advances at every replay.
__global__ void begin_step(std::uint64_t* step, symm::array_ref<std::uint64_t> field,
                           symm::array_ref<std::uint64_t> partial_sums, int me) {
  using namespace graph_step;
  __shared__ std::uint64_t s;
  if (threadIdx.x == 0) s = *step + 1;
  __syncthreads();
  for (std::size_t i = threadIdx.x; i < field_count; i += blockDim.x)
    field.local()[i] = value(me, s, i);
  for (std::size_t j = threadIdx.x; j < reduce_count; j += blockDim.x)
    partial_sums.local()[j] = partial(me, s, j);
  __syncthreads();
  if (threadIdx.x == 0) *step = s;
}

//! The step's check: counts the wrong values received into `wrong`.
__global__ void check_step(const std::uint64_t* step, symm::array_ref<const std::uint64_t> halo,
                           symm::array_ref<const std::uint64_t> sums, symm::array_ref<const std::uint64_t> inbox,
                           int me, int n, unsigned long long* wrong) {
  using namespace graph_step;
  const std::uint64_t s = *step;
  unsigned long long bad = 0;
  for (std::size_t i = threadIdx.x; i < halo_width; i += blockDim.x)
    bad += halo.local()[i] == expected_halo(me, n, s, i) ? 0u : 1u;
  for (std::size_t j = threadIdx.x; j < reduce_count; j += blockDim.x)
    bad += sums.local()[j] == expected_sum(n, s, j) ? 0u : 1u;
  for (std::size_t i = threadIdx.x; i < message_count; i += blockDim.x)
    bad += inbox.local()[i] == expected_message(me, n, s, i) ? 0u : 1u;
  if (bad != 0) atomicAdd(wrong, bad);
}

static void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(fmt::format("{}: {}", what, cudaGetErrorString(status)));
}

int main() {
  using namespace graph_step;
  symm::world world;
  if (world.backend() != symm::backend::cuda) {
    fmt::print(stderr, "graph_step_gpu: no GPU is visible; run the host example graph_step instead\n");
    return 2;
  }
  const int me = world.my_pe(), n = world.n_pes();
  const int right = right_of(me, n);
  symm::array<std::uint64_t> field(world, field_count), halo(world, halo_width);
  symm::array<std::uint64_t> partial_sums(world, reduce_count), sums(world, reduce_count);
  symm::array<std::uint64_t> inbox(world, message_count);
  symm::signal arrived(world);              // 1 once the left neighbour's message is in inbox (starts 0)
  const symm::team everyone = world.team(); // lives while the graph is launched

  std::uint64_t* step = nullptr;
  unsigned long long* wrong = nullptr;
  check(cudaMalloc(&step, sizeof(*step)), "cudaMalloc");
  check(cudaMalloc(&wrong, sizeof(*wrong)), "cudaMalloc");
  check(cudaMemset(step, 0, sizeof(*step)), "cudaMemset");
  check(cudaMemset(wrong, 0, sizeof(*wrong)), "cudaMemset");
  cudaStream_t capture_stream, launch_stream;
  check(cudaStreamCreateWithFlags(&capture_stream, cudaStreamNonBlocking), "cudaStreamCreate");
  check(cudaStreamCreateWithFlags(&launch_stream, cudaStreamNonBlocking), "cudaStreamCreate");
  check(cudaDeviceSynchronize(), "set-up");

  // Record the step. Thread-local mode: with PEs as threads of one process, a global-mode capture in one thread would
  // forbid the other PEs' host waits. Nothing runs now; the futures the stream forms return are of no use here
  // (their wait() throws: the operation runs at each launch).
  check(cudaStreamBeginCapture(capture_stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  begin_step<<<1, 256, 0, capture_stream>>>(step, field, partial_sums, me);
  (void) symm::put(capture_stream, symm::remote(halo, right), field.local().last(halo_width));
  (void) symm::barrier_all(capture_stream, everyone); // every PE's halo has arrived
  (void) symm::allreduce(capture_stream, everyone, sums, partial_sums, symm::plus{});
  (void) symm::put_signal(capture_stream, symm::remote(inbox, right), field.local().first(message_count),
                          symm::remote(arrived, right), 1, symm::signal_op::set);
  (void) symm::signal_wait_until(capture_stream, arrived, symm::cmp::eq, 1);
  // The recorded put_signal stores the same 1 at every replay: reset the word for the next one.
  check(cudaMemsetAsync(arrived.ref().local_address(), 0, sizeof(std::uint64_t), capture_stream), "cudaMemsetAsync");
  check_step<<<1, 256, 0, capture_stream>>>(step, halo, sums, inbox, me, n, wrong);
  // Nobody sends the next replay's halo or message (or signal) before its receiver has checked and reset.
  (void) symm::barrier_all(capture_stream, everyone);
  cudaGraph_t graph;
  check(cudaStreamEndCapture(capture_stream, &graph), "cudaStreamEndCapture");
  cudaGraphExec_t exec;
  check(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
  // A graph's first launch uploads it, and an upload may wait for the context's running kernels: with PEs that share
  // a context, a PE uploading while a peer's replay waits for it would never finish. Upload first, on every PE.
  check(cudaGraphUpload(exec, launch_stream), "cudaGraphUpload");
  check(cudaStreamSynchronize(launch_stream), "cudaGraphUpload");
  world.barrier();

  // Replayed on another stream than the one it was recorded on; the host queues every replay and waits once.
  for (int r = 0; r < steps; ++r)
    check(cudaGraphLaunch(exec, launch_stream), "cudaGraphLaunch");
  check(cudaStreamSynchronize(launch_stream), "the replays");

  std::uint64_t steps_done = 0;
  unsigned long long wrong_values = 0;
  check(cudaMemcpy(&steps_done, step, sizeof(steps_done), cudaMemcpyDeviceToHost), "cudaMemcpy");
  check(cudaMemcpy(&wrong_values, wrong, sizeof(wrong_values), cudaMemcpyDeviceToHost), "cudaMemcpy");
  const bool correct = wrong_values == 0 && steps_done == static_cast<std::uint64_t>(steps);
  if (!correct) {
    std::fprintf(stderr, "graph_step_gpu: PE %d: %llu values were wrong, %llu of %d steps ran\n", me, wrong_values,
                 static_cast<unsigned long long>(steps_done), steps);
  }
  symm::array<int> ok(world, static_cast<std::size_t>(n));
  symm::remote(ok, 0)[static_cast<std::size_t>(me)] = correct ? 1 : 0;
  world.barrier();
  int failures = 0;
  if (me == 0) {
    for (int v : std::vector<int>(symm::remote(ok, 0)))
      failures += v == 1 ? 0 : 1;
    if (failures == 0) {
      fmt::print("graph_step: {} PEs, {} steps (halo + barrier + allreduce + put_signal): every step correct\n", n,
                 steps);
    } else {
      fmt::print("graph_step: {} of {} PEs received wrong values\n", failures, n);
    }
  }
  check(cudaGraphExecDestroy(exec), "cudaGraphExecDestroy");
  check(cudaGraphDestroy(graph), "cudaGraphDestroy");
  check(cudaStreamDestroy(capture_stream), "cudaStreamDestroy");
  check(cudaStreamDestroy(launch_stream), "cudaStreamDestroy");
  check(cudaFree(step), "cudaFree");
  check(cudaFree(wrong), "cudaFree");
  world.barrier();
  return correct && failures == 0 ? 0 : 1;
}
