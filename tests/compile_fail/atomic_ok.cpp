// expect-compile: ok
// Positive control for the atomic_* and wait_* tests: every atomic on the types that take it, load on pe_ref<const T>,
// waits on 4- and 8-byte integers, signals.
#include <symm/pe_ref.hpp>
#include <symm/signal.hpp>
#include <symm/wait.hpp>

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
  return integer_ops(a) +
         static_cast<int>(
             integer_ops(b) + integer_ops(c) + integer_ops(d) + integer_ops(e) + float_ops(f) + float_ops(g)) +
         h.load() + symm::wait_until(word, symm::cmp::ne, 0) +
         static_cast<int>(symm::wait_until(word64, symm::cmp::eq, 1)) + symm::test(&word, symm::cmp::lt, 3);
}
