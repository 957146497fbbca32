// expect-compile: ok
// Positive control for the atomic_* and wait_* tests: every atomic on the types that take it, load on pe_ref<const T>,
// waits on 4- and 8-byte integers, signals; std::memory_order as the atomics' order.
#include <symm/pe_ref.hpp>
#include <symm/signal.hpp>
#include <symm/wait.hpp>

#include <atomic>
#include <cstdint>

template <class T>
T integer_ops(const symm::pe_ref<T>& r) {
  T e = 0;
  r.store(1, cuda::memory_order_release);
  (void) r.compare_exchange(e, 2, cuda::memory_order_acq_rel);
  r.add(1);
  r.sub(1);
  r.bit_and(1);
  r.bit_or(1);
  r.bit_xor(1);
  return r.load(cuda::memory_order_acquire) + r.exchange(3) + r.fetch_add(1) + r.fetch_sub(1) + r.fetch_and(1) +
         r.fetch_or(1) + r.fetch_xor(1) + r.fetch_min(1) + r.fetch_max(1);
}

// std::memory_order works wherever cuda::memory_order does, and names the same order.
template <class T>
T std_order_ops(const symm::pe_ref<T>& r) {
  T e = 0;
  r.store(1, std::memory_order_release);
  (void) r.compare_exchange(e, 2, std::memory_order_acq_rel);
  r.add(1, std::memory_order_relaxed);
  return r.load(std::memory_order_acquire) + r.fetch_add(1, std::memory_order_seq_cst) +
         r.exchange(3, std::memory_order_relaxed);
}
constexpr bool same_order(std::memory_order s, cuda::memory_order c) {
  return static_cast<cuda::memory_order>(symm::memory_order_arg(s)) == c;
}
static_assert(same_order(std::memory_order_relaxed, cuda::memory_order_relaxed));
static_assert(same_order(std::memory_order_consume, cuda::memory_order_consume));
static_assert(same_order(std::memory_order_acquire, cuda::memory_order_acquire));
static_assert(same_order(std::memory_order_release, cuda::memory_order_release));
static_assert(same_order(std::memory_order_acq_rel, cuda::memory_order_acq_rel));
static_assert(same_order(std::memory_order_seq_cst, cuda::memory_order_seq_cst));
static_assert(static_cast<cuda::memory_order>(symm::memory_order_arg(cuda::memory_order_acquire)) ==
              cuda::memory_order_acquire);

template <class T>
T float_ops(const symm::pe_ref<T>& r) {
  T e = 0;
  r.store(1);
  (void) r.compare_exchange(e, 2);
  r.add(1);
  r.sub(1);
  return r.load() + r.exchange(3) + r.fetch_add(1) + r.fetch_sub(1, cuda::memory_order_relaxed);
}

int all(const symm::pe_ref<int>& a, const symm::pe_ref<unsigned>& b, const symm::pe_ref<long>& c,
        const symm::pe_ref<unsigned long long>& d, const symm::pe_ref<std::int64_t>& e, const symm::pe_ref<float>& f,
        const symm::pe_ref<double>& g, const symm::pe_ref<const int>& h, int& word, std::uint64_t& word64,
        const symm::pe_span<int>& data, const symm::pe_signal& sig, const symm::signal_ref& mine) {
  int v[1] = {0};
  symm::put_signal(data, v, sig, 1, symm::signal_op::add);
  (void) symm::signal_wait_until(mine, symm::cmp::ge, 1);
  (void) std_order_ops(c);
  (void) std_order_ops(g);
  return integer_ops(a) +
         static_cast<int>(
             integer_ops(b) + integer_ops(c) + integer_ops(d) + integer_ops(e) + float_ops(f) + float_ops(g)) +
         h.load() + symm::wait_until(word, symm::cmp::ne, 0) +
         static_cast<int>(symm::wait_until(word64, symm::cmp::eq, 1)) + symm::test(&word, symm::cmp::lt, 3);
}
