// symm/atomic_nbi.hpp: non-blocking remote atomics and reads of one element from host code, which return futures
// (OpenSHMEM's shmem_atomic_*_nbi, shmem_g with a future):
//
//   symm::future<long> ticket = symm::fetch_add_nbi(symm::remote(counter, 0), 1L);   // starts it
//   symm::future<> done = symm::add_nbi(symm::remote(hits, 1), 1L);                  // non-fetching: future<>
//   symm::future<float> x = symm::get_nbi(symm::remote(grid, 2)[7]);                // a g that does not wait
//   long mine = ticket.get();                                                         // waits, then the old value
//
// | call                                              | returns    | blocking twin (pe_ref member)         |
// | ------------------------------------------------- | ---------- | ------------------------------------- |
// | get_nbi(ref)                                      | future<T>  | ref.get(), T(ref)                     |
// | load_nbi(ref, order)                              | future<T>  | ref.load(order)                       |
// | store_nbi(ref, v, order)                          | future<>   | ref.store(v, order)                   |
// | exchange_nbi(ref, v, order)                       | future<T>  | ref.exchange(v, order)                |
// | compare_exchange_nbi(ref, expected, v, order)     | future<T>  | ref.compare_exchange(...): the value  |
// |                                                   | (old value)| seen; it stored iff that == expected  |
// | fetch_add/sub/and/or/xor/min/max_nbi(ref, v, o)   | future<T>  | ref.fetch_add(v, o), ...              |
// | add/sub/bit_and/bit_or/bit_xor_nbi(ref, v, o)     | future<>   | ref.add(v, o), ...                    |
//
// The types and orders are those of the blocking atomics (symm/atomic.hpp); get_nbi takes any trivially copyable T of
// at most 8 bytes. Where they run:
// - host backend: the atomic (a CPU atomic on the shared mapping) or the read is done before the call returns, and
//   the future is ready at once: there is nothing to overlap;
// - CUDA and nvshmem backends: the same one-thread kernel, copy or stream write as the blocking form, enqueued on the
//   world's stream after its earlier host-issued work, without waiting; the value lands in pinned host memory that the
//   future owns. Many may be in flight at once, and a thread can issue a batch and collect the values later: the
//   blocking form pays a launch and a synchronisation per call, these one synchronisation per batch.
// As every future, dropping one never waits: quiet() (or a barrier) completes the operation, and a dropped
// value-returning future's value is lost. Host code only (a device atomic is one instruction: use the pe_ref members).
#pragma once

#include <symm/atomic.hpp>
#include <symm/detail/config.hpp>
#include <symm/detail/world_interface.hpp>
#include <symm/future.hpp>
#include <symm/pe_ref.hpp>

#include <cstdint>
#include <cstring>
#include <type_traits>

SYMM_BEGIN_NAMESPACE
namespace detail {

//! The future of an operation a GPU backend started and did not wait for.
template <class T>
future<T> pending_future(pending_value pending) {
  return future<T>(future<>(pending.done), std::move(pending.result));
}

//! The host backend's (and any world whose heap host code can reach): the blocking member, now.
template <atomic_op Op, class T>
std::remove_cv_t<T> atomic_now(const pe_ref<T>& ref, std::remove_cv_t<T> operand, std::remove_cv_t<T> expected,
                               cuda::memory_order order) {
  if constexpr (Op == atomic_op::load) return ref.load(order);
  else if constexpr (Op == atomic_op::store) return ref.store(operand, order), std::remove_cv_t<T>{};
  else if constexpr (Op == atomic_op::exchange) return ref.exchange(operand, order);
  else if constexpr (Op == atomic_op::compare_exchange) {
    std::remove_cv_t<T> seen = expected;
    (void) ref.compare_exchange(seen, operand, order);
    return seen; // the value seen: `expected` itself when it stored
  } else if constexpr (Op == atomic_op::add) return ref.fetch_add(operand, order);
  else if constexpr (Op == atomic_op::sub) return ref.fetch_sub(operand, order);
  else if constexpr (Op == atomic_op::bit_and) return ref.fetch_and(operand, order);
  else if constexpr (Op == atomic_op::bit_or) return ref.fetch_or(operand, order);
  else if constexpr (Op == atomic_op::bit_xor) return ref.fetch_xor(operand, order);
  else if constexpr (Op == atomic_op::min) return ref.fetch_min(operand, order);
  else return ref.fetch_max(operand, order);
}

//! Every nbi atomic: the type rules of its blocking twin, then now (host heap) or started on the world's stream.
template <atomic_op Op, class T>
future<std::remove_cv_t<T>> atomic_nbi(const pe_ref<T>& ref, std::remove_cv_t<T> operand,
                                       std::remove_cv_t<T> expected, cuda::memory_order order) {
  using value_type = std::remove_cv_t<T>;
  world_interface* world = ref.world();
  if (!heap_on_gpu(world->kind())) return future<value_type>(atomic_now<Op>(ref, operand, expected, order));
  return pending_future<value_type>(
      world->host_atomic_nbi(ref.address(), atomic_type_code_of<value_type>(), Op, atomic_bits(operand),
                             atomic_bits(expected)));
}

//! A non-fetching nbi atomic: the completion alone.
template <class T>
future<> completion_of(future<T>&& value) {
  if (value.ready()) return future<>(); // done already (the host backend): nothing to wait for
  struct value_completion final : completion {
    explicit value_completion(future<T>&& v) : value(std::move(v)) {}
    bool ready() override { return value.ready(); }
    void wait() override { value.wait(); }
    future<T> value;
  };
  return future<>(std::make_shared<value_completion>(std::move(value)));
}

template <class T>
constexpr void require_value_rules() {
  require_atomic_value<T>();
}
template <class T>
constexpr void require_integer_rules() {
  require_atomic_integer<T>();
  require_writable<T>();
}
template <class T>
constexpr void require_writable_value_rules() {
  require_atomic_value<T>();
  require_writable<T>();
}

} // namespace detail

//! A get of one element that does not wait: the element's value once the future is ready.
template <class T>
[[nodiscard]] future<std::remove_cv_t<T>> get_nbi(const pe_ref<T>& ref) {
  using value_type = std::remove_cv_t<T>;
  static_assert(sizeof(value_type) <= sizeof(std::uint64_t),
                "symm::get_nbi(pe_ref<T>): T of at most 8 bytes; for a larger element get_nbi into a buffer "
                "(symm::get_nbi(std::span(&x, 1), symm::remote(a, pe).subspan(i, 1)))");
  detail::world_interface* world = ref.world();
  if (!heap_on_gpu(world->kind())) return future<value_type>(ref.get());
  return detail::pending_future<value_type>(world->read_nbi(ref.address(), sizeof(value_type)));
}

//! Atomic read (shmem_atomic_fetch_nbi).
template <class T>
[[nodiscard]] future<std::remove_cv_t<T>> load_nbi(const pe_ref<T>& ref,
                                                   memory_order_arg order = cuda::memory_order_seq_cst) {
  detail::require_value_rules<T>();
  if constexpr (atomic_value<T>) return detail::atomic_nbi<detail::atomic_op::load>(ref, {}, {}, order);
  else return {};
}

//! Atomic write (shmem_atomic_set_nbi); the future completes when it is done.
template <class T>
[[nodiscard]] future<> store_nbi(const pe_ref<T>& ref, std::type_identity_t<std::remove_cv_t<T>> desired,
                                 memory_order_arg order = cuda::memory_order_seq_cst) {
  detail::require_writable_value_rules<T>();
  if constexpr (atomic_value<T> && !std::is_const_v<T>) {
    return detail::completion_of(detail::atomic_nbi<detail::atomic_op::store>(ref, desired, {}, order));
  } else {
    return {};
  }
}

//! Atomic swap (shmem_atomic_swap_nbi): the old value.
template <class T>
[[nodiscard]] future<std::remove_cv_t<T>> exchange_nbi(const pe_ref<T>& ref,
                                                       std::type_identity_t<std::remove_cv_t<T>> desired,
                                                       memory_order_arg order = cuda::memory_order_seq_cst) {
  detail::require_writable_value_rules<T>();
  if constexpr (atomic_value<T> && !std::is_const_v<T>) {
    return detail::atomic_nbi<detail::atomic_op::exchange>(ref, desired, {}, order);
  } else {
    return {};
  }
}

//! Atomic compare-and-swap (shmem_atomic_compare_swap_nbi): the value seen, which equals `expected` (bitwise) exactly
//! when `desired` was stored.
template <class T>
[[nodiscard]] future<std::remove_cv_t<T>>
compare_exchange_nbi(const pe_ref<T>& ref, std::type_identity_t<std::remove_cv_t<T>> expected,
                     std::type_identity_t<std::remove_cv_t<T>> desired,
                     memory_order_arg order = cuda::memory_order_seq_cst) {
  detail::require_writable_value_rules<T>();
  if constexpr (atomic_value<T> && !std::is_const_v<T>) {
    return detail::atomic_nbi<detail::atomic_op::compare_exchange>(ref, desired, expected, order);
  } else {
    return {};
  }
}

// The fetching read-modify-writes: the old value. fetch_add and fetch_sub take every atomic value type, the others
// integers only (as their blocking twins).
#define SYMM_FETCH_NBI(name, op, rules, concept_)                                                                      \
  template <class T>                                                                                                   \
  [[nodiscard]] future<std::remove_cv_t<T>> name(const pe_ref<T>& ref,                                                 \
                                                 std::type_identity_t<std::remove_cv_t<T>> operand,                    \
                                                 memory_order_arg order = cuda::memory_order_seq_cst) {                \
    detail::rules<T>();                                                                                                \
    if constexpr (concept_<T> && !std::is_const_v<T>) return detail::atomic_nbi<detail::atomic_op::op>(ref, operand, \
                                                                                                          {}, order);  \
    else return {};                                                                                                    \
  }
SYMM_FETCH_NBI(fetch_add_nbi, add, require_writable_value_rules, atomic_value)
SYMM_FETCH_NBI(fetch_sub_nbi, sub, require_writable_value_rules, atomic_value)
SYMM_FETCH_NBI(fetch_and_nbi, bit_and, require_integer_rules, atomic_integer)
SYMM_FETCH_NBI(fetch_or_nbi, bit_or, require_integer_rules, atomic_integer)
SYMM_FETCH_NBI(fetch_xor_nbi, bit_xor, require_integer_rules, atomic_integer)
SYMM_FETCH_NBI(fetch_min_nbi, min, require_integer_rules, atomic_integer)
SYMM_FETCH_NBI(fetch_max_nbi, max, require_integer_rules, atomic_integer)
#undef SYMM_FETCH_NBI

// The non-fetching ones: the completion alone (shmem_atomic_add is non-blocking in OpenSHMEM; these say so in the type).
#define SYMM_UPDATE_NBI(name, fetching)                                                                                \
  template <class T>                                                                                                   \
  [[nodiscard]] future<> name(const pe_ref<T>& ref, std::type_identity_t<std::remove_cv_t<T>> operand,                 \
                              memory_order_arg order = cuda::memory_order_seq_cst) {                                   \
    return detail::completion_of(fetching(ref, operand, order));                                                       \
  }
SYMM_UPDATE_NBI(add_nbi, fetch_add_nbi)
SYMM_UPDATE_NBI(sub_nbi, fetch_sub_nbi)
SYMM_UPDATE_NBI(bit_and_nbi, fetch_and_nbi)
SYMM_UPDATE_NBI(bit_or_nbi, fetch_or_nbi)
SYMM_UPDATE_NBI(bit_xor_nbi, fetch_xor_nbi)
#undef SYMM_UPDATE_NBI

SYMM_END_NAMESPACE
