// Teams in device code: team_ref in kernels, device barriers over a team's PEs — disjoint teams at once, overlapping
// teams on one channel, the world's barriers beside them, and one channel used by different teams one after another.
#include "gpu_support.cuh"

#if __has_include(<catch2/catch_test_macros.hpp>)
#  include <catch2/catch_test_macros.hpp>
#else
#  include <catch2/catch.hpp>
#endif

#include <cooperative_groups.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace cg = cooperative_groups;

namespace {

// Rounds of: put my round stamp into my slot on every team PE, team barrier, check every slot of the team holds this
// round's stamps, team sync (nobody writes round r + 1 before every team PE checked round r). `delay_ns` slows the
// team down, so that concurrent teams run at different speeds.
// `progress` (mapped host memory, or null) says how far the kernel got: 10 r + 1 before round r's barrier, 10 r + 2
// after it, readable by the host even after a trap ends the context.
__global__ void team_barrier_rounds(symm::array_ref<std::uint64_t> slots, symm::team_ref t, int rounds, int channel,
                                    unsigned delay_ns, unsigned* errors, unsigned* progress = nullptr) {
  auto block = cg::this_thread_block();
  const int me = t.my_pe(), n = t.n_pes();
  auto mark = [&](unsigned value) {
    if (progress != nullptr && block.thread_rank() == 0) {
      *reinterpret_cast<volatile unsigned*>(progress) = value;
      __threadfence_system();
    }
  };
  for (int r = 1; r <= rounds; ++r) {
    mark(10u * static_cast<unsigned>(r) + 1u);
    if (delay_ns != 0 && block.thread_rank() == 0) __nanosleep(delay_ns);
    for (int i = static_cast<int>(block.thread_rank()); i < n; i += static_cast<int>(block.num_threads())) {
      symm::remote(slots, t.world_pe(i))[static_cast<std::size_t>(me)] =
          static_cast<std::uint64_t>(r) * 1000 + static_cast<std::uint64_t>(t.world_my_pe());
    }
    symm::barrier_all(block, t, channel);
    mark(10u * static_cast<unsigned>(r) + 2u);
    for (int i = static_cast<int>(block.thread_rank()); i < n; i += static_cast<int>(block.num_threads())) {
      if (slots.local()[static_cast<std::size_t>(i)] !=
          static_cast<std::uint64_t>(r) * 1000 + static_cast<std::uint64_t>(t.world_pe(i))) {
        atomicAdd(errors, 1u);
      }
    }
    symm::sync_all(block, t, channel);
  }
}

// The same with the world's device barrier (world_ref), to run beside the team barriers.
__global__ void world_barrier_rounds(symm::array_ref<std::uint64_t> slots, symm::world_ref w, int rounds, int channel,
                                     unsigned* errors) {
  auto block = cg::this_thread_block();
  const int me = w.my_pe(), n = w.n_pes();
  for (int r = 1; r <= rounds; ++r) {
    for (int p = static_cast<int>(block.thread_rank()); p < n; p += static_cast<int>(block.num_threads())) {
      symm::remote(slots, p)[static_cast<std::size_t>(me)] = static_cast<std::uint64_t>(r) * 1000 + me;
    }
    symm::barrier_all(block, w, channel);
    for (int p = static_cast<int>(block.thread_rank()); p < n; p += static_cast<int>(block.num_threads())) {
      if (slots.local()[static_cast<std::size_t>(p)] != static_cast<std::uint64_t>(r) * 1000 + p) atomicAdd(errors, 1u);
    }
    symm::sync_all(block, w, channel);
  }
}

// What team_ref says in device code, written out for the host to compare with the host team.
__global__ void describe_team(symm::team_ref t, int* out) {
  out[0] = t.my_pe();
  out[1] = t.n_pes();
  out[2] = t.world_my_pe();
  for (int i = 0; i < t.n_pes(); ++i)
    out[3 + i] = t.world_pe(i);
}

struct gpu_counters {
  unsigned* device = nullptr;
  int count;
  explicit gpu_counters(int n) : count(n) {
    GPU_CHECK(cudaMalloc(&device, static_cast<std::size_t>(n) * sizeof(unsigned)));
    symm_gpu_test::fill_now(device, 0, static_cast<std::size_t>(n) * sizeof(unsigned));
  }
  gpu_counters(const gpu_counters&) = delete;
  gpu_counters& operator=(const gpu_counters&) = delete;
  ~gpu_counters() { cudaFree(device); }
  void require_zero(int pe) const {
    auto counted = symm_gpu_test::host_copy_of(device, static_cast<std::size_t>(count));
    for (int i = 0; i < count; ++i) {
      if (counted[static_cast<std::size_t>(i)] != 0) {
        throw std::runtime_error(
            fmt::format("PE {}: kernel {} counted {} wrong slots", pe, i, counted[static_cast<std::size_t>(i)]));
      }
    }
  }
};

//! Where each of a PE's kernels got to (team_barrier_rounds' `progress`), in mapped host memory: a failing wait names
//! the kernels that never started or stopped early, on every PE.
struct kernel_progress {
  unsigned* host = nullptr;
  unsigned* device = nullptr;
  int count;
  explicit kernel_progress(int n) : count(n) {
    GPU_CHECK(cudaHostAlloc(&host, static_cast<std::size_t>(n) * sizeof(unsigned), cudaHostAllocMapped));
    std::fill(host, host + n, 0u);
    GPU_CHECK(cudaHostGetDevicePointer(&device, host, 0));
  }
  kernel_progress(const kernel_progress&) = delete;
  kernel_progress& operator=(const kernel_progress&) = delete;
  ~kernel_progress() { cudaFreeHost(host); }
  void check(int pe, cudaError_t status) const {
    if (status == cudaSuccess) return;
    std::string where;
    for (int k = 0; k < count; ++k)
      where += fmt::format(" kernel {}: {}", k, host[k]);
    auto message = fmt::format("PE {}: {}; progress (10 round + 1 before its barrier, + 2 after):{}", pe,
                               cudaGetErrorString(status), where);
    std::fprintf(stderr, "%s\n", message.c_str()); // now: the job ends at the first PE's exception
    throw std::runtime_error(message);
  }
};

} // namespace

TEST_CASE("team_ref in a kernel says what the host team says", "[gpu][teams]") {
  REQUIRE_NOTHROW(symm_gpu_test::on_gpu_pes(4, [](symm::world& world) {
    auto [row, column] = world.team().split_2d(2);
    int* out = nullptr;
    GPU_CHECK(cudaMalloc(&out, 8 * sizeof(int)));
    for (const symm::team* t : {&row, &column}) {
      describe_team<<<1, 1>>>(*t, out);
      GPU_CHECK(cudaGetLastError());
      GPU_CHECK(cudaDeviceSynchronize());
      auto got = symm_gpu_test::host_copy_of(out, 3 + static_cast<std::size_t>(t->n_pes()));
      PE_REQUIRE_EQ(got[0], t->my_pe());
      PE_REQUIRE_EQ(got[1], t->n_pes());
      PE_REQUIRE_EQ(got[2], world.my_pe());
      for (int i = 0; i < t->n_pes(); ++i)
        PE_REQUIRE_EQ(got[3 + static_cast<std::size_t>(i)], t->world_pe(i));
    }
    GPU_CHECK(cudaFree(out));
    world.barrier();
  }));
}

TEST_CASE("device barriers of disjoint teams run at once and order puts", "[gpu][teams][barrier]") {
  for (int n : {4, 8}) {
    CAPTURE(n);
    REQUIRE_NOTHROW(symm_gpu_test::on_gpu_pes(n, [](symm::world& world) {
      const int me = world.my_pe(), n = world.n_pes();
      auto evens = world.team().split_strided(0, 2, n / 2);
      auto odds = world.team().split_strided(1, 2, n / 2);
      const symm::team& parity = me % 2 == 0 ? evens : odds;
      auto [pair, column] = world.team().split_2d(2); // pairs {0, 1}, {2, 3}, ...: one PE in common with `parity`
      symm::array<std::uint64_t> a(world, static_cast<std::size_t>(n));
      symm::array<std::uint64_t> b(world, static_cast<std::size_t>(n));
      symm::array<std::uint64_t> c(world, static_cast<std::size_t>(n));
      gpu_counters errors(3);
      cudaStream_t s1, s2, s3;
      GPU_CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
      GPU_CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
      GPU_CHECK(cudaStreamCreateWithFlags(&s3, cudaStreamNonBlocking));
      world.barrier(); // arrays, counters and streams are ready everywhere before any put (gpu_support.cuh)
      // The even and the odd team at once on team channel 1, the odd one slower and with fewer threads. Beside them,
      // on team channel 1 too, the pairs: they share one PE with each parity team, and barriers are counted per pair
      // of PEs, so they may. And the world's own barrier on world channel 1, whose flags are not the teams'.
      team_barrier_rounds<<<1, me % 2 == 0 ? 128 : 32, 0, s1>>>(
          a, parity, 200, 1, me % 2 == 0 ? 0u : 2000u, errors.device);
      team_barrier_rounds<<<1, 64, 0, s2>>>(b, pair, 200, 1, 500u, errors.device + 1);
      world_barrier_rounds<<<1, 128, 0, s3>>>(c, world, 100, 1, errors.device + 2);
      GPU_CHECK(cudaGetLastError());
      GPU_CHECK(cudaStreamSynchronize(s1));
      GPU_CHECK(cudaStreamSynchronize(s2));
      GPU_CHECK(cudaStreamSynchronize(s3));
      errors.require_zero(me);
      GPU_CHECK(cudaStreamDestroy(s1));
      GPU_CHECK(cudaStreamDestroy(s2));
      GPU_CHECK(cudaStreamDestroy(s3));
      world.barrier();
    }));
  }
}

TEST_CASE("one device channel serves different teams one after another", "[gpu][teams][barrier]") {
  REQUIRE_NOTHROW(symm_gpu_test::on_gpu_pes(4, [](symm::world& world) {
    const int me = world.my_pe(), n = world.n_pes();
    auto whole = world.team();
    auto evens = whole.split_strided(0, 2, n / 2);
    auto odds = whole.split_strided(1, 2, n / 2);
    const symm::team& parity = me % 2 == 0 ? evens : odds;
    auto [row, column] = whole.split_2d(2);
    // One array per kernel: a PE may start the next kernel while PEs of other teams still check the previous one.
    std::vector<symm::array<std::uint64_t>> slots;
    for (int k = 0; k < 4; ++k)
      slots.emplace_back(world, static_cast<std::size_t>(n));
    gpu_counters errors(4);
    kernel_progress progress(4);
    cudaStream_t s;
    GPU_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    // Team channel 2 for all of them, in the same order on every PE: the parity teams make more barriers than the
    // others, which a per-PE barrier count could not survive. One kernel at a time, all PEs together (a host barrier
    // before each): what is tested is the flags that one team's barriers leave for the next team's.
    const struct {
      const symm::team* team;
      int rounds;
    } runs[] = {{&whole, 10}, {&parity, 37}, {&row, 5}, {&whole, 10}};
    for (int k = 0; k < 4; ++k) {
      world.barrier(); // every PE's CUDA set-up is done before any waiting kernel runs (gpu_support.cuh)
      team_barrier_rounds<<<1, 64, 0, s>>>(slots[static_cast<std::size_t>(k)], *runs[k].team, runs[k].rounds, 2, 0u,
                                           errors.device + k, progress.device + k);
      GPU_CHECK(cudaGetLastError());
      progress.check(me, cudaStreamSynchronize(s));
    }
    errors.require_zero(me);
    GPU_CHECK(cudaStreamDestroy(s));
    world.barrier();
  }));
}
