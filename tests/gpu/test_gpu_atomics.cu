// Remote atomics, put_signal and point-to-point waits in device code on the CUDA backend, as processes and as threads:
// a counter hammered by every thread of every PE, a compare_exchange lock, a put_signal pipeline between blocks of
// different PEs, NVSHMEM's ring broadcast (each PE writes its own signal word), a token ring and span waits, every
// atomic against a sequential model, and the host-side forms (the stream-ordered put_signal; host atomics, which run
// in symm's one-thread kernel: the same model, a counter that host code and a kernel hammer together; host waits on
// GPU memory: signal_wait_until / signal_fetch against a peer's kernel, every comparison and span form, and a dead
// peer ending a wait with errc::peer_failed; in a kernel, a dead peer ending a bounded wait with peer_failed).
//
// The PEs' kernels wait for each other, so they must run at the same time: each PE launches on its own non-blocking
// stream (in threads mode the legacy default stream would serialise them), and processes on one GPU need MPS
// (tools/gpu-check.sh starts it).
#include "../atomic_nbi_check.hpp"
#include "gpu_support.cuh"

#if __has_include(<catch2/catch_test_macros.hpp>)
#  include <catch2/catch_test_macros.hpp>
#else
#  include <catch2/catch.hpp>
#endif

#include <cooperative_groups.h>

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace cg = cooperative_groups;

namespace {

__host__ __device__ std::uint32_t mix(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDull;
  x ^= x >> 33;
  x *= 0xC4CEB9FE1A85EC53ull;
  x ^= x >> 33;
  return static_cast<std::uint32_t>(x);
}

//! Element i of what `producer` sends in `round`; the consumer recomputes it.
__host__ __device__ std::uint32_t payload(std::uint64_t seed, int producer, std::uint64_t round, std::size_t i) {
  return mix(seed ^ (static_cast<std::uint64_t>(producer) << 48) ^ (round << 24) ^ i);
}

//! The size of that round's message: 1 to `max`, spread over the powers of two.
__host__ __device__ std::size_t message_size(std::uint64_t seed, int producer, std::uint64_t round, std::size_t max) {
  std::uint32_t h = mix(seed * 3 + static_cast<std::uint64_t>(producer) * 1000003u + round);
  std::size_t limit = std::size_t{1} << (h % 17);
  return 1 + mix(h) % (limit < max ? limit : max);
}

//! A stream of this PE's own, so that the PEs' kernels run concurrently; destroyed with the scope.
struct pe_stream {
  pe_stream() { GPU_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)); }
  ~pe_stream() { cudaStreamDestroy(stream); }
  pe_stream(const pe_stream&) = delete;
  pe_stream& operator=(const pe_stream&) = delete;
  cudaStream_t stream{};
};

//! A device counter of failed checks, zeroed on the PE's stream (ahead of its kernels there), read back at the end.
struct error_counter {
  explicit error_counter(cudaStream_t stream) {
    GPU_CHECK(cudaMalloc(&count, sizeof(unsigned)));
    GPU_CHECK(cudaMemsetAsync(count, 0, sizeof(unsigned), stream));
  }
  ~error_counter() { cudaFree(count); }
  error_counter(const error_counter&) = delete;
  error_counter& operator=(const error_counter&) = delete;
  unsigned read() const { return symm_gpu_test::host_copy_of(count, 1)[0]; }
  unsigned* count = nullptr;
};

//! Zeroes device memory on the PE's stream. Never cudaDeviceSynchronize here: with PEs as threads it would also wait
//! for the other PEs' kernels, which may be waiting for this PE.
template <class T>
void zero(cudaStream_t stream, T* device, std::size_t n = 1) {
  GPU_CHECK(cudaMemsetAsync(device, 0, n * sizeof(T), stream));
}

// ---- counter --------------------------------------------------------------------------------------------------------

__global__ void count_kernel(symm::scalar_ref<unsigned long long> counter, symm::scalar_ref<unsigned> spread,
                             symm::array_ref<std::uint32_t> olds, int n_pes, unsigned per_thread) {
  const unsigned tid = blockIdx.x * blockDim.x + threadIdx.x, threads = gridDim.x * blockDim.x;
  auto target = symm::remote(counter, 0);
  auto spread_target = symm::remote(spread, static_cast<int>(tid % static_cast<unsigned>(n_pes)));
  for (unsigned k = 0; k < per_thread; ++k) {
    auto order = (k & 1) ? cuda::memory_order_relaxed : cuda::memory_order_seq_cst;
    olds.local()[k * threads + tid] = static_cast<std::uint32_t>(target.fetch_add(1, order));
    spread_target.add(1, cuda::memory_order_relaxed); // the non-fetching form (a reduction on the GPU)
  }
}

// ---- compare_exchange lock ------------------------------------------------------------------------------------------

__global__ void lock_kernel(symm::scalar_ref<int> lock, symm::scalar_ref<long long> shared, int me, int iterations,
                            unsigned* errors) {
  if (threadIdx.x != 0) return; // one thread per block contends
  auto l = symm::remote(lock, 0);
  auto s = symm::remote(shared, 0);
  const int owner = me * 1024 + static_cast<int>(blockIdx.x) + 1;
  for (int i = 0; i < iterations; ++i) {
    unsigned long long spins = 0;
    for (;;) {
      int expected = 0;
      if (l.compare_exchange(expected, owner, cuda::memory_order_acquire)) break;
      if (expected == 0 || expected == owner || ++spins > (1ull << 24)) { // a wrong report, or a probable deadlock
        atomicAdd(errors, 1u);
        return;
      }
    }
    if (l.load(cuda::memory_order_relaxed) != owner) atomicAdd(errors, 1u);
    long long v = s; // a plain remote load and store: safe only under the lock
    s = v + 1;
    l.store(0, cuda::memory_order_release);
  }
}

// ---- put_signal pipeline --------------------------------------------------------------------------------------------

struct pipeline_args {
  symm::array_ref<std::uint32_t> buf, src;
  symm::signal_ref ready;
  symm::scalar_ref<unsigned long long> ack; // rounds my right neighbour has consumed
  std::uint64_t seed;
  int rounds, me, n;
  unsigned* errors;
};

//! Block 0 produces for the right neighbour, block 1 consumes from the left one.
__global__ void pipeline_kernel(pipeline_args a) {
  auto block = cg::this_thread_block();
  const int right = (a.me + 1) % a.n, left = (a.me + a.n - 1) % a.n;
  const std::size_t max = a.buf.size();
  __shared__ unsigned long long seen;
  for (int r = 1; r <= a.rounds; ++r) {
    const auto round = static_cast<std::uint64_t>(r);
    if (blockIdx.x == 0) {
      if (block.thread_rank() == 0) symm::wait_until(a.ack.local(), symm::cmp::ge, round - 1);
      block.sync();
      const std::size_t size = message_size(a.seed, a.me, round, max);
      for (std::size_t i = block.thread_rank(); i < size; i += block.num_threads()) {
        a.src.local()[i] = payload(a.seed, a.me, round, i);
      }
      block.sync();
      auto dst = symm::remote(a.buf, right).first(size);
      auto source = a.src.local().first(size);
      auto sig = symm::remote(a.ready, right);
      const auto op = r % 2 == 1 ? symm::signal_op::set : symm::signal_op::add;
      const std::uint64_t value = op == symm::signal_op::set ? round : 1; // either way the signal becomes `round`
      if (r % 5 == 0) {
        if (block.thread_rank() == 0) symm::put_signal(symm::this_thread(), dst, source, sig, value, op);
      } else if (r % 3 == 0) {
        auto f = symm::put_signal_nbi(block, dst, source, sig, value, op);
        f.wait();
      } else {
        symm::put_signal(block, dst, source, sig, value, op);
      }
      block.sync(); // src is rewritten next round
    } else {
      if (block.thread_rank() == 0) seen = symm::signal_wait_until(a.ready, symm::cmp::ge, round);
      block.sync();
      if (block.thread_rank() == 0 && seen != round) atomicAdd(a.errors, 1u); // the producer cannot run ahead
      const std::size_t size = message_size(a.seed, left, round, max);
      for (std::size_t i = block.thread_rank(); i < size; i += block.num_threads()) {
        std::size_t j = size - 1 - i; // from the end: what the copy writes last
        if (a.buf.local()[j] != payload(a.seed, left, round, j)) atomicAdd(a.errors, 1u);
      }
      block.sync();
      if (block.thread_rank() == 0) symm::remote(a.ack, left).store(round, cuda::memory_order_release);
    }
  }
}

// ---- wait_until: a token ring, and waits over spans -----------------------------------------------------------------

__global__ void ring_kernel(symm::scalar_ref<int> token, symm::scalar_ref<unsigned long long> token64, int me, int n,
                            int rounds, unsigned* errors) {
  if (threadIdx.x != 0) return;
  const int right = (me + 1) % n;
  for (int r = 1; r <= rounds; ++r) {
    const unsigned long long r64 = (static_cast<unsigned long long>(r) << 32) | static_cast<unsigned>(r);
    if (me == 0) {
      symm::remote(token, right).store(r, cuda::memory_order_release);
      if (symm::wait_until(token, symm::cmp::eq, r) != r) atomicAdd(errors, 1u); // came back around
      symm::remote(token64, right).store(r64, cuda::memory_order_release);
      if (symm::wait_until(&token64.local(), symm::cmp::ge, r64) != r64) atomicAdd(errors, 1u);
    } else {
      if (symm::wait_until(token.local(), symm::cmp::ge, r) != r) atomicAdd(errors, 1u);
      symm::remote(token, right).store(r, cuda::memory_order_release);
      if (symm::wait_until(token64, symm::cmp::eq, r64) != r64) atomicAdd(errors, 1u);
      symm::remote(token64, right).store(r64, cuda::memory_order_release);
    }
  }
}

//! Each round every PE stores the round into its slot on every PE, then waits with the span forms.
// ---- wait_until_for / signal_wait_until_for: deadlines in device code -----------------------------------------------

__device__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

//! Thread 0: waits that nobody satisfies end in timed_out after at least their timeout (1 ms from a cuda::std::chrono
//! literal, `timeout` as a std::chrono argument); then a ring where each PE's writes satisfy its right neighbour's
//! waits, which end in ok with the value written (or a later one: a PE may run a round ahead of its right neighbour).
__global__ void
bounded_wait_kernel(symm::scalar_ref<int> flag, symm::scalar_ref<unsigned long long> flag64, symm::signal_ref sig,
                    std::chrono::nanoseconds timeout, int me, int n, int rounds, unsigned* errors) {
  if (threadIdx.x != 0) return;
  const unsigned long long start = global_ns();
  const symm::wait_result<int> late = symm::wait_until_for(flag, symm::cmp::eq, -1, cuda::std::chrono::milliseconds(1));
  // Its value is whatever the left neighbour stored meanwhile (it may have started its ring already): not checked.
  if (late.status != symm::wait_status::timed_out || late.ok()) atomicAdd(errors, 1u);
  const unsigned long long after_int = global_ns();
  if (after_int - start < 1000000ull) atomicAdd(errors, 1u);
  auto late_signal = symm::signal_wait_until_for(sig, symm::cmp::eq, ~0ull, timeout);
  if (late_signal.status != symm::wait_status::timed_out) atomicAdd(errors, 1u);
  if (global_ns() - after_int < 500000ull) atomicAdd(errors, 1u); // `timeout` is 500 us
  const int right = (me + 1) % n;
  for (int r = 1; r <= rounds; ++r) {
    const unsigned long long r64 = (static_cast<unsigned long long>(r) << 32) | static_cast<unsigned>(r);
    symm::remote(flag, right).store(r, cuda::memory_order_release);
    symm::remote(flag64, right).store(r64, cuda::memory_order_release);
    symm::remote(sig.word(), right)[0].store(static_cast<std::uint64_t>(r), cuda::memory_order_release);
    const auto got = symm::wait_until_for(flag, symm::cmp::ge, r, cuda::std::chrono::seconds(4));
    if (!got.ok() || got.value < r) atomicAdd(errors, 1u);
    auto [status, seen] = symm::wait_until_for(&flag64.local(), symm::cmp::ge, r64, cuda::std::chrono::seconds(4));
    if (status != symm::wait_status::ok || seen < r64) atomicAdd(errors, 1u);
    const auto sig_got =
        symm::signal_wait_until_for(sig, symm::cmp::ge, static_cast<std::uint64_t>(r), cuda::std::chrono::seconds(4));
    if (!sig_got.ok() || sig_got.value < static_cast<std::uint64_t>(r)) atomicAdd(errors, 1u);
  }
  // A condition that holds already (the left neighbour's last write came before this PE's last wait ended): ok at
  // once, even with no time at all.
  if (symm::wait_until_for(flag, symm::cmp::eq, rounds, cuda::std::chrono::nanoseconds(0)).status !=
      symm::wait_status::ok) {
    atomicAdd(errors, 1u);
  }
}

__global__ void span_wait_kernel(symm::array_ref<unsigned long long> slots, symm::array_ref<std::int32_t> flags32,
                                 symm::array_ref<unsigned long long> own, int me, int n, int rounds, unsigned* errors) {
  if (threadIdx.x != 0) return;
  constexpr int max_pes = 64;
  const auto count = static_cast<std::size_t>(n);
  std::size_t indices[max_pes];
  int status[max_pes];
  unsigned long long expected[max_pes];
  for (int p = 0; p < n; ++p)
    status[p] = p == me ? 1 : 0; // my own slot left out
  auto idx = cuda::std::span<std::size_t>(indices, count);
  auto mask = cuda::std::span<const int>(status, count);
  auto values = cuda::std::span<const unsigned long long>(expected, count);
  // The _vector forms on words no other PE writes: word p holds its value 3p + 7, plus 1 when p is odd.
  auto words = own.local();
  for (std::size_t p = 0; p < count; ++p) {
    expected[p] = 3 * p + 7;
    words[p] = expected[p] + p % 2;
  }
  if (symm::test_some_vector(words, idx, symm::cmp::eq, values) != (count + 1) / 2) atomicAdd(errors, 1u);
  for (std::size_t k = 0; k < (count + 1) / 2; ++k) {
    if (indices[k] != 2 * k) atomicAdd(errors, 1u);
  }
  if (symm::test_any_vector(words, symm::cmp::gt, values) != (count > 1 ? 1 : symm::no_index)) atomicAdd(errors, 1u);
  if (symm::test_all_vector(words, symm::cmp::eq, values) != (count == 1)) atomicAdd(errors, 1u);
  if (!symm::test_all_vector(words, symm::cmp::ge, values)) atomicAdd(errors, 1u);
  symm::wait_until_all_vector(words, symm::cmp::ge, values);
  if (symm::wait_until_some_vector(words, idx, symm::cmp::le, values) != (count + 1) / 2) atomicAdd(errors, 1u);
  if (symm::wait_until_any_vector(words, symm::cmp::eq, values) != 0) atomicAdd(errors, 1u);
  for (int r = 1; r <= rounds; ++r) {
    const auto round = static_cast<unsigned long long>(r);
    for (int p = 0; p < n; ++p) {
      if (p == me) continue;
      symm::remote(slots, p)[static_cast<std::size_t>(me)].store(round, cuda::memory_order_release);
      symm::remote(flags32, p)[static_cast<std::size_t>(me)].fetch_add(1, cuda::memory_order_release);
    }
    std::size_t any = symm::wait_until_any(slots.local(), symm::cmp::ge, round, mask);
    if (n > 1 && (any >= static_cast<std::size_t>(n) || any == static_cast<std::size_t>(me))) atomicAdd(errors, 1u);
    symm::wait_until_all(slots.local(), symm::cmp::ge, round, mask);
    symm::wait_until_all(flags32.local(), symm::cmp::ge, r, mask);
    if (!symm::test_all(slots.local(), symm::cmp::ge, round, mask)) atomicAdd(errors, 1u);
    if (n > 1) {
      std::size_t got = symm::wait_until_some(slots.local(), idx, symm::cmp::ge, round, mask);
      if (got != static_cast<std::size_t>(n - 1)) atomicAdd(errors, 1u);
      for (std::size_t k = 0; k < got; ++k) {
        if (indices[k] == static_cast<std::size_t>(me)) atomicAdd(errors, 1u);
      }
      if (symm::test_some(flags32.local(), idx, symm::cmp::ge, r, mask) != static_cast<std::size_t>(n - 1)) {
        atomicAdd(errors, 1u);
      }
    }
    if (symm::test_any(slots.local(), symm::cmp::gt, ~0ull - 1, mask) != symm::no_index) atomicAdd(errors, 1u);
    if (symm::test(slots.local()[static_cast<std::size_t>(me)], symm::cmp::ne, 0ull)) atomicAdd(errors, 1u);
    for (std::size_t p = 0; p < count; ++p)
      expected[p] = round;
    symm::wait_until_all_vector(slots.local(), symm::cmp::ge, values, mask);
  }
}

// ---- every atomic against a sequential model ------------------------------------------------------------------------

enum op_code : int {
  op_load,
  op_store,
  op_exchange,
  op_cas_hit,
  op_cas_miss,
  op_fetch_add,
  op_fetch_sub,
  op_add,
  op_sub,
  op_fetch_and,
  op_fetch_or,
  op_fetch_xor,
  op_fetch_min,
  op_fetch_max,
  op_bit_and,
  op_bit_or,
  op_bit_xor,
  op_count
};

//! One step of the model, the same code in a kernel and in host code: returns what the atomic returned (T{} for the
//! non-fetching ones); `wrong` when compare_exchange's result disagrees with the model.
template <class T>
__host__ __device__ T model_step(symm::pe_ref<T> r, symm::pe_ref<const T> cr, int i, int op, T v, T expected_for_cas,
                                 cuda::memory_order order, bool& wrong) {
  T out{};
  switch (op) {
    case op_load: out = (i & 1) ? r.load() : cr.load(cuda::memory_order_acquire); break;
    case op_store: r.store(v, cuda::memory_order_release); break;
    case op_exchange: out = r.exchange(v, order); break;
    case op_cas_hit:
    case op_cas_miss: {
      T expected = expected_for_cas;
      bool stored = r.compare_exchange(expected, v, order);
      if (stored != (op == op_cas_hit)) wrong = true;
      out = expected;
      break;
    }
    case op_fetch_add: out = r.fetch_add(v, order); break;
    case op_fetch_sub: out = r.fetch_sub(v, order); break;
    case op_add: r.add(v, order); break;
    case op_sub: r.sub(v, order); break;
    default:
      if constexpr (symm::atomic_integer<T>) {
        switch (op) {
          case op_fetch_and: out = r.fetch_and(v, order); break;
          case op_fetch_or: out = r.fetch_or(v, order); break;
          case op_fetch_xor: out = r.fetch_xor(v, order); break;
          case op_fetch_min: out = r.fetch_min(v, order); break;
          case op_fetch_max: out = r.fetch_max(v, order); break;
          case op_bit_and: r.bit_and(v, order); break;
          case op_bit_or: r.bit_or(v, order); break;
          case op_bit_xor: r.bit_xor(v, order); break;
        }
      }
  }
  return out;
}

template <class T>
__global__ void model_kernel(symm::array_ref<T> slots, int target, int me, const int* ops, const T* operands,
                             const T* expected_for_cas, const int* orders, int steps, T* results, unsigned* errors) {
  auto r = symm::remote(slots, target)[static_cast<std::size_t>(me)];
  const symm::array_ref<const T> read_only = slots;
  auto cr = symm::remote(read_only, target)[static_cast<std::size_t>(me)];
  for (int i = 0; i < steps; ++i) {
    bool wrong = false;
    results[i] = model_step<T>(r, cr, i, ops[i], operands[i], expected_for_cas[i],
                               static_cast<cuda::memory_order>(orders[i]), wrong);
    if (wrong) atomicAdd(errors, 1u);
  }
  results[steps] = r.load();
}

//! A random sequence of atomics on one word and what each returns, computed sequentially.
template <class T>
struct model_plan {
  std::vector<int> ops, orders;
  std::vector<T> operands, cas_expected, expected; // expected: steps + 1 entries, the last the final value
};

template <class T>
model_plan<T> plan_model(std::uint64_t seed, int steps) {
  constexpr bool integer = symm::atomic_integer<T>;
  std::mt19937_64 rng(seed);
  auto random_value = [&] {
    if constexpr (integer) return static_cast<T>(rng());
    else return static_cast<T>(std::uniform_real_distribution<double>(-1e6, 1e6)(rng));
  };
  auto wrap = [](auto f, T a, T b) {
    if constexpr (integer) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(f(static_cast<U>(a), static_cast<U>(b)));
    } else {
      return static_cast<T>(f(a, b));
    }
  };
  const int kinds = integer ? op_count : op_fetch_and;
  model_plan<T> p;
  p.ops.resize(steps);
  p.orders.resize(steps);
  p.operands.resize(steps);
  p.cas_expected.resize(steps);
  p.expected.resize(steps + 1);
  const int rmw_orders[] = {static_cast<int>(cuda::memory_order_relaxed), static_cast<int>(cuda::memory_order_acquire),
                            static_cast<int>(cuda::memory_order_release), static_cast<int>(cuda::memory_order_acq_rel),
                            static_cast<int>(cuda::memory_order_seq_cst)};
  T model = random_value();
  p.ops[0] = op_store; // start from a known value
  p.operands[0] = model;
  p.orders[0] = rmw_orders[4];
  for (int i = 1; i < steps; ++i) {
    int op = static_cast<int>(rng() % static_cast<unsigned>(kinds));
    T v = random_value();
    p.ops[i] = op;
    p.operands[i] = v;
    p.orders[i] = rmw_orders[rng() % 5];
    p.cas_expected[i] = op == op_cas_hit ? model : (model == T(7) ? T(8) : T(7));
    p.expected[i] =
        (op == op_store || op == op_add || op == op_sub || op == op_bit_and || op == op_bit_or || op == op_bit_xor)
            ? T{}
            : model;
    switch (op) {
      case op_store:
      case op_exchange:
      case op_cas_hit: model = v; break;
      case op_fetch_add:
      case op_add: model = wrap(std::plus<>{}, model, v); break;
      case op_fetch_sub:
      case op_sub: model = wrap(std::minus<>{}, model, v); break;
      default:
        if constexpr (integer) {
          switch (op) {
            case op_fetch_and:
            case op_bit_and: model = model & v; break;
            case op_fetch_or:
            case op_bit_or: model = model | v; break;
            case op_fetch_xor:
            case op_bit_xor: model = model ^ v; break;
            case op_fetch_min: model = std::min(model, v); break;
            case op_fetch_max: model = std::max(model, v); break;
          }
        }
    }
  }
  p.expected[steps] = model;
  return p;
}

template <class T>
void check_against_model(int me, const model_plan<T>& p, const std::vector<T>& results, const char* where) {
  const int steps = static_cast<int>(p.ops.size());
  for (int i = 0; i <= steps; ++i) {
    if (std::memcmp(&results[i], &p.expected[i], sizeof(T)) != 0) {
      throw std::runtime_error(fmt::format("PE {}: step {} (op {}): {} returned {}, the model {}", me, i,
                                           i < steps ? p.ops[i] : -1, where, results[i], p.expected[i]));
    }
  }
}

template <class T>
void device_model(symm::world& world) {
  constexpr bool integer = symm::atomic_integer<T>;
  const int me = world.my_pe(), n = world.n_pes(), target = (me + 1) % n;
  symm::array<T> slots(world, static_cast<std::size_t>(n));
  world.barrier();
  const int steps = 2000;
  const auto plan =
      plan_model<T>(symm_test::seed() ^ (static_cast<std::uint64_t>(me) << 20) ^ sizeof(T) ^ (integer ? 0 : 99), steps);
  const auto& [ops, orders, operands, cas_expected, expected] = plan;
  int* d_ops = symm_gpu_test::device_copy_of(ops);
  int* d_orders = symm_gpu_test::device_copy_of(orders);
  T* d_operands = symm_gpu_test::device_copy_of(operands);
  T* d_cas = symm_gpu_test::device_copy_of(cas_expected);
  T* d_results = nullptr;
  GPU_CHECK(cudaMalloc(&d_results, (steps + 1) * sizeof(T)));
  GPU_CHECK(cudaStreamSynchronize(nullptr)); // the copies above ran on the legacy stream, which ours does not wait for
  pe_stream s;
  error_counter errors(s.stream);
  model_kernel<T>
      <<<1, 1, 0, s.stream>>>(slots, target, me, d_ops, d_operands, d_cas, d_orders, steps, d_results, errors.count);
  GPU_CHECK(cudaGetLastError());
  GPU_CHECK(cudaStreamSynchronize(s.stream));
  auto results = symm_gpu_test::host_copy_of(d_results, steps + 1);
  PE_REQUIRE_EQ(errors.read(), 0u);
  check_against_model(me, plan, results, "the device");
  for (void* p : {static_cast<void*>(d_ops), static_cast<void*>(d_orders), static_cast<void*>(d_operands),
                  static_cast<void*>(d_cas), static_cast<void*>(d_results)}) {
    GPU_CHECK(cudaFree(p));
  }
  world.barrier();
}

// ---- host-side put_signal on the CUDA backend; a device consumer ----------------------------------------------------

__global__ void stream_consumer_kernel(symm::array_ref<std::uint32_t> regions, symm::signal_ref ready,
                                       std::uint64_t seed, int left, int rounds, std::size_t region, unsigned* errors) {
  auto block = cg::this_thread_block();
  for (int r = 1; r <= rounds; ++r) {
    if (block.thread_rank() == 0) (void) symm::signal_wait_until(ready, symm::cmp::ge, static_cast<std::uint64_t>(r));
    block.sync();
    const std::size_t size = message_size(seed, left, static_cast<std::uint64_t>(r), region);
    const std::uint32_t* mine = regions.local().data() + static_cast<std::size_t>(r - 1) * region;
    for (std::size_t i = block.thread_rank(); i < size; i += block.num_threads()) {
      std::size_t j = size - 1 - i;
      if (mine[j] != payload(seed, left, static_cast<std::uint64_t>(r), j)) atomicAdd(errors, 1u);
    }
  }
}

// ---- NVSHMEM's ring broadcast (its examples' ring-bcast.cu), ported: a PE writes and reads its own signal word ------

//! One thread per PE. The root raises its own signal (NVSHMEM: `*psync = 1`); every PE waits on its own, forwards the
//! data with the signal to the next PE unless that is the root, and lowers its own signal again (`*psync = 0`).
__global__ void ring_bcast_kernel(symm::array_ref<std::uint32_t> data, symm::signal_ref psync, int root, int me,
                                  int n_pes) {
  const int peer = (me + 1) % n_pes;
  if (me == root) psync.local() = 1;
  (void) symm::signal_wait_until(psync, symm::cmp::ne, 0);
  if (peer != root) {
    symm::put_signal(symm::this_thread(), symm::remote(data, peer), data.local(), symm::remote(psync, peer), 1,
                     symm::signal_op::set);
  }
  psync.local() = 0;
}

//! signal_update in device code: a p into the right neighbour, then the signal that says so (set); the left
//! neighbour's p is read once this PE's own signal has come; then every PE adds me + 1 into PE 0's count.
__global__ void signal_update_kernel(symm::array_ref<std::uint64_t> box, symm::signal_ref ready, symm::signal_ref count,
                                     int me, int n_pes, std::uint64_t* seen) {
  const int right = (me + 1) % n_pes;
  symm::remote(box, right)[0] = 1000 + static_cast<std::uint64_t>(me);
  symm::signal_update(symm::remote(ready, right), 1, symm::signal_op::set);
  (void) symm::signal_wait_until(ready, symm::cmp::eq, 1);
  *seen = box.local()[0];
  symm::signal_update(symm::remote(count, 0), static_cast<std::uint64_t>(me) + 1, symm::signal_op::add);
}

// ---- host code on the CUDA backend: atomics (symm's one-thread kernel) and waits on GPU memory ---------------------

//! The model of device_model, run from host code: every atomic is a launch of symm's kernel on the world's stream.
template <class T>
void host_model(symm::world& world) {
  constexpr bool integer = symm::atomic_integer<T>;
  const int me = world.my_pe(), n = world.n_pes(), target = (me + 1) % n;
  symm::array<T> slots(world, static_cast<std::size_t>(n));
  world.barrier();
  const int steps = 400;
  const auto plan = plan_model<T>(
      symm_test::seed() ^ (static_cast<std::uint64_t>(me) << 20) ^ sizeof(T) ^ (integer ? 0 : 99) ^ 0x405u, steps);
  const symm::array_ref<T> slots_ref = slots;
  const symm::array_ref<const T> read_only = slots_ref;
  auto r = symm::remote(slots, target)[static_cast<std::size_t>(me)];
  auto cr = symm::remote(read_only, target)[static_cast<std::size_t>(me)];
  std::vector<T> results(steps + 1);
  for (int i = 0; i < steps; ++i) {
    bool wrong = false;
    results[i] = model_step<T>(r, cr, i, plan.ops[i], plan.operands[i], plan.cas_expected[i],
                               static_cast<cuda::memory_order>(plan.orders[i]), wrong);
    if (wrong) {
      throw std::runtime_error(fmt::format("PE {}: step {}: host compare_exchange reported the wrong outcome", me, i));
    }
  }
  results[steps] = r.load();
  check_against_model(me, plan, results, "host code");
  T plain = r; // a get (a copy) sees what the atomics left
  PE_REQUIRE(std::memcmp(&plain, &plan.expected[steps], sizeof(T)) == 0);
  world.barrier();
}

//! Every thread adds 1 to PE 0's counter `per_thread` times (the non-fetching form), while host code does the same.
__global__ void device_adds_kernel(symm::scalar_ref<unsigned long long> counter, unsigned per_thread) {
  auto target = symm::remote(counter, 0);
  for (unsigned k = 0; k < per_thread; ++k)
    target.add(1, cuda::memory_order_relaxed);
}

//! Block 0 sends `rounds` messages to the right neighbour with put_signal, each after the neighbour's host code has
//! acknowledged the one before (through a host-side atomic store into this PE's ack).
__global__ void
signal_producer_kernel(symm::array_ref<std::uint32_t> buf, symm::array_ref<std::uint32_t> src, symm::signal_ref ready,
                       symm::scalar_ref<unsigned long long> ack, std::uint64_t seed, int me, int right, int rounds) {
  auto block = cg::this_thread_block();
  const std::size_t max = buf.size();
  for (int r = 1; r <= rounds; ++r) {
    const auto round = static_cast<std::uint64_t>(r);
    if (block.thread_rank() == 0) symm::wait_until(ack.local(), symm::cmp::ge, round - 1);
    block.sync();
    const std::size_t size = message_size(seed, me, round, max);
    for (std::size_t i = block.thread_rank(); i < size; i += block.num_threads())
      src.local()[i] = payload(seed, me, round, i);
    block.sync();
    symm::put_signal(block, symm::remote(buf, right).first(size), src.local().first(size), symm::remote(ready, right),
                     round, symm::signal_op::set);
    block.sync();
  }
}

//! Run with as many blocks as fit (one warp each: the SMs run out of block slots first, whatever the registers), it
//! takes every block slot of every SM, so no other kernel of the process can start while it runs. Each block counts
//! itself in `arrived` and waits until this PE's host code has seen that and stored `go`.
__global__ void __launch_bounds__(32)
    fill_gpu_kernel(symm::scalar_ref<unsigned> arrived, symm::scalar_ref<unsigned> go) {
  if (threadIdx.x == 0) {
    cuda::atomic_ref<unsigned, cuda::thread_scope_system>(arrived.local()).fetch_add(1, cuda::memory_order_release);
    symm::wait_until(go.local(), symm::cmp::eq, 1u);
  }
  __syncwarp();
}

} // namespace

TEST_CASE("device fetch_add from every thread of every PE: the counter ends exact, each old value once",
          "[gpu]["
          "atomics]") {
  CAPTURE(symm_test::seed());
  for (int n : {2, 4, 8}) {
    CAPTURE(n);
    REQUIRE_NOTHROW(symm_gpu_test::on_gpu_pes(n, [](symm::world& world) {
      const int me = world.my_pe(), n_pes = world.n_pes();
      constexpr unsigned total = 1u << 20, blocks = 32, threads = 256;
      const unsigned per_pe = total / static_cast<unsigned>(n_pes), per_thread = per_pe / (blocks * threads);
      symm::scalar<unsigned long long> counter(world);
      symm::scalar<unsigned> spread(world);
      symm::array<std::uint32_t> olds(world, per_pe), all(world, total);
      pe_stream s;
      zero(s.stream, &counter.local());
      zero(s.stream, &spread.local());
      GPU_CHECK(cudaStreamSynchronize(s.stream));
      world.barrier();
      count_kernel<<<blocks, threads, 0, s.stream>>>(counter, spread, olds, n_pes, per_thread);
      GPU_CHECK(cudaGetLastError());
      GPU_CHECK(cudaStreamSynchronize(s.stream));
      auto mine = symm_gpu_test::local_to_host(olds);
      symm::remote(all, 0).subspan(static_cast<std::size_t>(me) * per_pe, per_pe) = mine; // gather on PE 0
      world.barrier();
      PE_REQUIRE_EQ(symm::remote(counter, 0).get(), static_cast<unsigned long long>(total));
      PE_REQUIRE_EQ(symm::remote(spread, me).get(), per_pe); // each PE got an equal share of the adds
      if (me == 0) {
        auto every = symm_gpu_test::local_to_host(all);
        std::sort(every.begin(), every.end());
        for (unsigned i = 0; i < total; ++i) {
          if (every[i] != i) PE_REQUIRE_EQ(every[i], i); // none lost, none twice
        }
      }
      world.barrier();
    }));
  }
}

TEST_CASE("a compare_exchange lock in device code guards a non-atomic read-modify-write", "[gpu][atomics]") {
  for (int n : {2, 4, 8}) {
    CAPTURE(n);
    REQUIRE_NOTHROW(symm_gpu_test::on_gpu_pes(n, [](symm::world& world) {
      const int me = world.my_pe(), n_pes = world.n_pes();
      constexpr int blocks = 4, iterations = 100;
      symm::scalar<int> lock(world);
      symm::scalar<long long> shared(world);
      pe_stream s;
      error_counter errors(s.stream);
      zero(s.stream, &lock.local());
      zero(s.stream, &shared.local());
      GPU_CHECK(cudaStreamSynchronize(s.stream));
      world.barrier();
      lock_kernel<<<blocks, 32, 0, s.stream>>>(lock, shared, me, iterations, errors.count);
      GPU_CHECK(cudaGetLastError());
      GPU_CHECK(cudaStreamSynchronize(s.stream));
      PE_REQUIRE_EQ(errors.read(), 0u);
      world.barrier();
      PE_REQUIRE_EQ(symm::remote(shared, 0).get(), static_cast<long long>(n_pes) * blocks * iterations);
      world.barrier();
    }));
  }
}

TEST_CASE("device put_signal pipeline: the consumer block checks every element after signal_wait_until",
          "[gpu]["
          "signal]") {
  CAPTURE(symm_test::seed());
  for (int n : {2, 4, 8}) {
    CAPTURE(n);
    REQUIRE_NOTHROW(symm_gpu_test::on_gpu_pes(n, [](symm::world& world) {
      const std::size_t max = std::size_t{1} << 16;
      symm::array<std::uint32_t> buf(world, max), src(world, max);
      symm::signal ready(world);
      symm::scalar<unsigned long long> ack(world);
      pe_stream s;
      error_counter errors(s.stream);
      zero(s.stream, &ack.local());
      GPU_CHECK(cudaStreamSynchronize(s.stream));
      world.barrier();
      pipeline_args args{buf, src, ready, ack, symm_test::seed(), 64, world.my_pe(), world.n_pes(), errors.count};
      pipeline_kernel<<<2, 256, 0, s.stream>>>(args);
      GPU_CHECK(cudaGetLastError());
      GPU_CHECK(cudaStreamSynchronize(s.stream));
      PE_REQUIRE_EQ(errors.read(), 0u);
      world.barrier();
    }));
  }
}

TEST_CASE("device wait_until: a token ring on 4- and 8-byte words, and the span and _vector forms", "[gpu][wait]") {
  for (int n : {2, 4, 8}) {
    CAPTURE(n);
    REQUIRE_NOTHROW(symm_gpu_test::on_gpu_pes(n, [](symm::world& world) {
      const int me = world.my_pe(), n_pes = world.n_pes();
      symm::scalar<int> token(world);
      symm::scalar<unsigned long long> token64(world);
      symm::array<unsigned long long> slots(world, static_cast<std::size_t>(n_pes));
      symm::array<std::int32_t> flags32(world, static_cast<std::size_t>(n_pes));
      symm::array<unsigned long long> own_words(world, static_cast<std::size_t>(n_pes));
      pe_stream s;
      error_counter errors(s.stream);
      zero(s.stream, &token.local());
      zero(s.stream, &token64.local());
      zero(s.stream, slots.local().data(), slots.size());
      zero(s.stream, flags32.local().data(), flags32.size());
      GPU_CHECK(cudaStreamSynchronize(s.stream));
      world.barrier();
      ring_kernel<<<1, 32, 0, s.stream>>>(token, token64, me, n_pes, 100, errors.count);
      GPU_CHECK(cudaGetLastError());
      GPU_CHECK(cudaStreamSynchronize(s.stream));
      PE_REQUIRE_EQ(errors.read(), 0u);
      world.barrier();
      span_wait_kernel<<<1, 32, 0, s.stream>>>(slots, flags32, own_words, me, n_pes, 50, errors.count);
      GPU_CHECK(cudaGetLastError());
      GPU_CHECK(cudaStreamSynchronize(s.stream));
      PE_REQUIRE_EQ(errors.read(), 0u);
      world.barrier();
    }));
  }
}

TEST_CASE("device wait_until_for / signal_wait_until_for: a 1 ms deadline returns timed_out, a satisfied wait ok",
          "[gpu][wait][bounded]") {
  for (int n : {2, 4}) {
    CAPTURE(n);
    REQUIRE_NOTHROW(symm_gpu_test::on_gpu_pes(n, [](symm::world& world) {
      symm::scalar<int> flag(world);
      symm::scalar<unsigned long long> flag64(world);
      symm::signal sig(world);
      pe_stream s;
      error_counter errors(s.stream);
      zero(s.stream, &flag.local());
      zero(s.stream, &flag64.local());
      zero(s.stream, &sig.local());
      GPU_CHECK(cudaStreamSynchronize(s.stream));
      world.barrier();
      bounded_wait_kernel<<<1, 32, 0, s.stream>>>(
          flag, flag64, sig, std::chrono::microseconds(500), world.my_pe(), world.n_pes(), 50, errors.count);
      GPU_CHECK(cudaGetLastError());
      GPU_CHECK(cudaStreamSynchronize(s.stream));
      PE_REQUIRE_EQ(errors.read(), 0u);
      world.barrier();
    }));
  }
}

TEST_CASE("device atomics of every type match a sequential model", "[gpu][atomics]") {
  CAPTURE(symm_test::seed());
  REQUIRE_NOTHROW(symm_gpu_test::on_gpu_pes(3, [](symm::world& world) {
    device_model<std::int32_t>(world);
    device_model<unsigned long long>(world);
    device_model<float>(world);
    device_model<double>(world);
  }));
}

TEST_CASE("host code on the CUDA backend: put_signal on a stream; signal_op::add says to use device code",
          "[gpu][signal][host]") {
  CAPTURE(symm_test::seed());
  REQUIRE_NOTHROW(symm_gpu_test::on_gpu_pes(4, [](symm::world& world) {
    const int me = world.my_pe(), n = world.n_pes();
    const int right = (me + 1) % n, left = (me + n - 1) % n;
    constexpr int rounds = 30;
    constexpr std::size_t region = 4096;
    symm::array<std::uint32_t> regions(world, rounds * region);
    symm::signal ready(world);
    pe_stream consumer, producer;
    error_counter errors(consumer.stream);
    stream_consumer_kernel<<<1, 256, 0, consumer.stream>>>(
        regions, ready, symm_test::seed(), left, rounds, region, errors.count);
    GPU_CHECK(cudaGetLastError());
    for (int r = 1; r <= rounds; ++r) {
      const auto round = static_cast<std::uint64_t>(r);
      const std::size_t size = message_size(symm_test::seed(), me, round, region);
      std::vector<std::uint32_t> data(size);
      for (std::size_t i = 0; i < size; ++i)
        data[i] = payload(symm_test::seed(), me, round, i);
      auto dst = symm::remote(regions, right).subspan(static_cast<std::size_t>(r - 1) * region, size);
      // Each round completes before the next starts, so the signal values arrive in order whatever the stream.
      if (r % 3 == 0) {
        symm::put_signal(dst, data, symm::remote(ready, right), round, symm::signal_op::set);
      } else if (r % 3 == 1) {
        auto f = symm::put_signal_nbi(dst, data, symm::remote(ready, right), round, symm::signal_op::set);
        f.wait();
      } else {
        auto f = symm::put_signal(producer.stream, dst, data, symm::remote(ready, right), round, symm::signal_op::set);
        f.wait();
      }
    }
    GPU_CHECK(cudaStreamSynchronize(consumer.stream));
    PE_REQUIRE_EQ(errors.read(), 0u);
    world.barrier();
    // What host code cannot do through a peer mapping says so, and what to do instead. A peer reached through NVSHMEM
    // RMA (nvshmem backend, another node) takes the add: NVSHMEM's put-with-signal does it.
    std::vector<std::uint32_t> one(1, 7);
    if (world.state()->mapped(right)) {
      PE_REQUIRE_ERROR(symm::put_signal(symm::remote(regions, right).first(1), one, symm::remote(ready, right), 1,
                                        symm::signal_op::add),
                       symm::errc::unsupported, "signal_op::add", "device code");
    } else {
      const std::uint64_t before = symm::signal_fetch(ready);
      world.barrier();
      symm::put_signal(symm::remote(regions, right).first(1), one, symm::remote(ready, right), 5, symm::signal_op::add);
      world.barrier();
      PE_REQUIRE_EQ(symm::signal_fetch(ready), before + 5);
      PE_REQUIRE_EQ(symm::remote(regions, me)[0].get(), 7u);
    }
    // Host memory a kernel could write is fine to wait on from the host.
    int host_word = 3;
    PE_REQUIRE_EQ(symm::wait_until(host_word, symm::cmp::ge, 3), 3);
    world.barrier();
  }));
}

TEST_CASE("host atomics on the CUDA backend: every op of every type matches a sequential model",
          "[gpu][atomics]["
          "host]") {
  CAPTURE(symm_test::seed());
  REQUIRE_NOTHROW(symm_gpu_test::on_gpu_pes(3, [](symm::world& world) {
    host_model<std::int32_t>(world);
    host_model<std::uint32_t>(world);
    host_model<long long>(world);
    host_model<unsigned long long>(world);
    host_model<float>(world);
    host_model<double>(world);
  }));
}

TEST_CASE("nbi atomics on the CUDA backend: batches in flight, dropped futures' words reused, every form modelled",
          "[gpu][atomics][host][nbi]") {
  for (int n : {1, 2, 4}) {
    CAPTURE(n);
    REQUIRE_NOTHROW(symm_gpu_test::on_gpu_pes(n, [](symm::world& world) {
      symm_test::check_fetch_add_nbi(world, 600); // more than the 256 pinned words of one pool block
      symm_test::check_atomic_nbi_model<std::int32_t>(world);
      symm_test::check_atomic_nbi_model<std::uint32_t>(world);
      symm_test::check_atomic_nbi_model<long long>(world);
      symm_test::check_atomic_nbi_model<unsigned long long>(world);
      symm_test::check_atomic_nbi_model<float>(world);
      symm_test::check_atomic_nbi_model<double>(world);
      symm_test::check_value_future_rules(world);
    }));
  }
}

TEST_CASE("host fetch_add on the CUDA backend from every PE, beside a kernel's adds: the counter ends exact",
          "[gpu][atomics][host]") {
  for (int n : {2, 4}) {
    CAPTURE(n);
    REQUIRE_NOTHROW(symm_gpu_test::on_gpu_pes(n, [](symm::world& world) {
      const int me = world.my_pe(), n_pes = world.n_pes();
      constexpr unsigned per_pe = 480, blocks = 4, threads = 64, per_thread = 16; // 480: a multiple of 2, 3, 4, 8
      symm::scalar<unsigned long long> counter(world);
      symm::scalar<std::uint32_t> spread(world);
      symm::array<std::uint64_t> all(world, static_cast<std::size_t>(per_pe) * static_cast<std::size_t>(n_pes));
      pe_stream s;
      zero(s.stream, &counter.local());
      zero(s.stream, &spread.local());
      GPU_CHECK(cudaStreamSynchronize(s.stream));
      world.barrier();
      device_adds_kernel<<<blocks, threads, 0, s.stream>>>(counter, per_thread); // runs while the host adds
      GPU_CHECK(cudaGetLastError());
      std::vector<std::uint64_t> olds(per_pe);
      for (unsigned k = 0; k < per_pe; ++k) {
        auto order = (k & 1) ? cuda::memory_order_relaxed : cuda::memory_order_seq_cst;
        olds[k] = symm::remote(counter, 0).fetch_add(1, order);
        symm::remote(spread, static_cast<int>((static_cast<unsigned>(me) + k) % static_cast<unsigned>(n_pes))).add(1u);
      }
      GPU_CHECK(cudaStreamSynchronize(s.stream));
      symm::remote(all, 0).subspan(static_cast<std::size_t>(me) * per_pe, per_pe) = olds; // gather on PE 0
      world.barrier();
      const unsigned long long total =
          static_cast<unsigned long long>(n_pes) * (per_pe + blocks * threads * per_thread);
      PE_REQUIRE_EQ(symm::remote(counter, 0).load(), total);
      PE_REQUIRE_EQ(symm::remote(spread, me).load(cuda::memory_order_acquire), per_pe); // an equal share each
      if (me == 0) {
        auto every = symm_gpu_test::local_to_host(all);
        std::sort(every.begin(), every.end());
        for (std::size_t i = 0; i < every.size(); ++i) {
          PE_REQUIRE(every[i] < total);
          if (i > 0) PE_REQUIRE(every[i] != every[i - 1]); // each old value returned once
        }
      }
      world.barrier();
    }));
  }
}

TEST_CASE("NVSHMEM's ring broadcast: a PE writes and reads its own signal word, in device and host code",
          "[gpu]["
          "signal]") {
  CAPTURE(symm_test::seed());
  for (int n : {2, 4}) {
    CAPTURE(n);
    REQUIRE_NOTHROW(symm_gpu_test::on_gpu_pes(n, [](symm::world& world) {
      const int me = world.my_pe(), n_pes = world.n_pes();
      constexpr std::size_t count = 4096;
      symm::array<std::uint32_t> data(world, count);
      symm::signal psync(world);
      pe_stream s;
      std::vector<std::uint32_t> values(count);
      for (int round = 1; round <= 8; ++round) {
        const int root = round % n_pes;
        const auto r = static_cast<std::uint64_t>(round);
        if (me == root) {
          for (std::size_t i = 0; i < count; ++i)
            values[i] = payload(symm_test::seed(), root, r, i);
          GPU_CHECK(cudaMemcpyAsync(data.local().data(), values.data(), count * sizeof(std::uint32_t),
                                    cudaMemcpyHostToDevice, s.stream));
        }
        ring_bcast_kernel<<<1, 1, 0, s.stream>>>(data, psync, root, me, n_pes);
        GPU_CHECK(cudaGetLastError());
        GPU_CHECK(cudaStreamSynchronize(s.stream));
        auto got = symm_gpu_test::host_copy_of(data.local().data(), count);
        for (std::size_t i = 0; i < count; ++i) {
          if (got[i] != payload(symm_test::seed(), root, r, i)) {
            PE_REQUIRE_EQ(got[i], payload(symm_test::seed(), root, r, i));
          }
        }
        PE_REQUIRE_EQ(symm::signal_fetch(psync), std::uint64_t{0}); // lowered again by the kernel
        world.barrier(); // the next round's root writes its data after every PE has read this round's
      }
      // Host code: the word is GPU memory here, written through its pe_ref and read with signal_fetch.
      const auto mine = static_cast<std::uint64_t>(me) + 7;
      symm::remote(psync.ref().word(), me)[0].store(mine);
      PE_REQUIRE_EQ(symm::signal_fetch(psync), mine);
      PE_REQUIRE_EQ(symm::signal_wait_until(psync, symm::cmp::eq, mine), mine);
      world.barrier();
    }));
  }
}

TEST_CASE("signal_update without data: set after a p and add into one signal, in device and host code",
          "[gpu]["
          "signal]") {
  for (int n : {2, 4}) {
    CAPTURE(n);
    REQUIRE_NOTHROW(symm_gpu_test::on_gpu_pes(n, [](symm::world& world) {
      const int me = world.my_pe(), n_pes = world.n_pes(), left = (me + n_pes - 1) % n_pes;
      symm::array<std::uint64_t> box(world, 1);
      symm::signal ready(world), count(world);
      pe_stream s;
      std::uint64_t* seen = nullptr;
      GPU_CHECK(cudaMallocHost(&seen, sizeof(std::uint64_t)));
      *seen = 0;
      signal_update_kernel<<<1, 1, 0, s.stream>>>(box, ready, count, me, n_pes, seen);
      GPU_CHECK(cudaGetLastError());
      GPU_CHECK(cudaStreamSynchronize(s.stream));
      const std::uint64_t got = *seen;
      GPU_CHECK(cudaFreeHost(seen));
      PE_REQUIRE_EQ(got, 1000 + static_cast<std::uint64_t>(left));
      const auto total = static_cast<std::uint64_t>(n_pes * (n_pes + 1) / 2);
      if (me == 0) PE_REQUIRE_EQ(symm::signal_wait_until(count, symm::cmp::eq, total), total);
      world.barrier();
      // Host code on the GPU heap: set is a stream write, add symm's one-thread kernel.
      symm::signal_update(symm::remote(ready, (me + 1) % n_pes), 5, symm::signal_op::set);
      symm::signal_update(symm::remote(count, 0), 1, symm::signal_op::add);
      PE_REQUIRE_EQ(symm::signal_wait_until(ready, symm::cmp::eq, 5), std::uint64_t{5});
      if (me == 0) {
        const auto more = total + static_cast<std::uint64_t>(n_pes);
        PE_REQUIRE_EQ(symm::signal_wait_until(count, symm::cmp::eq, more), more);
      }
      world.barrier();
    }));
  }
}

TEST_CASE("host signal_wait_until and signal_fetch on the CUDA backend while a peer's kernel does put_signal",
          "[gpu][signal][host]") {
  CAPTURE(symm_test::seed());
  for (int n : {2, 4}) {
    CAPTURE(n);
    REQUIRE_NOTHROW(symm_gpu_test::on_gpu_pes(n, [](symm::world& world) {
      const int me = world.my_pe(), n_pes = world.n_pes();
      const int right = (me + 1) % n_pes, left = (me + n_pes - 1) % n_pes;
      constexpr int rounds = 40;
      const std::size_t max = std::size_t{1} << 14;
      symm::array<std::uint32_t> buf(world, max), src(world, max);
      symm::signal ready(world);
      symm::scalar<unsigned long long> ack(world);
      pe_stream s;
      zero(s.stream, &ack.local());
      GPU_CHECK(cudaStreamSynchronize(s.stream));
      // Loading symm's host-side kernels and taking their pinned words can wait for the kernels running in the
      // context: do it before the PEs' kernels wait for each other (a world prepares it when the CUDA backend calls
      // detail::prepare_host_side_kernels; this keeps the test independent of that).
      PE_REQUIRE_EQ(symm::remote(ack, me).load(), 0u);
      PE_REQUIRE_EQ(symm::wait_until(ack, symm::cmp::eq, 0ull), 0u);
      world.barrier();
      PE_REQUIRE_EQ(symm::signal_fetch(ready), 0u);
      world.barrier(); // no PE's producer may signal before every PE has looked (its left neighbour's could)
      signal_producer_kernel<<<1, 256, 0, s.stream>>>(buf, src, ready, ack, symm_test::seed(), me, right, rounds);
      GPU_CHECK(cudaGetLastError());
      for (int r = 1; r <= rounds; ++r) {
        const auto round = static_cast<std::uint64_t>(r);
        std::uint64_t seen = 0;
        switch (r % 5) { // the stream-wait comparisons, the polled ones, and signal_fetch in a loop
          case 0: seen = symm::signal_wait_until(ready, symm::cmp::ge, round); break;
          case 1: seen = symm::signal_wait_until(ready, symm::cmp::eq, round); break;
          case 2: seen = symm::signal_wait_until(ready, symm::cmp::gt, round - 1); break;
          case 3: seen = symm::signal_wait_until(ready, symm::cmp::ne, round - 1); break;
          default:
            while ((seen = symm::signal_fetch(ready)) < round)
              std::this_thread::yield();
        }
        PE_REQUIRE_EQ(seen, round); // the producer waits for our ack, so it cannot be ahead
        const std::size_t size = message_size(symm_test::seed(), left, round, max);
        auto got = symm_gpu_test::host_copy_of(buf.local().data(), size);
        for (std::size_t i = 0; i < size; ++i) {
          if (got[i] != payload(symm_test::seed(), left, round, i)) {
            PE_REQUIRE_EQ(got[i], payload(symm_test::seed(), left, round, i));
          }
        }
        symm::remote(ack, left).store(round, cuda::memory_order_release); // a host atomic into the producer's heap
      }
      GPU_CHECK(cudaStreamSynchronize(s.stream));
      PE_REQUIRE_EQ(symm::signal_fetch(ready), static_cast<std::uint64_t>(rounds));
      world.barrier();
    }));
  }
}

TEST_CASE("host wait_until and pe_ref load/store (CUDA backend) while a kernel fills the GPU", "[gpu][wait][host]") {
  REQUIRE_NOTHROW(symm_gpu_test::on_gpu_pes(2, [](symm::world& world) {
    const int me = world.my_pe();
    symm::scalar<unsigned> arrived(world), go(world);
    pe_stream s;
    zero(s.stream, &arrived.local());
    zero(s.stream, &go.local());
    GPU_CHECK(cudaStreamSynchronize(s.stream));
    world.barrier();
    int device = 0, sms = 0, per_sm = 0;
    GPU_CHECK(cudaGetDevice(&device));
    GPU_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    GPU_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fill_gpu_kernel, 32, 0));
    PE_REQUIRE(per_sm >= 1);
    const auto blocks = static_cast<unsigned>(sms * per_sm);
    fill_gpu_kernel<<<blocks, 32, 0, s.stream>>>(arrived, go);
    GPU_CHECK(cudaGetLastError());
    // No kernel of this process can start until the blocks end, and they wait for this thread: the wait, the load
    // and the store must not need one (copies, a stream write). Each PE releases only its own blocks, so the PEs'
    // grids (sharing the GPU) need no more than one of their blocks running to finish.
    const unsigned seen = symm::wait_until(arrived, symm::cmp::ge, 1u);
    PE_REQUIRE(seen >= 1u);
    PE_REQUIRE(symm::remote(arrived, me).load(cuda::memory_order_acquire) >= seen);
    symm::remote(go, me).store(1u, cuda::memory_order_release);
    GPU_CHECK(cudaStreamSynchronize(s.stream));
    PE_REQUIRE_EQ(symm::remote(arrived, me).load(), blocks);
    PE_REQUIRE_EQ(symm::remote(go, me).load(), 1u);
    world.barrier();
  }));
}

TEST_CASE("host waits on GPU memory (CUDA backend): every comparison, 4- and 8-byte words, the span forms",
          "[gpu][wait][host]") {
  REQUIRE_NOTHROW(symm_gpu_test::on_gpu_pes(3, [](symm::world& world) {
    const int me = world.my_pe(), n_pes = world.n_pes();
    const int right = (me + 1) % n_pes;
    constexpr int rounds = 12;
    symm::scalar<std::int32_t> flag32(world);
    symm::scalar<std::uint64_t> flag64(world);
    symm::array<unsigned long long> slots(world, static_cast<std::size_t>(n_pes));
    world.barrier();
    // A token ring through host atomics: each PE waits on its own words (GPU memory) with a different comparison.
    for (int r = 1; r <= rounds; ++r) {
      const auto r64 = (static_cast<std::uint64_t>(r) << 40) | static_cast<std::uint64_t>(r);
      if (me == 0) {
        symm::remote(flag32, right).store(r);
        symm::remote(flag64, right).store(r64);
      }
      const symm::cmp c32[] = {symm::cmp::eq, symm::cmp::ge, symm::cmp::gt, symm::cmp::ne};
      const symm::cmp c64[] = {symm::cmp::ge, symm::cmp::eq, symm::cmp::ne, symm::cmp::gt};
      const symm::cmp cmp32 = c32[r % 4], cmp64 = c64[r % 4];
      const std::int32_t v32 = cmp32 == symm::cmp::eq || cmp32 == symm::cmp::ge ? r : r - 1;
      const std::uint64_t v64 =
          cmp64 == symm::cmp::eq || cmp64 == symm::cmp::ge
              ? r64
              : ((std::uint64_t(r) - 1) << 40) | std::uint64_t(r - 1);
      PE_REQUIRE_EQ(symm::wait_until(flag32, cmp32, v32), r);
      PE_REQUIRE_EQ(symm::wait_until(flag64, cmp64, v64), r64);
      PE_REQUIRE(symm::test(flag32, symm::cmp::eq, r));
      PE_REQUIRE(!symm::test(flag32, symm::cmp::lt, r));
      PE_REQUIRE(symm::test(&flag64.local(), symm::cmp::le, r64));
      if (me != 0) {
        symm::remote(flag32, right).store(r);
        symm::remote(flag64, right).store(r64);
      }
    }
    world.barrier(); // every PE has checked the last round before its word comes down
    // Lower bounds, polled: lt and le wait for a word to come down.
    symm::remote(flag32, right).store(-5);
    PE_REQUIRE_EQ(symm::wait_until(flag32, symm::cmp::lt, 0), -5);
    PE_REQUIRE_EQ(symm::wait_until(flag32, symm::cmp::le, -5), -5);
    world.barrier();
    // The span forms over words every other PE stores into (my own slot left out).
    for (int p = 0; p < n_pes; ++p) {
      if (p != me) symm::remote(slots, p)[static_cast<std::size_t>(me)].store(7);
    }
    std::vector<int> status(static_cast<std::size_t>(n_pes), 0);
    status[static_cast<std::size_t>(me)] = 1;
    const cuda::std::span<const int> mask(status.data(), status.size());
    std::vector<std::size_t> indices(static_cast<std::size_t>(n_pes));
    const cuda::std::span<std::size_t> idx(indices.data(), indices.size());
    symm::wait_until_all(slots.local(), symm::cmp::eq, 7ull, mask);
    const std::size_t any = symm::wait_until_any(slots.local(), symm::cmp::eq, 7ull, mask);
    PE_REQUIRE(any < static_cast<std::size_t>(n_pes) && any != static_cast<std::size_t>(me));
    PE_REQUIRE_EQ(symm::wait_until_some(slots.local(), idx, symm::cmp::ge, 7ull, mask),
                  static_cast<std::size_t>(n_pes - 1));
    PE_REQUIRE(symm::test_all(slots.local(), symm::cmp::eq, 7ull, mask));
    PE_REQUIRE(!symm::test_all(slots.local(), symm::cmp::eq, 7ull)); // my own slot is 0
    PE_REQUIRE_EQ(symm::test_any(slots.local(), symm::cmp::gt, 7ull), symm::no_index);
    PE_REQUIRE_EQ(symm::test_some(slots.local(), idx, symm::cmp::eq, 0ull), 1u);
    PE_REQUIRE_EQ(indices[0], static_cast<std::size_t>(me));
    // The _vector forms: 7 expected of every other PE's slot, 0 of my own, 8 of none.
    std::vector<unsigned long long> values(static_cast<std::size_t>(n_pes), 7ull);
    values[static_cast<std::size_t>(me)] = 0;
    symm::wait_until_all_vector(slots.local(), symm::cmp::eq, values);
    PE_REQUIRE(symm::test_all_vector(slots.local(), symm::cmp::eq, values));
    PE_REQUIRE_EQ(symm::wait_until_some_vector(slots.local(), idx, symm::cmp::eq, values),
                  static_cast<std::size_t>(n_pes));
    values[static_cast<std::size_t>(me)] = 8;
    PE_REQUIRE_EQ(symm::wait_until_any_vector(slots.local(), symm::cmp::lt, values), static_cast<std::size_t>(me));
    PE_REQUIRE_EQ(symm::test_any_vector(slots.local(), symm::cmp::ne, values, mask), symm::no_index);
    PE_REQUIRE_EQ(symm::test_some_vector(slots.local(), idx, symm::cmp::lt, values), 1u);
    // Device memory outside the heap is waited on the same way.
    int* plain_device = nullptr;
    GPU_CHECK(cudaMalloc(&plain_device, sizeof(int)));
    GPU_CHECK(cudaMemset(plain_device, 0, sizeof(int)));
    GPU_CHECK(cudaDeviceSynchronize());
    PE_REQUIRE(symm::test(plain_device, symm::cmp::eq, 0));
    PE_REQUIRE_EQ(symm::wait_until(plain_device, symm::cmp::ge, 0), 0);
    GPU_CHECK(cudaFree(plain_device));
    world.barrier();
  }));
}

TEST_CASE("host wait_until_for / signal_wait_until_for on GPU memory (CUDA backend): timed_out, then ok and the value",
          "[gpu][wait][host][bounded]") {
  using namespace std::chrono_literals;
  REQUIRE_NOTHROW(symm_gpu_test::on_gpu_pes(2, [](symm::world& world) {
    const int me = world.my_pe(), right = (me + 1) % world.n_pes();
    symm::scalar<std::int32_t> flag32(world);
    symm::scalar<std::uint64_t> flag64(world);
    symm::signal sig(world);
    symm::remote(flag32, me).store(0);
    symm::remote(flag64, me).store(0);
    symm::remote(sig.ref().word(), me)[0].store(0);
    world.barrier();
    // Nobody writes: each form ends at its deadline, after at least the timeout (copies of the word until then).
    const auto timed = [](auto&& wait) {
      const auto start = std::chrono::steady_clock::now();
      auto got = wait();
      const auto took = std::chrono::steady_clock::now() - start;
      PE_REQUIRE(took >= 20ms);
      PE_REQUIRE(took < 5s);
      return got;
    };
    const auto r32 = timed([&] { return symm::wait_until_for(flag32, symm::cmp::eq, 1, 20ms); });
    PE_REQUIRE(r32.status == symm::wait_status::timed_out && r32.value == 0);
    const auto r64 = timed([&] { return symm::wait_until_for(&flag64.local(), symm::cmp::ne, 0, 20ms); });
    PE_REQUIRE(r64.status == symm::wait_status::timed_out && r64.value == 0);
    const auto rs = timed([&] { return symm::signal_wait_until_for(sig, symm::cmp::ge, 1, 20ms); });
    PE_REQUIRE(rs.status == symm::wait_status::timed_out && rs.value == 0);
    world.barrier();
    // The left neighbour's host stores satisfy the waits: ok, with the values stored.
    symm::remote(flag32, right).store(7);
    symm::remote(flag64, right).store(std::uint64_t{9} << 40);
    symm::remote(sig.ref().word(), right)[0].store(5);
    const auto a = symm::wait_until_for(flag32, symm::cmp::eq, 7, 30s);
    PE_REQUIRE(a.ok() && a.value == 7);
    const auto [status, seen] = symm::wait_until_for(flag64, symm::cmp::ge, std::uint64_t{9} << 40, 30s);
    PE_REQUIRE(status == symm::wait_status::ok && seen == std::uint64_t{9} << 40);
    const auto s = symm::signal_wait_until_for(sig, symm::cmp::ge, 5, 30s);
    PE_REQUIRE(s.ok() && s.value == 5);
    world.barrier();
  }));
}

TEST_CASE("a bounded host wait on GPU memory returns peer_failed when a PE dies", "[gpu][wait][bounded][failure]") {
  using namespace std::chrono_literals;
  // PE 0 reports through shared memory, which the forked PEs (and the forked child that runs the threads) share with
  // the test; it must see the death long before its 30 s deadline.
  auto* noticed = static_cast<std::atomic<int>*>(
      ::mmap(nullptr, sizeof(std::atomic<int>), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  REQUIRE(noticed != MAP_FAILED);
  for (int kind = 0; kind < 3; ++kind) {
    for (auto mode : {symm::launch_mode::threads, symm::launch_mode::processes}) {
      if (mode == symm::launch_mode::threads && !symm_gpu_test::pes_as_threads) continue;
      CAPTURE(kind, mode == symm::launch_mode::threads);
      noticed->store(0);
      auto body = [kind, mode, noticed](symm::world& world) {
        symm::scalar<std::int32_t> flag32(world);
        symm::scalar<std::uint64_t> flag64(world);
        symm::signal sig(world);
        world.barrier();
        if (world.my_pe() == 1) {
          if (mode == symm::launch_mode::processes) ::_exit(0); // vanishes, as in a crash
          throw std::runtime_error("PE 1 gives up");            // its world marks it failed
        }
        const auto start = std::chrono::steady_clock::now();
        symm::wait_status status = symm::wait_status::ok;
        switch (kind) {
          case 0: status = symm::wait_until_for(flag32, symm::cmp::eq, 1, 30s).status; break;
          case 1: status = symm::wait_until_for(flag64, symm::cmp::ne, 0, 30s).status; break;
          default: status = symm::signal_wait_until_for(sig, symm::cmp::ge, 1, 30s).status;
        }
        if (status == symm::wait_status::peer_failed && std::chrono::steady_clock::now() - start < 10s) {
          noticed->store(1);
        }
      };
      // The job fails either way (PE 1 did); what matters is how PE 0's wait ended.
      symm_gpu_test::run_failing_job(2, mode, body);
      REQUIRE(noticed->load() == 1);
    }
  }
  ::munmap(noticed, sizeof(std::atomic<int>));
}

//! Every thread of the grid gives up at once, as the waits of a deadlocked kernel would, into `probe` (a trap record
//! of the test's) instead of trapping: exactly one may write it. Thread 0 of block 0 also reports where the heap's
//! header leads a device wait of this PE: its world's own trap record (`found`).
__global__ void
trap_record_kernel(symm::scalar_ref<int> flag, std::uint32_t* claim, symm::detail::wait_trap_record* probe,
                   symm::detail::wait_trap_record** found, unsigned* writers) {
  const std::byte* heap = symm::detail::heap_base_of(&flag.local(), flag.element().offset());
  if (blockIdx.x == 0 && threadIdx.x == 0) *found = symm::detail::wait_trap_record_of(heap);
  if (symm::detail::record_wait_trap(claim, probe, symm::detail::wait_trap_reason::count_deadlock, "symm::sync_all",
                                     flag.element().my_pe(), 1 - flag.element().my_pe(), 20000, 41, 42)) {
    atomicAdd(writers, 1u);
  }
}

TEST_CASE("a device wait that gives up leaves its trap record in host memory: one writer, every field, the world's "
          "record in the heap's header",
          "[gpu][wait][failure]") {
  REQUIRE_NOTHROW(symm_gpu_test::on_gpu_pes(2, [](symm::world& world) {
    symm::scalar<int> flag(world, {.zeroed = true});
    pe_stream s;
    symm::detail::wait_trap_record* probe = nullptr;
    GPU_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&probe), sizeof(*probe), cudaHostAllocMapped));
    std::memset(static_cast<void*>(probe), 0, sizeof(*probe));
    symm::detail::wait_trap_record* probe_on_device = nullptr;
    GPU_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&probe_on_device), probe, 0));
    symm::detail::wait_trap_record** found = nullptr;
    unsigned* writers = nullptr;
    std::uint32_t* claim = nullptr;
    GPU_CHECK(cudaMalloc(&claim, sizeof(*claim)));
    GPU_CHECK(cudaMemset(claim, 0, sizeof(*claim)));
    GPU_CHECK(cudaMallocManaged(&found, sizeof(*found)));
    GPU_CHECK(cudaMallocManaged(&writers, sizeof(*writers)));
    *found = nullptr;
    *writers = 0;
    trap_record_kernel<<<4, 128, 0, s.stream>>>(flag, claim, probe_on_device, found, writers);
    GPU_CHECK(cudaGetLastError());
    GPU_CHECK(cudaStreamSynchronize(s.stream));
    const int me = world.my_pe();
    PE_REQUIRE_EQ(*writers, 1u);
    PE_REQUIRE_EQ(probe->state, static_cast<std::uint32_t>(symm::detail::wait_trap_state::written));
    PE_REQUIRE_EQ(probe->reason, static_cast<std::uint32_t>(symm::detail::wait_trap_reason::count_deadlock));
    PE_REQUIRE_EQ(probe->pe, me);
    PE_REQUIRE_EQ(probe->peer, 1 - me);
    PE_REQUIRE(probe->block < 4u);
    PE_REQUIRE(probe->thread < 128u);
    PE_REQUIRE_EQ(probe->seen, 41u);
    PE_REQUIRE_EQ(probe->wanted, 42u);
    PE_REQUIRE_EQ(probe->timeout_ms, 20000u);
    PE_REQUIRE_EQ(std::string(probe->what), std::string("symm::sync_all"));
    PE_REQUIRE_EQ(probe->failure_code, 0u); // the wait writes nothing of the host's
    // The world's record: the one a device wait of this PE finds through any view of the heap.
    symm::detail::wait_trap_record* world_record = world.state()->cuda()->trap_record();
    PE_REQUIRE(world_record != nullptr);
    void* world_record_on_device = nullptr;
    GPU_CHECK(cudaHostGetDevicePointer(&world_record_on_device, world_record, 0));
    PE_REQUIRE(static_cast<void*>(*found) == world_record_on_device);
    PE_REQUIRE(world.state()->cuda()->failure_word() == &world_record->failure_code);
    PE_REQUIRE_EQ(world_record->state, static_cast<std::uint32_t>(symm::detail::wait_trap_state::free));
    GPU_CHECK(cudaFree(claim));
    GPU_CHECK(cudaFree(found));
    GPU_CHECK(cudaFree(writers));
    GPU_CHECK(cudaFreeHost(probe));
    world.barrier();
  }));
}

//! Thread 0 of PE 0: a bounded wait that only a dead peer's failure can end before its 10 s (nobody writes the word);
//! how it ended goes to `status` (a wait_status, as an int).
__global__ void dead_peer_wait_kernel(symm::scalar_ref<int> flag, symm::signal_ref sig, int kind, int* status) {
  if (threadIdx.x != 0) return;
  const symm::wait_status s =
      kind == 0 ? symm::wait_until_for(flag, symm::cmp::eq, 1, cuda::std::chrono::seconds(10)).status
                : symm::signal_wait_until_for(sig, symm::cmp::ge, 1, cuda::std::chrono::seconds(10)).status;
  *status = static_cast<int>(s);
}

TEST_CASE("a kernel's bounded wait returns peer_failed within 100 ms of a peer's death (the failure word)",
          "[gpu][wait][bounded][failure]") {
  // PE 0's kernel waits (wait_until_for on a scalar_ref, signal_wait_until_for) while the PEs meet in a host barrier;
  // then PE 1 dies (processes: _exit, as in a crash; threads: its world marks it failed). PE 0's failure
  // monitor (SYMM_FAILURE_POLL_MS, 5 ms) sees it and writes the failure word, which the wait reads every 1024 polls:
  // the kernel ends with peer_failed, measured on the host from the barrier's end to the stream's. The result goes
  // through shared memory, which the forked PEs (and the forked child that runs the threads) share with the test.
  auto* result = static_cast<std::atomic<long long>*>(
      ::mmap(nullptr, sizeof(std::atomic<long long>), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  REQUIRE(result != MAP_FAILED);
  for (int kind = 0; kind < 2; ++kind) {
    for (auto mode : {symm::launch_mode::processes, symm::launch_mode::threads}) {
      if (mode == symm::launch_mode::threads && !symm_gpu_test::pes_as_threads) continue;
      CAPTURE(kind, mode == symm::launch_mode::threads);
      result->store(0);
      auto body = [kind, mode, result](symm::world& world) {
        symm::scalar<int> flag(world, {.zeroed = true});
        symm::signal sig(world);
        pe_stream s;
        int* status = nullptr;
        GPU_CHECK(cudaMalloc(&status, sizeof(int)));
        GPU_CHECK(cudaMemset(status, 0xff, sizeof(int)));
        GPU_CHECK(cudaDeviceSynchronize());
        world.barrier();
        if (world.my_pe() == 0) {
          dead_peer_wait_kernel<<<1, 32, 0, s.stream>>>(flag, sig, kind, status);
          GPU_CHECK(cudaGetLastError());
        }
        world.barrier(); // PE 0's kernel waits meanwhile
        if (world.my_pe() == 1) {
          if (mode == symm::launch_mode::processes) ::_exit(0); // vanishes
          // Marked failed at once, as a PE whose own error ends it: an exception alone would first release the
          // scalar and the signal, collectively, waiting for PE 0, which is in no host wait but in the stream's.
          world.state()->mark_failed("PE 1 gives up");
          throw std::runtime_error("PE 1 gives up");
        }
        const auto start = std::chrono::steady_clock::now();
        GPU_CHECK(cudaStreamSynchronize(s.stream));
        const auto waited =
            std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count();
        int ended = -1;
        GPU_CHECK(cudaMemcpy(&ended, status, sizeof(int), cudaMemcpyDeviceToHost));
        GPU_CHECK(cudaFree(status));
        // > 0: the microseconds it took (at least 1); < 0: the wait ended otherwise (-1 - its status)
        result->store(ended == static_cast<int>(symm::wait_status::peer_failed) ? waited + 1 : -1 - ended);
      };
      // The job fails either way (PE 1 did); what matters is how PE 0's wait ended.
      symm_gpu_test::run_failing_job(2, mode, body);
      const long long got = result->load();
      CAPTURE(got);
      REQUIRE(got > 0);           // peer_failed, not timed_out (-2) or ok (-1)
      REQUIRE(got - 1 < 100'000); // microseconds: within 100 ms, not the 10 s deadline
    }
  }
  ::munmap(result, sizeof(std::atomic<long long>));
}

TEST_CASE("a host wait on GPU memory ends with peer_failed when the PE it waits for dies", "[gpu][wait][failure]") {
  for (int kind = 0; kind < (symm_gpu_test::pes_as_threads ? 4 : 0); ++kind) {
    CAPTURE(kind);
    // Threads (in a forked child, which keeps this process free of CUDA): PE 1 leaves by an exception, and its world
    // marks it failed; PE 0 must notice while it waits, on a stream wait (eq, ge) or polling (ne, any).
    REQUIRE_NOTHROW(symm::launch(1, [kind] {
      std::atomic<int> noticed{0};
      auto body = [&](symm::world& world) {
        symm::scalar<std::int32_t> flag32(world);
        symm::scalar<std::uint64_t> flag64(world);
        symm::signal sig(world);
        world.barrier();
        if (world.my_pe() == 1) throw std::runtime_error("PE 1 gives up");
        try {
          switch (kind) {
            case 0: symm::wait_until(flag32, symm::cmp::eq, 1); break;
            case 1: symm::wait_until(flag64, symm::cmp::ne, 0); break;
            case 2: symm::signal_wait_until(sig, symm::cmp::ge, 1); break;
            default: (void) symm::wait_until_any(cuda::std::span<std::int32_t>(&flag32.local(), 1), symm::cmp::ne, 0);
          }
        } catch (const symm::error& e) {
          if (e.code() == symm::errc::peer_failed) noticed = 1;
          throw;
        }
      };
      try {
        symm::launch(2, body, {.mode = symm::launch_mode::threads, .world = symm_gpu_test::gpu_options()});
      } catch (const std::exception& e) {
        if (std::string(e.what()).find("PE 1 gives up") == std::string::npos) throw;
      }
      if (noticed != 1) throw std::runtime_error("PE 0's wait did not end with errc::peer_failed");
    }));
  }
  // Processes: PE 1 vanishes without a word (as in a crash); PE 0 notices that its process is gone.
  auto vanish = [](symm::world& world) {
    symm::signal sig(world);
    world.barrier();
    if (world.my_pe() == 1) ::_exit(0);
    (void) symm::signal_wait_until(sig, symm::cmp::ge, 1);
  };
  try {
    symm::launch(2, vanish, {.mode = symm::launch_mode::processes, .world = symm_gpu_test::gpu_options()});
    FAIL("the launch should have failed");
  } catch (const symm::error& e) {
    REQUIRE(std::string(e.what()).find("PE 0") != std::string::npos);
  }
}
