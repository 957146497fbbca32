// symm::alltoallv on a stream: counts that a kernel computes (a router), rows that arrive contiguous by source in
// team order, eager and recorded into a CUDA graph; rows past dst's capacity or past a sender's src are never moved,
// and the future names the PEs, the count and the capacity. Every value checked on the device at every step. On the
// nvshmem backend with every peer reached through NVSHMEM RMA (SYMM_NVSHMEM_RMA=1) the form says it is unsupported.
#include "gpu_support.cuh"

#if __has_include(<catch2/catch_test_macros.hpp>)
#  include <catch2/catch_test_macros.hpp>
#else
#  include <catch2/catch.hpp>
#endif

#include <symm/alltoallv.hpp>

#include <cooperative_groups.h>

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

namespace {

//! Rows PE `from` sends PE `to` at step `step`: 0 to 3, every pair differently.
__host__ __device__ std::uint64_t rows_sent(int from, int to, std::uint64_t step) {
  return (static_cast<std::uint64_t>(from) * 3 + static_cast<std::uint64_t>(to) + step) % 4;
}

//! Element e of row j of those PE `from` sends PE `to` at step `step`.
template <class T>
__host__ __device__ T element(int from, int to, std::uint64_t j, std::size_t e, std::uint64_t step) {
  return static_cast<T>(
      from * 100000 + to * 10000 + static_cast<int>(j) * 100 + static_cast<int>(e) + static_cast<int>(step % 7) * 1000);
}

//! The router: this PE's counts for each team PE and its rows for them, PE 0's first. `step` in device memory, so
//! that a recorded router computes a new step at each replay (advance: this kernel counts the steps).
template <class T>
__global__ void route(std::uint64_t* step, bool advance, symm::array_ref<T> src, symm::array_ref<std::uint64_t> counts,
                      int me, int n, std::size_t row_length) {
  __shared__ std::uint64_t s;
  if (threadIdx.x == 0) s = *step + (advance ? 1 : 0);
  __syncthreads();
  std::uint64_t row = 0;
  for (int to = 0; to < n; ++to) {
    const std::uint64_t rows = rows_sent(me, to, s);
    if (threadIdx.x == 0) counts.local()[to] = rows;
    for (std::uint64_t j = 0; j < rows; ++j, ++row)
      for (std::size_t e = threadIdx.x; e < row_length; e += blockDim.x)
        src.local()[row * row_length + e] = element<T>(me, to, j, e, s);
  }
  __syncthreads();
  if (threadIdx.x == 0 && advance) *step = s;
}

//! Counts the wrong recv_counts and rows of this PE's dst at the current step.
template <class T>
__global__ void check_arrivals(const std::uint64_t* step, symm::array_ref<T> dst, const std::uint64_t* recv_counts,
                               int me, int n, std::size_t row_length, unsigned* errors) {
  const std::uint64_t s = *step;
  std::uint64_t row = 0;
  for (int from = 0; from < n; ++from) {
    const std::uint64_t rows = rows_sent(from, me, s);
    if (threadIdx.x == 0 && recv_counts[from] != rows) atomicAdd(errors, 1u);
    for (std::uint64_t j = 0; j < rows; ++j, ++row)
      for (std::size_t e = threadIdx.x; e < row_length; e += blockDim.x)
        if (dst.local()[row * row_length + e] != element<T>(from, me, j, e, s)) atomicAdd(errors, 1u);
  }
}

//! Whether this PE reaches a PE of the world only through NVSHMEM RMA (nvshmem backend, SYMM_NVSHMEM_RMA=1).
bool any_rma_peer(const symm::world& w) {
  for (int pe = 0; pe < w.n_pes(); ++pe)
    if (!w.state()->mapped(pe)) return true;
  return false;
}

//! Steps of one element type and row length: 3 eager, then 50 replays of the step recorded into a graph.
template <class T>
void exchange_rows(symm::world& world, std::size_t row_length) {
  const int me = world.my_pe(), n = world.n_pes();
  const std::size_t capacity_rows = 4 * static_cast<std::size_t>(n); // at most 3 rows from each PE
  symm::array<T> src(world, capacity_rows * row_length), dst(world, capacity_rows * row_length);
  symm::array<std::uint64_t> send_counts(world, static_cast<std::size_t>(n));
  std::uint64_t *recv_counts = nullptr, *step = nullptr;
  unsigned* errors = nullptr;
  GPU_CHECK(cudaMalloc(&recv_counts, static_cast<std::size_t>(n) * sizeof(std::uint64_t)));
  GPU_CHECK(cudaMalloc(&step, sizeof(std::uint64_t)));
  GPU_CHECK(cudaMalloc(&errors, sizeof(unsigned)));
  symm_gpu_test::fill_now(step, 0, sizeof(std::uint64_t));
  symm_gpu_test::fill_now(errors, 0, sizeof(unsigned));
  cudaStream_t s;
  GPU_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const std::span<std::uint64_t> received(recv_counts, static_cast<std::size_t>(n));
  symm::team everyone = world.team();
  world.barrier();

  if (any_rma_peer(world)) {
    PE_REQUIRE_ERROR((void) symm::alltoallv(s, everyone, dst, received, src, send_counts, row_length),
                     symm::errc::unsupported, "NVSHMEM RMA");
  } else {
    // The step: route, exchange, check. The router may rewrite src and the counts at once: this PE's previous
    // alltoallv kernel has ended, and with it every PE's reading of them.
    const auto enqueue_step = [&](bool advance) {
      route<T><<<1, 128, 0, s>>>(step, advance, src, send_counts, me, n, row_length);
      auto done = symm::alltoallv(s, everyone, dst, received, src, send_counts, row_length);
      check_arrivals<T><<<1, 128, 0, s>>>(step, dst, recv_counts, me, n, row_length, errors);
      return done;
    };
    for (int eager = 0; eager < 3; ++eager) {
      auto done = enqueue_step(true);
      done.wait();
    }
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    GPU_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    (void) enqueue_step(true);
    GPU_CHECK(cudaStreamEndCapture(s, &graph));
    GPU_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    GPU_CHECK(cudaGraphUpload(exec, s)); // before any PE's replay waits for this one (test_gpu_graphs.cu)
    GPU_CHECK(cudaStreamSynchronize(s));
    world.barrier();
    constexpr int replays = 50;
    for (int r = 0; r < replays; ++r)
      GPU_CHECK(cudaGraphLaunch(exec, s));
    GPU_CHECK(cudaStreamSynchronize(s));
    // After the replays, an eager step again: the status words and flags are where an eager call expects them.
    enqueue_step(false).wait();
    const std::uint64_t steps_done = symm_gpu_test::host_copy_of(step, 1)[0];
    const unsigned wrong = symm_gpu_test::host_copy_of(errors, 1)[0];
    PE_REQUIRE_EQ(steps_done, std::uint64_t{3 + replays});
    PE_REQUIRE_EQ(wrong, 0u);
    GPU_CHECK(cudaGraphExecDestroy(exec));
    GPU_CHECK(cudaGraphDestroy(graph));
  }
  world.barrier();
  GPU_CHECK(cudaStreamDestroy(s));
  GPU_CHECK(cudaFree(recv_counts));
  GPU_CHECK(cudaFree(step));
  GPU_CHECK(cudaFree(errors));
  world.barrier();
}

//! The device form, one block per PE: `steps` times route (into src and send_counts), exchange, check, all in one
//! kernel. `tight`: dst holds one row less than arrives at the last step, which must be reported, not written past.
template <class T>
__global__ void exchange_in_kernel(
    symm::team_ref t, symm::array_ref<T> src, symm::array_ref<T> dst, symm::array_ref<std::uint64_t> send_counts,
    std::uint64_t* recv_counts, std::size_t row_length, int steps, unsigned* errors, symm::alltoallv_result* last) {
  const auto block = cooperative_groups::this_thread_block();
  const int me = t.my_pe(), n = t.n_pes();
  for (int step = 1; step <= steps; ++step) {
    const auto s = static_cast<std::uint64_t>(step);
    std::uint64_t row = 0;
    for (int to = 0; to < n; ++to) {
      const std::uint64_t rows = rows_sent(me, to, s);
      if (threadIdx.x == 0) send_counts.local()[to] = rows;
      for (std::uint64_t j = 0; j < rows; ++j, ++row)
        for (std::size_t e = threadIdx.x; e < row_length; e += blockDim.x)
          src.local()[row * row_length + e] = element<T>(me, to, j, e, s);
    }
    const symm::alltoallv_result got = symm::alltoallv(block, t, dst, recv_counts, src, send_counts, row_length, 1);
    std::uint64_t arrived = 0, checked = 0;
    for (int from = 0; from < n; ++from) {
      const std::uint64_t rows = rows_sent(from, me, s);
      if (threadIdx.x == 0 && recv_counts[from] != rows) atomicAdd(errors, 1u);
      for (std::uint64_t j = 0; j < rows; ++j, ++arrived) {
        if ((arrived + 1) * row_length > dst.size()) continue; // did not fit: the result says so
        ++checked;
        for (std::size_t e = threadIdx.x; e < row_length; e += blockDim.x)
          if (dst.local()[arrived * row_length + e] != element<T>(from, me, j, e, s)) atomicAdd(errors, 1u);
      }
    }
    if (threadIdx.x == 0 && got.rows != checked) atomicAdd(errors, 1u);
    if (threadIdx.x == 0) *last = got;
    block.sync();
    symm::sync_all(block, t, 1); // every PE has checked its dst before the next step's exchange writes into it
  }
}

__global__ void set_counts(symm::array_ref<std::uint64_t> counts, std::uint64_t to_0, std::uint64_t to_1) {
  counts.local()[0] = to_0;
  counts.local()[1] = to_1;
}

__global__ void fill_rows(symm::array_ref<std::uint32_t> rows, std::uint32_t base) {
  for (std::size_t i = threadIdx.x; i < rows.size(); i += blockDim.x)
    rows.local()[i] = base + static_cast<std::uint32_t>(i);
}

} // namespace

TEST_CASE("alltoallv on a stream: counts from a router kernel, rows contiguous by source, eager and from a CUDA graph",
          "[gpu][alltoallv]") {
  for (const int pes : {2, 4}) {
    CAPTURE(pes);
    REQUIRE_NOTHROW(symm_gpu_test::on_gpu_pes(pes, [](symm::world& world) {
      exchange_rows<std::uint32_t>(world, 5); // 20-byte rows: no 16-byte vectors line up
      exchange_rows<float>(world, 8);
      exchange_rows<std::uint16_t>(world, 3);
    }));
  }
}

TEST_CASE("alltoallv from device code: one block per PE routes, exchanges and checks in one kernel; a dst too small "
          "is reported to the threads",
          "[gpu][alltoallv]") {
  REQUIRE_NOTHROW(symm_gpu_test::on_gpu_pes(4, [](symm::world& world) {
    if (any_rma_peer(world)) return; // traps by design there
    const int n = world.n_pes();
    constexpr std::size_t row = 5;
    constexpr int steps = 20;
    const std::size_t rows_max = 4 * static_cast<std::size_t>(n);
    for (const bool tight : {false, true}) {
      // Step `steps` sends this PE sum over k of rows_sent(k, me, steps) rows; `tight` makes dst one row smaller.
      std::uint64_t last_rows = 0;
      for (int k = 0; k < n; ++k)
        last_rows += rows_sent(k, world.my_pe(), steps);
      const std::size_t dst_rows = tight ? static_cast<std::size_t>(last_rows) - 1 : rows_max;
      // Every PE's dst must have the same size: the smallest over the PEs when tight.
      symm::array<std::uint64_t> sizes(world, static_cast<std::size_t>(n));
      for (int k = 0; k < n; ++k)
        symm::remote(sizes, k)[static_cast<std::size_t>(world.my_pe())] = dst_rows;
      world.barrier();
      std::size_t common_rows = rows_max;
      for (std::uint64_t v : symm_gpu_test::local_to_host(sizes))
        common_rows = std::min<std::size_t>(common_rows, static_cast<std::size_t>(v));
      symm::array<std::uint32_t> src(world, rows_max * row), dst(world, common_rows * row);
      symm::array<std::uint64_t> send_counts(world, static_cast<std::size_t>(n));
      std::uint64_t* recv_counts = nullptr;
      unsigned* errors = nullptr;
      symm::alltoallv_result* last = nullptr;
      GPU_CHECK(cudaMalloc(&recv_counts, static_cast<std::size_t>(n) * sizeof(std::uint64_t)));
      GPU_CHECK(cudaMalloc(&errors, sizeof(unsigned)));
      GPU_CHECK(cudaMalloc(&last, sizeof(symm::alltoallv_result)));
      symm_gpu_test::fill_now(errors, 0, sizeof(unsigned));
      symm::team everyone = world.team();
      cudaStream_t s;
      GPU_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      world.barrier();
      exchange_in_kernel<std::uint32_t>
          <<<1, 256, 0, s>>>(everyone, src, dst, send_counts, recv_counts, row, steps, errors, last);
      GPU_CHECK(cudaGetLastError());
      GPU_CHECK(cudaStreamSynchronize(s));
      GPU_CHECK(cudaStreamDestroy(s));
      const unsigned wrong = symm_gpu_test::host_copy_of(errors, 1)[0];
      const symm::alltoallv_result got = symm_gpu_test::host_copy_of(last, 1)[0];
      PE_REQUIRE_EQ(wrong, 0u);
      if (last_rows <= common_rows) {
        PE_REQUIRE(got.ok());
        PE_REQUIRE_EQ(got.rows, last_rows);
      } else {
        PE_REQUIRE(got.problem == symm::alltoallv_result::problem_kind::over_capacity);
        PE_REQUIRE_EQ(got.rows, std::uint64_t{common_rows});
        PE_REQUIRE_EQ(got.rows_of_room, std::uint64_t{common_rows});
      }
      world.barrier();
      GPU_CHECK(cudaFree(recv_counts));
      GPU_CHECK(cudaFree(errors));
      GPU_CHECK(cudaFree(last));
    }
  }));
}

TEST_CASE("alltoallv on a stream: rows past dst's capacity or past a sender's src are not moved, and the future says "
          "which PE sent how many",
          "[gpu][alltoallv][errors]") {
  REQUIRE_NOTHROW(symm_gpu_test::on_gpu_pes(2, [](symm::world& world) {
    const int me = world.my_pe();
    constexpr std::size_t row = 4;
    symm::array<std::uint32_t> src(world, 4 * row), dst(world, 3 * row), roomy(world, 8 * row);
    symm::array<std::uint64_t> send_counts(world, 2);
    std::uint64_t* recv_counts = nullptr;
    GPU_CHECK(cudaMalloc(&recv_counts, 2 * sizeof(std::uint64_t)));
    const std::span<std::uint64_t> received(recv_counts, 2);
    cudaStream_t s;
    GPU_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    symm::team everyone = world.team();
    std::vector<std::uint64_t> bad_counts_host(2, 0);
    world.barrier();
    if (any_rma_peer(world)) {
      world.barrier();
      GPU_CHECK(cudaStreamDestroy(s));
      GPU_CHECK(cudaFree(recv_counts));
      return;
    }

    // Two rows to each PE: 4 arrive, dst holds 3. The rows of PE 0 and the first of PE 1 land; the future names PE 1.
    fill_rows<<<1, 64, 0, s>>>(src, static_cast<std::uint32_t>(me) * 1000);
    set_counts<<<1, 1, 0, s>>>(send_counts, 2, 2);
    auto over = symm::alltoallv(s, everyone, dst, received, src, send_counts, row);
    PE_REQUIRE_ERROR(over.wait(), symm::errc::extent_mismatch, fmt::format("PE {}", me), "PE 1 sends 2 rows after 2",
                     "dst holds 3 rows of 4 elements");
    const std::vector<std::uint64_t> counted = symm_gpu_test::host_copy_of(recv_counts, 2);
    PE_REQUIRE(counted == std::vector<std::uint64_t>({2, 2}));
    const std::vector<std::uint32_t> landed = symm_gpu_test::local_to_host(dst);
    const std::size_t skip = static_cast<std::size_t>(me) * 2 * row; // the senders' rows for PE 1 follow those for 0
    for (std::size_t i = 0; i < 3 * row; ++i) {
      const std::uint32_t want =
          i < 2 * row ? static_cast<std::uint32_t>(skip + i) : 1000 + static_cast<std::uint32_t>(skip + i - 2 * row);
      PE_REQUIRE_EQ(landed[i], want);
    }
    // Reported once: the next call into a dst that holds everything completes cleanly.
    symm::alltoallv(s, everyone, roomy, received, src, send_counts, row).wait();
    world.barrier();

    // PE 0 claims 9 rows for PE 1, after 1 for itself: past its 4-row src. PE 1 moves none of them and names PE 0.
    if (me == 0) set_counts<<<1, 1, 0, s>>>(send_counts, 1, 9);
    else set_counts<<<1, 1, 0, s>>>(send_counts, 1, 1);
    auto past = symm::alltoallv(s, everyone, roomy, received, src, send_counts, row);
    if (me == 1) {
      PE_REQUIRE_ERROR(past.wait(), symm::errc::invalid_argument, "PE 1", "PE 0's send_counts give this PE 9 rows",
                       "past the 4 rows of 4 elements src holds");
    } else {
      past.wait();
    }
    world.barrier();

    // What each PE can see on the host at once.
    PE_REQUIRE_ERROR(
        (void) symm::alltoallv(s, everyone, dst, std::span<std::uint64_t>(bad_counts_host), src, send_counts, row),
        symm::errc::invalid_argument, "recv_counts", "not memory the GPU can write");
    PE_REQUIRE_ERROR((void) symm::alltoallv(s, everyone, dst, received, src, send_counts, 0),
                     symm::errc::invalid_argument, "the row length is 0");
    PE_REQUIRE_ERROR((void) symm::alltoallv(s, everyone, dst, received.first(1), src, send_counts, row),
                     symm::errc::invalid_argument, "recv_counts 1 elements", "team has 2 PEs");
    PE_REQUIRE_ERROR((void) symm::alltoallv(s, everyone, dst, received, src, send_counts, 5),
                     symm::errc::extent_mismatch, "whole rows of 5 elements");
    world.barrier();
    GPU_CHECK(cudaStreamDestroy(s));
    GPU_CHECK(cudaFree(recv_counts));
    world.barrier();
  }));
  REQUIRE_NOTHROW(symm::launch(
      2,
      [](symm::world& world) {
        symm::array<float> a(world, 8), b(world, 8);
        symm::array<std::uint64_t> counts(world, 2);
        std::vector<std::uint64_t> received(2);
        PE_REQUIRE_ERROR(
            (void) symm::alltoallv(cudaStream_t{}, world.team(), b, std::span<std::uint64_t>(received), a, counts, 1),
            symm::errc::unsupported, "host backend", "symm::alltoallv(team, ...)");
        world.barrier();
      },
      {.world = {.backend = symm::backend::host}}));
}
