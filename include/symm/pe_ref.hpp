// symm/pe_ref.hpp: pe_ref<T>, a reference to one element of a symmetric object on another PE.
#pragma once

#include <symm/atomic.hpp>
#include <symm/concepts.hpp>
#include <symm/detail/backend/nvshmem/device_rma.hpp>
#include <symm/detail/world_interface.hpp>

#include <type_traits>

SYMM_BEGIN_NAMESPACE

//! A reference to one element on PE `pe()`, made by `symm::remote(obj, pe)[i]` or `symm::remote(scalar, pe)`.
//!
//! Assignment is a put of one element (a `p`), conversion to the value type is a get (a `g`); in device code each is
//! a single store or load through the peer mapping, in host code a copy through the backend that is complete when
//! the call returns. Nothing else is allowed, because anything else would hide more than one remote access:
//! compound assignment and `++`/`--` (a read-modify-write that races with other PEs: use the atomic members),
//! assigning one pe_ref to another (a get and a put: write `dst = T(src)`), and comparing two pe_refs.
//! Constness goes through the element type: a `pe_ref<const T>` can be read, not written.
//!
//! Atomics are members with an explicit memory order, cuda's or std's (default seq_cst): load, store, exchange,
//! compare_exchange, fetch_add/sub/and/or/xor/min/max and the non-fetching add, sub, bit_and, bit_or, bit_xor. They
//! take 4- and 8-byte integers, float and double (bitwise and min/max: integers only), run at system scope, and work
//! in device code and in host code on both backends (host code on the CUDA backend: a one-thread kernel, seq_cst,
//! complete on return; load and store: a copy, a stream write); symm/atomic.hpp has the table and the rules.
//!
//! Trivially copyable, so it can be passed to kernels; it is valid as long as the symmetric object it refers to.
template <class T>
class pe_ref {
  static_assert(transportable<T>, "symm::pe_ref<T>: T must be trivially copyable (transportable), since remote "
                                  "accesses copy its bytes");

public:
  using element_type = T;
  using value_type = std::remove_cv_t<T>;

  SYMM_HOST_DEVICE constexpr pe_ref(T* address, int pe, detail::world_interface* world) noexcept
      : address_(address), pe_(pe), world_(world) {}

  //! Put of one element: writes `value` into the element on PE pe(). Complete when it returns (host) or ordered by
  //! fence()/quiet() like any store (device).
  SYMM_HOST_DEVICE const pe_ref& operator=(const value_type& value) const requires(!std::is_const_v<T>) {
    NV_IF_TARGET(NV_IS_DEVICE, ({
                   if (detail::is_rma_address(address_)) detail::rma_p(address_, value);
                   else *address_ = value;
                 }),
                 ({
                   world_->copy(address_, &value, sizeof(T));
                   if (world_->kind() == backend::host) detail::wake_waiters(world_, pe_, address_); // a waiting flag
                 }))
    return *this;
  }

  //! Get of one element: reads the element on PE pe().
  SYMM_HOST_DEVICE value_type get() const {
    NV_IF_TARGET(NV_IS_DEVICE,
                 (return detail::is_rma_address(address_) ? detail::rma_g(address_) : value_type(*address_);), ({
                   value_type value;
                   world_->copy(&value, address_, sizeof(T));
                   return value;
                 }))
  }
  SYMM_HOST_DEVICE operator value_type() const { return get(); }

  // ---- atomics (symm/atomic.hpp): system scope. Host code on the host backend: CPU atomics on the shared mapping;
  // on the CUDA backend: a one-thread kernel, or for load and store a copy or a stream write, on the world's stream
  // (detail/backend/cuda/host_atomics.hpp) ----

  //! Atomic read of the element on PE pe(). The only atomic a pe_ref<const T> has.
  [[nodiscard]] SYMM_HOST_DEVICE value_type load(memory_order_arg order = cuda::memory_order_seq_cst) const {
    detail::require_atomic_value<T>();
    if constexpr (atomic_value<T>) {
      NV_IF_TARGET(NV_IS_HOST, (if (world_->kind() != backend::host) {
                     return detail::host_side_atomic<value_type>(
                         world_, pe_, address_, detail::atomic_op::load, value_type{}, "pe_ref::load");
                   }))
      NV_IF_TARGET(NV_IS_DEVICE, (if (detail::is_rma_address(address_)) {
                     return detail::rma_atomic<value_type>(
                         const_cast<value_type*>(address_), detail::atomic_op::load, value_type{}, value_type{}, order);
                   }))
      return detail::system_atomic(address_).load(order);
    } else {
      return value_type{};
    }
  }
  //! Atomic write of `desired`.
  SYMM_HOST_DEVICE void store(value_type desired, memory_order_arg order = cuda::memory_order_seq_cst) const {
    detail::require_atomic_value<T>();
    detail::require_writable<T>();
    if constexpr (atomic_value<T> && !std::is_const_v<T>) {
      NV_IF_TARGET(NV_IS_HOST, (if (world_->kind() != backend::host) {
                     (void) detail::host_side_atomic<value_type>(
                         world_, pe_, address_, detail::atomic_op::store, desired, "pe_ref::store");
                     return;
                   }))
      NV_IF_TARGET(
          NV_IS_DEVICE, (if (detail::is_rma_address(address_)) {
            (void) detail::rma_atomic<value_type>(address_, detail::atomic_op::store, desired, value_type{}, order);
            return;
          }))
      detail::system_atomic(address_).store(desired, order);
      NV_IF_TARGET(NV_IS_HOST, (detail::wake_waiters(world_, pe_, address_);))
    }
  }
  //! Atomically replaces the value by `desired`; returns the old value.
  SYMM_HOST_DEVICE value_type exchange(value_type desired, memory_order_arg order = cuda::memory_order_seq_cst) const {
    return rmw<op::exchange>(desired, order, "pe_ref::exchange");
  }
  //! If the value equals `expected` (bitwise), replaces it by `desired` and returns true; otherwise stores the value
  //! seen into `expected` and returns false (std::atomic's compare_exchange_strong: no spurious failure).
  SYMM_HOST_DEVICE bool compare_exchange(value_type& expected, value_type desired,
                                         memory_order_arg order = cuda::memory_order_seq_cst) const {
    detail::require_atomic_value<T>();
    detail::require_writable<T>();
    if constexpr (atomic_value<T> && !std::is_const_v<T>) {
      NV_IF_TARGET(NV_IS_HOST, (if (world_->kind() != backend::host) {
                     return detail::host_side_compare_exchange<value_type>(
                         world_, pe_, address_, expected, desired, "pe_ref::compare_exchange");
                   }))
      NV_IF_TARGET(NV_IS_DEVICE, (if (detail::is_rma_address(address_)) {
                     const value_type seen = detail::rma_atomic<value_type>(
                         address_, detail::atomic_op::compare_exchange, desired, expected, order);
                     if (detail::atomic_bits(seen) == detail::atomic_bits(expected)) return true;
                     expected = seen;
                     return false;
                   }))
      bool stored = detail::system_atomic(address_).compare_exchange_strong(
          expected, desired, order, detail::failure_order(order));
      NV_IF_TARGET(NV_IS_HOST, (if (stored) detail::wake_waiters(world_, pe_, address_);))
      return stored;
    } else {
      return false;
    }
  }
  //! Atomic `+= operand` (integers wrap; float/double round as a plain add); returns the old value.
  SYMM_HOST_DEVICE value_type fetch_add(value_type operand, memory_order_arg order = cuda::memory_order_seq_cst) const {
    return rmw<op::add>(operand, order, "pe_ref::fetch_add");
  }
  //! Atomic `-= operand`; returns the old value.
  SYMM_HOST_DEVICE value_type fetch_sub(value_type operand, memory_order_arg order = cuda::memory_order_seq_cst) const {
    return rmw<op::sub>(operand, order, "pe_ref::fetch_sub");
  }
  //! Atomic `&= operand` (integers); returns the old value.
  SYMM_HOST_DEVICE value_type fetch_and(value_type operand, memory_order_arg order = cuda::memory_order_seq_cst) const {
    return rmw<op::bit_and>(operand, order, "pe_ref::fetch_and");
  }
  //! Atomic `|= operand` (integers); returns the old value.
  SYMM_HOST_DEVICE value_type fetch_or(value_type operand, memory_order_arg order = cuda::memory_order_seq_cst) const {
    return rmw<op::bit_or>(operand, order, "pe_ref::fetch_or");
  }
  //! Atomic `^= operand` (integers); returns the old value.
  SYMM_HOST_DEVICE value_type fetch_xor(value_type operand, memory_order_arg order = cuda::memory_order_seq_cst) const {
    return rmw<op::bit_xor>(operand, order, "pe_ref::fetch_xor");
  }
  //! Atomically replaces the value by min(value, operand) (integers); returns the old value.
  SYMM_HOST_DEVICE value_type fetch_min(value_type operand, memory_order_arg order = cuda::memory_order_seq_cst) const {
    return rmw<op::min>(operand, order, "pe_ref::fetch_min");
  }
  //! Atomically replaces the value by max(value, operand) (integers); returns the old value.
  SYMM_HOST_DEVICE value_type fetch_max(value_type operand, memory_order_arg order = cuda::memory_order_seq_cst) const {
    return rmw<op::max>(operand, order, "pe_ref::fetch_max");
  }
  //! The non-fetching forms: the same updates, returning nothing (OpenSHMEM's atomic_add etc.; on the GPU a
  //! reduction that needs no round trip). `bit_` because `and`, `or` and `xor` are C++ keywords.
  SYMM_HOST_DEVICE void add(value_type operand, memory_order_arg order = cuda::memory_order_seq_cst) const {
    (void) rmw<op::add>(operand, order, "pe_ref::add");
  }
  SYMM_HOST_DEVICE void sub(value_type operand, memory_order_arg order = cuda::memory_order_seq_cst) const {
    (void) rmw<op::sub>(operand, order, "pe_ref::sub");
  }
  SYMM_HOST_DEVICE void bit_and(value_type operand, memory_order_arg order = cuda::memory_order_seq_cst) const {
    (void) rmw<op::bit_and>(operand, order, "pe_ref::bit_and");
  }
  SYMM_HOST_DEVICE void bit_or(value_type operand, memory_order_arg order = cuda::memory_order_seq_cst) const {
    (void) rmw<op::bit_or>(operand, order, "pe_ref::bit_or");
  }
  SYMM_HOST_DEVICE void bit_xor(value_type operand, memory_order_arg order = cuda::memory_order_seq_cst) const {
    (void) rmw<op::bit_xor>(operand, order, "pe_ref::bit_xor");
  }

  //! The PE this reference points into, and the element's address in this PE's mapping of that PE's heap.
  [[nodiscard]] SYMM_HOST_DEVICE constexpr int pe() const noexcept { return pe_; }
  [[nodiscard]] SYMM_HOST_DEVICE constexpr T* address() const noexcept { return address_; }
  [[nodiscard]] SYMM_HOST_DEVICE constexpr detail::world_interface* world() const noexcept { return world_; }

  // A remote-to-remote copy is a get and a put: spell it out as `dst = T(src)`.
  pe_ref& operator=(const pe_ref&) = delete;
  // Compound assignment and increments are hidden read-modify-writes that race with other PEs; use the atomics.
  template <class U>
  pe_ref& operator+=(U&&) = delete;
  template <class U>
  pe_ref& operator-=(U&&) = delete;
  template <class U>
  pe_ref& operator*=(U&&) = delete;
  template <class U>
  pe_ref& operator/=(U&&) = delete;
  template <class U>
  pe_ref& operator%=(U&&) = delete;
  template <class U>
  pe_ref& operator&=(U&&) = delete;
  template <class U>
  pe_ref& operator|=(U&&) = delete;
  template <class U>
  pe_ref& operator^=(U&&) = delete;
  template <class U>
  pe_ref& operator<<=(U&&) = delete;
  template <class U>
  pe_ref& operator>>=(U&&) = delete;
  pe_ref& operator++() = delete;
  pe_ref& operator--() = delete;
  value_type operator++(int) = delete;
  value_type operator--(int) = delete;
  template <class U>
  friend bool operator==(const pe_ref&, const pe_ref<U>&) = delete;

private:
  using op = detail::atomic_op;

  //! Every read-modify-write: the type rules, the host-side path of the CUDA backend (a kernel), the instruction, the
  //! wake-up of host waiters.
  template <op Op>
  SYMM_HOST_DEVICE SYMM_FORCEINLINE value_type
  rmw(value_type operand, cuda::memory_order order, [[maybe_unused]] const char* what) const {
    constexpr bool any_value = Op == op::exchange || Op == op::add || Op == op::sub;
    if constexpr (any_value) detail::require_atomic_value<T>();
    else detail::require_atomic_integer<T>();
    detail::require_writable<T>();
    // Past a failed rule, stop: the static_assert above is the one message the user needs.
    if constexpr ((any_value ? atomic_value<T> : atomic_integer<T>) &&!std::is_const_v<T>) {
      NV_IF_TARGET(NV_IS_HOST, (if (world_->kind() != backend::host) {
                     return detail::host_side_atomic<value_type>(world_, pe_, address_, Op, operand, what);
                   }))
      NV_IF_TARGET(NV_IS_DEVICE, (if (detail::is_rma_address(address_)) {
                     return detail::rma_atomic<value_type>(address_, Op, operand, value_type{}, order);
                   }))
      auto atom = detail::system_atomic(address_);
      value_type old{};
      if constexpr (Op == op::exchange) old = atom.exchange(operand, order);
      else if constexpr (Op == op::add) old = atom.fetch_add(operand, order);
      else if constexpr (Op == op::sub) old = atom.fetch_sub(operand, order);
      else if constexpr (Op == op::bit_and) old = atom.fetch_and(operand, order);
      else if constexpr (Op == op::bit_or) old = atom.fetch_or(operand, order);
      else if constexpr (Op == op::bit_xor) old = atom.fetch_xor(operand, order);
      else if constexpr (Op == op::min) old = atom.fetch_min(operand, order);
      else old = atom.fetch_max(operand, order);
      NV_IF_TARGET(NV_IS_HOST, (detail::wake_waiters(world_, pe_, address_);))
      return old;
    } else {
      return operand;
    }
  }

  T* address_;
  int pe_;
  detail::world_interface* world_;
};

static_assert(std::is_trivially_copyable_v<pe_ref<int>>, "pe_ref travels to kernels by value");

SYMM_END_NAMESPACE
