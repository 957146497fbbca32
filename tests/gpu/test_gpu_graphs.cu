// Stream-ordered synchronisation (symm/stream_sync.hpp) and CUDA graphs: quiet, team barriers and signal waits on a
// stream order a step without the host waiting; a step of stream forms recorded by stream capture and replayed a
// thousand times gives the right result at every replay; a recorded user kernel's symm views are parameters that an
// instantiated graph can swap (cudaGraphExecKernelNodeSetParams); what cannot be recorded says so. PEs as processes and
// as threads; every value checked on the device against what each replay must produce.
#include "gpu_support.cuh"

#if __has_include(<catch2/catch_test_macros.hpp>)
#  include <catch2/catch_test_macros.hpp>
#else
#  include <catch2/catch.hpp>
#endif

#include <chrono>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

namespace {

//! Element i of PE pe's data at step `step`: any PE can compute any PE's value.
__host__ __device__ std::uint64_t value_of(int pe, std::uint64_t step, std::size_t i) {
  return step * 1000003u + static_cast<std::uint64_t>(pe) * 7919u + i;
}

__global__ void fill_step(std::uint64_t* data, std::size_t n, int pe, std::uint64_t step) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    data[i] = value_of(pe, step, i);
}

__global__ void count_wrong(const std::uint64_t* data, std::size_t n, int pe, std::uint64_t step, unsigned* errors) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    if (data[i] != value_of(pe, step, i)) atomicAdd(errors, 1u);
}

//! A replayed step's first kernel: the step number lives in device memory and advances at every replay.
__global__ void begin_replayed_step(std::uint64_t* step, std::uint64_t* data, std::size_t n, int pe) {
  __shared__ std::uint64_t s;
  if (threadIdx.x == 0) s = *step + 1;
  __syncthreads();
  for (std::size_t i = threadIdx.x; i < n; i += blockDim.x)
    data[i] = value_of(pe, s, i);
  __syncthreads();
  if (threadIdx.x == 0) *step = s;
}

//! A replayed step's check: the halo and the piped rows came from `left`, `sum` is the allreduce over all PEs.
__global__ void
check_replayed_step(const std::uint64_t* step, const std::uint64_t* halo, const std::uint64_t* piped, std::size_t h,
                    const std::uint64_t* sum, std::size_t n, int left, int n_pes, unsigned* errors) {
  const std::uint64_t s = *step;
  for (std::size_t i = threadIdx.x; i < n; i += blockDim.x) {
    std::uint64_t want = 0;
    for (int k = 0; k < n_pes; ++k)
      want += value_of(k, s, i);
    if (sum[i] != want) atomicAdd(errors, 1u);
    if (i < h && (halo[i] != value_of(left, s, i) || piped[i] != value_of(left, s, i))) atomicAdd(errors, 1u);
  }
}

//! A user kernel with symm views as parameters: element i of the right neighbour's `dst` becomes value + i.
__global__ void store_to_right(symm::array_ref<std::uint64_t> dst, int right, std::uint64_t value) {
  for (std::size_t i = threadIdx.x; i < dst.size(); i += blockDim.x)
    symm::remote(dst, right)[i] = value + i;
}

//! Counts the elements of this PE's `dst` that are not value + i.
__global__ void count_not_stored(symm::array_ref<std::uint64_t> dst, std::uint64_t value, unsigned* errors) {
  for (std::size_t i = threadIdx.x; i < dst.size(); i += blockDim.x)
    if (dst.local()[i] != value + i) atomicAdd(errors, 1u);
}

//! The kernel node of `graph` that launches `kernel` (exactly one).
cudaGraphNode_t kernel_node_of(cudaGraph_t graph, const void* kernel) {
  std::size_t count = 0;
  GPU_CHECK(cudaGraphGetNodes(graph, nullptr, &count));
  std::vector<cudaGraphNode_t> nodes(count);
  GPU_CHECK(cudaGraphGetNodes(graph, nodes.data(), &count));
  cudaGraphNode_t found = nullptr;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type;
    GPU_CHECK(cudaGraphNodeGetType(node, &type));
    if (type != cudaGraphNodeTypeKernel) continue;
    cudaKernelNodeParams params{};
    GPU_CHECK(cudaGraphKernelNodeGetParams(node, &params));
    if (params.func != kernel) continue;
    if (found != nullptr) throw std::runtime_error("the graph launches the kernel twice");
    found = node;
  }
  if (found == nullptr) throw std::runtime_error("the graph does not launch the kernel");
  return found;
}

//! Points kernel node `node` of `exec` at new arguments, keeping its launch shape.
template <class... Args>
void set_kernel_arguments(cudaGraphExec_t exec, cudaGraphNode_t node, Args... args) {
  cudaKernelNodeParams params{};
  GPU_CHECK(cudaGraphKernelNodeGetParams(node, &params));
  void* pointers[] = {&args...};
  params.kernelParams = pointers;
  params.extra = nullptr;
  GPU_CHECK(cudaGraphExecKernelNodeSetParams(exec, node, &params));
}

} // namespace

TEST_CASE("quiet, team barriers and signal waits on a stream order a ring exchange without the host, over overlapping "
          "teams too",
          "[gpu][stream]") {
  REQUIRE_NOTHROW(symm_gpu_test::on_gpu_pes(4, [](symm::world& world) {
    const int me = world.my_pe(), n = world.n_pes(), right = (me + 1) % n, left = (me + n - 1) % n;
    constexpr std::size_t count = 1 << 16;
    constexpr int steps = 40;
    symm::array<std::uint64_t> src(world, count), dst(world, count), piped(world, count);
    symm::signal ready(world), taken(world);
    unsigned* errors = nullptr;
    GPU_CHECK(cudaMalloc(&errors, 3 * sizeof(unsigned)));
    symm_gpu_test::fill_now(errors, 0, 3 * sizeof(unsigned));
    cudaStream_t s;
    GPU_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    world.barrier(); // every PE's CUDA set-up is done before any waiting kernel runs (gpu_support.cuh)

    // Barriers: put into the right neighbour's dst, barrier, check what the left one put, sync (so that nobody
    // overwrites a dst before its owner checked it). Without the barriers the checks would read stale steps. A team of
    // more than collective_flags::inline_pes PEs gives the barrier kernel no flag addresses in its parameters: it
    // reads the peer table. Even steps launch that form of the kernel (with the flags symm::barrier_all would pass,
    // less the inline addresses), mixed with symm::barrier_all's, on the same counts.
    const auto table_flags_of = [&](const symm::team_ref& t) {
      auto flags = symm::detail::collective_flags::of(t, world.state()->collective_flags_offset());
      flags.inlined = false;
      return flags;
    };
    const auto table_barrier = [&](const symm::team_ref& t) {
      symm::detail::stream_barrier_kernel<symm::team_ref>
          <<<1, symm::detail::stream_barrier_threads, 0, s>>>(t, table_flags_of(t));
    };
    const symm::team_ref world_ref = world.team();
    for (int step = 1; step <= steps; ++step) {
      fill_step<<<64, 256, 0, s>>>(src.local().data(), count, me, step);
      (void) symm::put(s, symm::remote(dst, right), src.local());
      (void) symm::quiet(s);
      if (step % 2 == 0 && !world_ref.rma_peer()) {
        table_barrier(world_ref);
      } else {
        (void) symm::barrier_all(s, world.team());
      }
      count_wrong<<<64, 256, 0, s>>>(dst.local().data(), count, left, step, errors);
      (void) symm::sync_all(s, world.team());
    }
    // Signals: each step's rows go to the right neighbour with put_signal; the receiver's stream waits for them, checks
    // them and acknowledges with an empty put_signal, which the sender's stream waits for before the next step. Odd
    // PEs enqueue late, so that the waits do wait.
    for (int step = 1; step <= steps; ++step) {
      if (me % 2 == 1 && step % 8 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      if (step > 1) (void) symm::signal_wait_until(s, taken, symm::cmp::ge, step - 1);
      fill_step<<<64, 256, 0, s>>>(src.local().data(), count, me, 100 + step);
      (void) symm::put_signal(s, symm::remote(piped, right), src.local(), symm::remote(ready, right), step,
                              symm::signal_op::set);
      (void) symm::signal_wait_until(s, ready, symm::cmp::ge, step);
      count_wrong<<<64, 256, 0, s>>>(piped.local().data(), count, left, 100 + step, errors + 1);
      (void) symm::put_signal(s, symm::remote(piped, left).first(0), std::span<const std::uint64_t>{},
                              symm::remote(taken, left), step, symm::signal_op::set);
    }
    // Overlapping teams on one stream (the rows and columns of split_2d, then the world): their barriers count on the
    // same flags, per pair of PEs, so they may follow each other in any order the PEs share. Each step puts into the
    // next PE of my row (into dst), then of my column (into piped); each team's barrier orders the check of what the
    // previous PE of that team put, and its closing sync (the team's, or the world's at even steps) the next put.
    symm::team everyone = world.team();
    auto [row, column] = everyone.split_2d(2);
    (void) symm::barrier_all(s, world.team()); // every PE has checked the signal steps' piped rows
    for (int step = 1; step <= steps; ++step) {
      for (auto [t, into] : {std::pair{&row, &dst}, std::pair{&column, &piped}}) {
        const int size = t->n_pes(), at = t->my_pe();
        const int next = t->world_pe((at + 1) % size), previous = t->world_pe((at + size - 1) % size);
        fill_step<<<64, 256, 0, s>>>(src.local().data(), count, me, 200 + step);
        (void) symm::put(s, symm::remote(*into, next), src.local());
        // The column (world PEs at a stride of 2) takes the table form at odd steps: team and world numbers differ.
        if (t == &column && step % 2 == 1 && !symm::team_ref(column).rma_peer()) table_barrier(column);
        else (void) symm::barrier_all(s, *t);
        count_wrong<<<64, 256, 0, s>>>(into->local().data(), count, previous, 200 + step, errors + 2);
        const symm::team& closing = step % 2 == 0 ? everyone : *t;
        (void) symm::sync_all(s, closing);
      }
    }
    symm::barrier_all(s, world.team()).wait();
    const auto counted = symm_gpu_test::host_copy_of(errors, 3);
    PE_REQUIRE_EQ(counted[0], 0u);
    PE_REQUIRE_EQ(counted[1], 0u);
    PE_REQUIRE_EQ(counted[2], 0u);
    GPU_CHECK(cudaStreamDestroy(s));
    GPU_CHECK(cudaFree(errors));
    world.barrier();
  }));
}

TEST_CASE("a step of stream forms captured into a CUDA graph is right at each of 1000 replays", "[gpu][graph]") {
  for (const int pes : {2, 4}) {
    CAPTURE(pes);
    REQUIRE_NOTHROW(symm_gpu_test::on_gpu_pes(pes, [](symm::world& world) {
      const int me = world.my_pe(), n = world.n_pes(), right = (me + 1) % n, left = (me + n - 1) % n;
      constexpr std::size_t count = 4096, halo_count = 256;
      constexpr int replays = 1000;
      symm::array<std::uint64_t> data(world, count), sum(world, count), halo(world, halo_count),
          piped(world, halo_count);
      symm::signal arrived(world);
      std::uint64_t* step = nullptr;
      unsigned* errors = nullptr;
      GPU_CHECK(cudaMalloc(&step, sizeof(std::uint64_t)));
      GPU_CHECK(cudaMalloc(&errors, sizeof(unsigned)));
      symm_gpu_test::fill_now(step, 0, sizeof(std::uint64_t));
      symm_gpu_test::fill_now(errors, 0, sizeof(unsigned));
      cudaStream_t capture_stream, launch_stream;
      GPU_CHECK(cudaStreamCreateWithFlags(&capture_stream, cudaStreamNonBlocking));
      GPU_CHECK(cudaStreamCreateWithFlags(&launch_stream, cudaStreamNonBlocking));
      world.barrier();

      // The step, recorded once: halo exchange, barrier, allreduce, a piped put_signal and its wait (the signal reset
      // after it, since the recorded value 1 is stored again at every replay), the check, and a closing barrier.
      // Thread-local mode: with PEs as threads of one process, a global-mode capture in one thread would forbid the
      // others' host waits (CUDA's rule). The errors case below captures in global mode.
      GPU_CHECK(cudaStreamBeginCapture(capture_stream, cudaStreamCaptureModeThreadLocal));
      begin_replayed_step<<<1, 256, 0, capture_stream>>>(step, data.local().data(), count, me);
      (void) symm::put(capture_stream, symm::remote(halo, right), data.local().first(halo_count));
      (void) symm::barrier_all(capture_stream, world.team());
      (void) symm::allreduce(capture_stream, world.team(), sum, data, symm::plus{});
      (void) symm::put_signal(capture_stream, symm::remote(piped, right), data.local().first(halo_count),
                              symm::remote(arrived, right), 1, symm::signal_op::set);
      (void) symm::signal_wait_until(capture_stream, arrived, symm::cmp::eq, 1);
      GPU_CHECK(cudaMemsetAsync(arrived.ref().local_address(), 0, sizeof(std::uint64_t), capture_stream));
      check_replayed_step<<<1, 256, 0, capture_stream>>>(
          step, halo.local().data(), piped.local().data(), halo_count, sum.local().data(), count, left, n, errors);
      (void) symm::barrier_all(capture_stream, world.team());
      cudaGraph_t graph;
      GPU_CHECK(cudaStreamEndCapture(capture_stream, &graph));
      cudaGraphExec_t exec;
      GPU_CHECK(cudaGraphInstantiate(&exec, graph, 0));
      // The first launch of a graph uploads it, which may wait for the context's running kernels: with PEs as threads
      // (one context) a PE uploading while a peer's replay waits for it would never finish. Upload first, everywhere.
      GPU_CHECK(cudaGraphUpload(exec, launch_stream));
      GPU_CHECK(cudaStreamSynchronize(launch_stream));
      world.barrier();

      // Replayed on another stream than the one it was captured on.
      for (int r = 0; r < replays; ++r)
        GPU_CHECK(cudaGraphLaunch(exec, launch_stream));
      GPU_CHECK(cudaStreamSynchronize(launch_stream));
      const std::uint64_t steps_done = symm_gpu_test::host_copy_of(step, 1)[0];
      const unsigned wrong = symm_gpu_test::host_copy_of(errors, 1)[0];
      PE_REQUIRE_EQ(steps_done, std::uint64_t{replays});
      PE_REQUIRE_EQ(wrong, 0u);
      // The same stream forms, eagerly, after the replays: the flags the graph advanced are where eager calls expect.
      (void) symm::barrier_all(launch_stream, world.team());
      symm::allreduce(launch_stream, world.team(), sum, data, symm::plus{}).wait();
      world.barrier();
      GPU_CHECK(cudaGraphExecDestroy(exec));
      GPU_CHECK(cudaGraphDestroy(graph));
      GPU_CHECK(cudaStreamDestroy(capture_stream));
      GPU_CHECK(cudaStreamDestroy(launch_stream));
      GPU_CHECK(cudaFree(step));
      GPU_CHECK(cudaFree(errors));
      world.barrier();
    }));
  }
}

TEST_CASE("a recorded kernel's symm views are parameters that cudaGraphExecKernelNodeSetParams can replace",
          "[gpu]["
          "graph]") {
  REQUIRE_NOTHROW(symm_gpu_test::on_gpu_pes(2, [](symm::world& world) {
    const int me = world.my_pe(), n = world.n_pes(), right = (me + 1) % n;
    constexpr std::size_t count = 1024;
    constexpr int replays = 5;
    symm::array<std::uint64_t> first(world, count), second(world, count);
    unsigned* errors = nullptr;
    GPU_CHECK(cudaMalloc(&errors, sizeof(unsigned)));
    symm_gpu_test::fill_now(errors, 0, sizeof(unsigned));
    symm_gpu_test::fill_now(first.local().data(), 0, first.size_bytes());
    symm_gpu_test::fill_now(second.local().data(), 0, second.size_bytes());
    cudaStream_t s;
    GPU_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    world.barrier();

    // Store into the right neighbour, barrier, check what the left one stored, barrier (before the next replay stores).
    GPU_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    store_to_right<<<1, 256, 0, s>>>(first, right, 1000);
    (void) symm::barrier_all(s, world.team());
    count_not_stored<<<1, 256, 0, s>>>(first, 1000, errors);
    (void) symm::barrier_all(s, world.team());
    cudaGraph_t graph;
    GPU_CHECK(cudaStreamEndCapture(s, &graph));
    cudaGraphExec_t exec;
    GPU_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    GPU_CHECK(cudaGraphUpload(exec, s)); // before any PE's replay waits (test above)
    GPU_CHECK(cudaStreamSynchronize(s));
    world.barrier();
    for (int r = 0; r < replays; ++r)
      GPU_CHECK(cudaGraphLaunch(exec, s));
    GPU_CHECK(cudaStreamSynchronize(s));
    const unsigned wrong_first = symm_gpu_test::host_copy_of(errors, 1)[0];
    PE_REQUIRE_EQ(wrong_first, 0u);

    // The same graph, its two user kernels pointed at another symmetric array and value: no new capture.
    set_kernel_arguments(exec, kernel_node_of(graph, reinterpret_cast<const void*>(store_to_right)),
                         symm::array_ref<std::uint64_t>(second), right, std::uint64_t{2000});
    set_kernel_arguments(exec, kernel_node_of(graph, reinterpret_cast<const void*>(count_not_stored)),
                         symm::array_ref<std::uint64_t>(second), std::uint64_t{2000}, errors);
    world.barrier(); // every PE's graph is updated before any PE launches it
    for (int r = 0; r < replays; ++r)
      GPU_CHECK(cudaGraphLaunch(exec, s));
    GPU_CHECK(cudaStreamSynchronize(s));
    const unsigned wrong_second = symm_gpu_test::host_copy_of(errors, 1)[0];
    PE_REQUIRE_EQ(wrong_second, 0u);
    const std::vector<std::uint64_t> kept = symm_gpu_test::local_to_host(first);
    const std::vector<std::uint64_t> stored = symm_gpu_test::local_to_host(second);
    for (std::size_t i = 0; i < count; i += 97) {
      PE_REQUIRE_EQ(kept[i], 1000 + i);
      PE_REQUIRE_EQ(stored[i], 2000 + i);
    }
    GPU_CHECK(cudaGraphExecDestroy(exec));
    GPU_CHECK(cudaGraphDestroy(graph));
    GPU_CHECK(cudaStreamDestroy(s));
    GPU_CHECK(cudaFree(errors));
    world.barrier();
  }));
}

TEST_CASE("what a CUDA graph cannot record says so: a recorded operation's future, a host barrier, bad teams",
          "[gpu][graph][errors]") {
  REQUIRE_NOTHROW(symm::launch(
      2,
      [](symm::world& world) {
        const int me = world.my_pe(), other = 1 - me;
        symm::array<float> a(world, 64), b(world, 64);
        cudaStream_t s;
        GPU_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        world.barrier();

        // A future of a recorded operation has nothing to wait for: ready() and wait() say so and leave the capture
        // intact.
        GPU_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
        auto recorded = symm::put(s, symm::remote(b, other), a.local());
        PE_REQUIRE_ERROR((void) recorded.ready(), symm::errc::unsupported, "future::ready()");
        PE_REQUIRE_ERROR(recorded.wait(), symm::errc::unsupported, "symm::put(stream, ...)",
                         "recorded into a CUDA graph", fmt::format("PE {}", me));
        auto quiet = symm::quiet(s);
        PE_REQUIRE_ERROR(quiet.wait(), symm::errc::unsupported, "symm::quiet(stream)");
        cudaGraph_t graph = nullptr;
        GPU_CHECK(cudaStreamEndCapture(s, &graph)); // still a valid capture: nothing above touched it
        GPU_CHECK(cudaGraphDestroy(graph));

        // A host barrier inside a capture would not be recorded: CUDA refuses its stream synchronisation, and symm
        // names the call and the capture. Every PE refuses alike, before any PE waits for another.
        GPU_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
        (void) symm::put(s, symm::remote(b, other), a.local());
        PE_REQUIRE_ERROR(symm::barrier_all(), symm::errc::cuda, "symm::barrier_all()", "stream capture",
                         fmt::format("PE {}", me));
        graph = nullptr;
        CHECK(cudaStreamEndCapture(s, &graph) == cudaErrorStreamCaptureInvalidated);
        (void) cudaGetLastError();
        if (graph != nullptr) GPU_CHECK(cudaGraphDestroy(graph));

        // Global capture mode (PEs are processes here): the same forms record and replay.
        symm::array<float> sum(world, 64);
        GPU_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
        (void) symm::put(s, symm::remote(b, other), a.local());
        (void) symm::barrier_all(s, world.team());
        (void) symm::allreduce(s, world.team(), sum, b, symm::plus{});
        GPU_CHECK(cudaStreamEndCapture(s, &graph));
        cudaGraphExec_t exec;
        GPU_CHECK(cudaGraphInstantiate(&exec, graph, 0));
        GPU_CHECK(cudaGraphUpload(exec, s));
        const std::vector<float> ones(64, 1.0f);
        symm_gpu_test::host_to_local(a, ones);
        GPU_CHECK(cudaStreamSynchronize(s));
        world.barrier();
        for (int r = 0; r < 10; ++r)
          GPU_CHECK(cudaGraphLaunch(exec, s));
        GPU_CHECK(cudaStreamSynchronize(s));
        PE_REQUIRE(symm_gpu_test::local_to_host(sum) == std::vector<float>(64, 2.0f));
        GPU_CHECK(cudaGraphExecDestroy(exec));
        GPU_CHECK(cudaGraphDestroy(graph));

        // Bad teams, and a world whose heap is host memory.
        PE_REQUIRE_ERROR((void) symm::barrier_all(s, symm::team{}), symm::errc::invalid_argument, "invalid team");
        symm::team first = world.team().split_strided(0, 1, 1);
        if (me == 1) {
          PE_REQUIRE_ERROR((void) symm::sync_all(s, first), symm::errc::invalid_argument, "symm::sync_all(stream");
        }
        // Afterwards the stream forms work as before.
        symm::put(s, symm::remote(b, other), a.local()).wait();
        symm::barrier_all(s, world.team()).wait();
        GPU_CHECK(cudaStreamDestroy(s));
        world.barrier();
      },
      {.world = symm_gpu_test::gpu_options()}));
  REQUIRE_NOTHROW(symm::launch(
      2,
      [](symm::world& world) {
        symm::signal sig(world);
        PE_REQUIRE_ERROR((void) symm::signal_wait_until(cudaStream_t{}, sig, symm::cmp::eq, 1), symm::errc::unsupported,
                         "symm::signal_wait_until(stream, ...)", "host backend");
        PE_REQUIRE_ERROR((void) symm::barrier_all(cudaStream_t{}, world.team()), symm::errc::unsupported,
                         "symm::barrier_all(stream, team)");
        world.barrier();
      },
      {.world = {.backend = symm::backend::host}}));
}
