// symm/atomic.hpp: remote atomics — which element types take which atomic operations, at which scope, and the
// operations themselves, which are members of pe_ref<T> (symm/pe_ref.hpp):
//
//   auto r = symm::remote(counter, pe);                      // pe_ref<std::uint64_t>
//   std::uint64_t old = r.fetch_add(1);                      // seq_cst by default
//   r.add(5, cuda::memory_order_relaxed);                    // non-fetching form: nothing is returned
//   std::uint64_t expected = 0;
//   bool won = r.compare_exchange(expected, 42, cuda::memory_order_acq_rel);  // on failure, expected = value seen
//
// | member                                   | types                 | returns                                  |
// | ---------------------------------------- | --------------------- | ---------------------------------------- |
// | load(order)                              | every atomic_value    | the value (pe_ref<const T> has only this)|
// | store(v, order)                          | every atomic_value    | nothing                                  |
// | exchange(v, order)                       | every atomic_value    | the old value                            |
// | compare_exchange(expected&, v, order)    | every atomic_value    | true when it stored (like std::atomic's  |
// |                                          | (bitwise comparison)  | compare_exchange_strong)                 |
// | fetch_add / fetch_sub(v, order)          | every atomic_value    | the old value                            |
// | fetch_and / fetch_or / fetch_xor(v, o)   | atomic_integer        | the old value                            |
// | fetch_min / fetch_max(v, order)          | atomic_integer        | the old value                            |
// | add / sub(v, order)                      | every atomic_value    | nothing (a "red" on the GPU)             |
// | bit_and / bit_or / bit_xor(v, order)     | atomic_integer        | nothing                                  |
//
// Types: the integer types of 4 and 8 bytes (int, unsigned, long, unsigned long, long long, unsigned long long,
// std::int32_t, std::uint64_t, ...) and float and double; bool, 1- and 2-byte integers and user types do not compile
// (a static_assert names the types that work). Orders are cuda::memory_order (= cuda::std::memory_order) or
// std::memory_order (symm::memory_order_arg takes either), default seq_cst; the names are those of std::atomic.
//
// Where they run:
// - device code (both backends' kernels): a cuda::atomic_ref at system scope on the peer mapping, one instruction;
// - host code, host backend: the same cuda::atomic_ref on the shared-memory mapping of the target's heap (atomic
//   between processes, since they share the physical pages);
// - host code, CUDA backend: the heap is GPU memory, which a CPU thread cannot update atomically through a pointer, so
//   symm runs the same instruction in a one-thread kernel of its own (embedded PTX loaded through the driver, so that
//   g++-only translation units work too) on the world's stream, and returns its result: microseconds per call, every
//   order performed as seq_cst (detail/backend/cuda/host_atomics.hpp); load and store are a copy and a stream write,
//   which need no free SM. Loops of atomics belong in a kernel.
//
// Scope: thread_scope_system. A PE may be another process (host backend, or CUDA backend PEs in several processes on
// one GPU) or on another GPU (peer mapping over NVLink/PCIe). thread_scope_device is only correct when every party is a
// thread of one device, and symm does not know at compile time where the target PE lives; atomics at system scope are
// also what orders them with the CPU, the copy engines and other GPUs. (A PE on the same GPU is still a different
// process in general, so no narrower scope is correct for every configuration symm supports.)
#pragma once

#include <symm/concepts.hpp>

#include <cuda/atomic>

#include <atomic>
#include <concepts>
#include <type_traits>

SYMM_BEGIN_NAMESPACE

//! Integer types the atomics take: every integral type of 4 or 8 bytes but bool (fetch_add, bitwise, min/max).
template <class T>
concept atomic_integer = std::integral<std::remove_cv_t<T>> && !std::same_as<std::remove_cv_t<T>, bool> &&
                         (sizeof(T) == 4 || sizeof(T) == 8);

//! Every type the atomics take: atomic_integer, float and double (load, store, exchange, compare_exchange,
//! fetch_add/sub; bitwise and min/max only for integers).
template <class T>
concept atomic_value = atomic_integer<T> || std::same_as < std::remove_cv_t<T>,
float > || std::same_as<std::remove_cv_t<T>, double>;

//! The scope of every symm atomic and of the fences that order signals (see the header comment for why).
inline constexpr cuda::thread_scope atomic_scope = cuda::thread_scope_system;

//! A memory order as either library spells it: cuda::memory_order (= cuda::std::memory_order) or std::memory_order.
//! The atomics' order parameters take it, so that `r.fetch_add(1, std::memory_order_relaxed)` works as with
//! std::atomic; the two enumerations name the same six orders. Costs nothing: a constant folds to the cuda order.
class memory_order_arg {
public:
  SYMM_HOST_DEVICE constexpr memory_order_arg(cuda::memory_order order) noexcept : order_(order) {}
  SYMM_HOST_DEVICE constexpr memory_order_arg(std::memory_order order) noexcept : order_(to_cuda(order)) {}
  SYMM_HOST_DEVICE constexpr operator cuda::memory_order() const noexcept { return order_; }

private:
  SYMM_HOST_DEVICE static constexpr cuda::memory_order to_cuda(std::memory_order order) noexcept {
    switch (order) {
      case std::memory_order_relaxed: return cuda::memory_order_relaxed;
      case std::memory_order_consume: return cuda::memory_order_consume;
      case std::memory_order_acquire: return cuda::memory_order_acquire;
      case std::memory_order_release: return cuda::memory_order_release;
      case std::memory_order_acq_rel: return cuda::memory_order_acq_rel;
      case std::memory_order_seq_cst: return cuda::memory_order_seq_cst;
    }
    return cuda::memory_order_seq_cst;
  }

  cuda::memory_order order_;
};

namespace detail {

//! What each atomic needs of T; each member of pe_ref<T> calls one of these, so misuse stops at one static_assert that
//! says which types work.
template <class T>
SYMM_HOST_DEVICE constexpr void require_atomic_value() {
  static_assert(atomic_value<T>,
                "symm atomics (load, store, exchange, compare_exchange, fetch_add, fetch_sub, add, sub) take int, "
                "unsigned, long, unsigned long, long long, unsigned long long (integers of 4 or 8 bytes, e.g. "
                "std::int32_t, std::uint64_t), float or double; not bool, 1- or 2-byte integers or other types");
}
template <class T>
SYMM_HOST_DEVICE constexpr void require_atomic_integer() {
  static_assert(atomic_integer<T>,
                "symm bitwise and min/max atomics (fetch_and, fetch_or, fetch_xor, fetch_min, fetch_max, bit_and, "
                "bit_or, bit_xor) take integers of 4 or 8 bytes only: int, unsigned, long, unsigned long, long long, "
                "unsigned long long (e.g. std::int32_t, std::uint64_t); not float, double, bool or other types");
}
template <class T>
SYMM_HOST_DEVICE constexpr void require_writable() {
  static_assert(!std::is_const_v<T>, "symm: a pe_ref<const T> is read-only: of the atomics only load() is allowed");
}

//! The atomic view of one word of the symmetric heap (local or a peer's mapping), at system scope.
template <class T>
[[nodiscard]] SYMM_HOST_DEVICE SYMM_FORCEINLINE cuda::atomic_ref<std::remove_cv_t<T>, atomic_scope>
system_atomic(T* address) noexcept {
  return cuda::atomic_ref<std::remove_cv_t<T>, atomic_scope>(*const_cast<std::remove_cv_t<T>*>(address));
}

//! The failure order std::atomic derives from a single order (a failed compare_exchange does not store).
SYMM_HOST_DEVICE constexpr cuda::memory_order failure_order(cuda::memory_order order) noexcept {
  return order == cuda::memory_order_acq_rel ? cuda::memory_order_acquire
       : order == cuda::memory_order_release
           ? cuda::memory_order_relaxed
           : order;
}

} // namespace detail

SYMM_END_NAMESPACE
