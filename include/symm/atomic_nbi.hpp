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

//! The host backend's (and any world whose heap host code can reach): the blocking member, now.
template <atomic_op Op, class T>
std::remove_cv_t<T>
atomic_now(const pe_ref<T>& ref, std::remove_cv_t<T> operand, std::remove_cv_t<T> expected, cuda::memory_order order) {
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

//! A fetching nbi atomic (the type rules are checked by the caller): now (host heap), or started on the world's stream
//! with a word for its value. `what` names the call, for errors.
template <atomic_op Op, class T>
future<std::remove_cv_t<T>> fetch_nbi(const pe_ref<T>& ref, std::remove_cv_t<T> operand, std::remove_cv_t<T> expected,
                                      cuda::memory_order order, const char* what) {
  using value_type = std::remove_cv_t<T>;
  world_interface* world = ref.world();
  if (!heap_on_gpu(world->kind())) return future<value_type>(atomic_now<Op>(ref, operand, expected, order));
  pending_value pending = world->host_atomic_nbi(
      ref.address(), atomic_type_code_of<value_type>(), Op, atomic_bits(operand), atomic_bits(expected), true, what);
  return future<value_type>(future<>(pending.done), std::move(pending.result));
}

//! A non-fetching one (store and the updates): the completion alone, no word for a value nobody reads.
template <atomic_op Op, class T>
future<> update_nbi(const pe_ref<T>& ref, std::remove_cv_t<T> operand, cuda::memory_order order, const char* what) {
  using value_type = std::remove_cv_t<T>;
  world_interface* world = ref.world();
  if (!heap_on_gpu(world->kind())) {
    (void) atomic_now<Op>(ref, operand, value_type{}, order);
    return future<>(); // done: nothing to wait for
  }
  return future<>(
      world->host_atomic_nbi(ref.address(), atomic_type_code_of<value_type>(), Op, atomic_bits(operand), 0, false, what)
          .done);
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
  detail::pending_value pending = world->read_nbi(ref.address(), sizeof(value_type));
  return future<value_type>(future<>(pending.done), std::move(pending.result));
}

//! Atomic read (shmem_atomic_fetch_nbi).
template <class T>
[[nodiscard]] future<std::remove_cv_t<T>>
load_nbi(const pe_ref<T>& ref, memory_order_arg order = cuda::memory_order_seq_cst) {
  detail::require_atomic_value<T>();
  if constexpr (atomic_value<T>)
    return detail::fetch_nbi<detail::atomic_op::load>(ref, {}, {}, order, "symm::load_nbi");
  else return {};
}

//! Atomic write (shmem_atomic_set_nbi); the future completes when it is done.
template <class T>
[[nodiscard]] future<> store_nbi(const pe_ref<T>& ref, std::type_identity_t<std::remove_cv_t<T>> desired,
                                 memory_order_arg order = cuda::memory_order_seq_cst) {
  detail::require_atomic_value<T>();
  detail::require_writable<T>();
  if constexpr (atomic_value<T> && !std::is_const_v<T>) {
    return detail::update_nbi<detail::atomic_op::store>(ref, desired, order, "symm::store_nbi");
  } else {
    return {};
  }
}

//! Atomic swap (shmem_atomic_swap_nbi): the old value.
template <class T>
[[nodiscard]] future<std::remove_cv_t<T>>
exchange_nbi(const pe_ref<T>& ref, std::type_identity_t<std::remove_cv_t<T>> desired,
             memory_order_arg order = cuda::memory_order_seq_cst) {
  detail::require_atomic_value<T>();
  detail::require_writable<T>();
  if constexpr (atomic_value<T> && !std::is_const_v<T>) {
    return detail::fetch_nbi<detail::atomic_op::exchange>(ref, desired, {}, order, "symm::exchange_nbi");
  } else {
    return {};
  }
}

//! Atomic compare-and-swap (shmem_atomic_compare_swap_nbi): the value seen, which equals `expected` (bitwise) exactly
//! when `desired` was stored.
template <class T>
[[nodiscard]] future<std::remove_cv_t<T>> compare_exchange_nbi(
    const pe_ref<T>& ref, std::type_identity_t<std::remove_cv_t<T>> expected,
    std::type_identity_t<std::remove_cv_t<T>> desired, memory_order_arg order = cuda::memory_order_seq_cst) {
  detail::require_atomic_value<T>();
  detail::require_writable<T>();
  if constexpr (atomic_value<T> && !std::is_const_v<T>) {
    return detail::fetch_nbi<detail::atomic_op::compare_exchange>(
        ref, desired, expected, order, "symm::compare_exchange_nbi");
  } else {
    return {};
  }
}

// The read-modify-writes, fetching (future<T> of the old value) and not (future<>). add and sub take every atomic value
// type, the bitwise ones and min/max integers only, as their blocking twins (the same static_asserts).
#define SYMM_RMW_NBI(fetch_name, update_name, op, concept_, require)                                                   \
  template <class T>                                                                                                   \
  [[nodiscard]] future<std::remove_cv_t<T>> fetch_name(                                                                \
      const pe_ref<T>& ref, std::type_identity_t<std::remove_cv_t<T>> operand,                                         \
      memory_order_arg order = cuda::memory_order_seq_cst) {                                                           \
    detail::require<T>();                                                                                              \
    detail::require_writable<T>();                                                                                     \
    if constexpr (concept_<T> && !std::is_const_v<T>) {                                                                \
      return detail::fetch_nbi<detail::atomic_op::op>(ref, operand, {}, order, "symm::" #fetch_name);                  \
    } else {                                                                                                           \
      return {};                                                                                                       \
    }                                                                                                                  \
  }                                                                                                                    \
  template <class T>                                                                                                   \
  [[nodiscard]] future<> update_name(const pe_ref<T>& ref, std::type_identity_t<std::remove_cv_t<T>> operand,          \
                                     memory_order_arg order = cuda::memory_order_seq_cst) {                            \
    detail::require<T>();                                                                                              \
    detail::require_writable<T>();                                                                                     \
    if constexpr (concept_<T> && !std::is_const_v<T>) {                                                                \
      return detail::update_nbi<detail::atomic_op::op>(ref, operand, order, "symm::" #update_name);                    \
    } else {                                                                                                           \
      return {};                                                                                                       \
    }                                                                                                                  \
  }
SYMM_RMW_NBI(fetch_add_nbi, add_nbi, add, atomic_value, require_atomic_value)
SYMM_RMW_NBI(fetch_sub_nbi, sub_nbi, sub, atomic_value, require_atomic_value)
SYMM_RMW_NBI(fetch_and_nbi, bit_and_nbi, bit_and, atomic_integer, require_atomic_integer)
SYMM_RMW_NBI(fetch_or_nbi, bit_or_nbi, bit_or, atomic_integer, require_atomic_integer)
SYMM_RMW_NBI(fetch_xor_nbi, bit_xor_nbi, bit_xor, atomic_integer, require_atomic_integer)
#undef SYMM_RMW_NBI

// min and max have no non-fetching form, as the blocking members.
template <class T>
[[nodiscard]] future<std::remove_cv_t<T>>
fetch_min_nbi(const pe_ref<T>& ref, std::type_identity_t<std::remove_cv_t<T>> operand,
              memory_order_arg order = cuda::memory_order_seq_cst) {
  detail::require_atomic_integer<T>();
  detail::require_writable<T>();
  if constexpr (atomic_integer<T> && !std::is_const_v<T>) {
    return detail::fetch_nbi<detail::atomic_op::min>(ref, operand, {}, order, "symm::fetch_min_nbi");
  } else {
    return {};
  }
}
template <class T>
[[nodiscard]] future<std::remove_cv_t<T>>
fetch_max_nbi(const pe_ref<T>& ref, std::type_identity_t<std::remove_cv_t<T>> operand,
              memory_order_arg order = cuda::memory_order_seq_cst) {
  detail::require_atomic_integer<T>();
  detail::require_writable<T>();
  if constexpr (atomic_integer<T> && !std::is_const_v<T>) {
    return detail::fetch_nbi<detail::atomic_op::max>(ref, operand, {}, order, "symm::fetch_max_nbi");
  } else {
    return {};
  }
}

SYMM_END_NAMESPACE
