// symm/pe_ref.hpp: pe_ref<T>, a reference to one element of a symmetric object on another PE.
#pragma once

#include <symm/concepts.hpp>
#include <symm/detail/world_state.hpp>

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
//! Trivially copyable, so it can be passed to kernels; it is valid as long as the symmetric object it refers to.
template <class T> class pe_ref {
  static_assert(transportable<T>, "symm::pe_ref<T>: T must be trivially copyable (transportable), since remote "
                                  "accesses copy its bytes");

public:
  using element_type = T;
  using value_type = std::remove_cv_t<T>;

  SYMM_HOST_DEVICE constexpr pe_ref(T* address, int pe, detail::world_state* world) noexcept
      : address_(address), pe_(pe), world_(world) {}

  //! Put of one element: writes `value` into the element on PE pe(). Complete when it returns (host) or ordered by
  //! fence()/quiet() like any store (device).
  SYMM_HOST_DEVICE const pe_ref& operator=(const value_type& value) const
    requires(!std::is_const_v<T>)
  {
    NV_IF_TARGET(NV_IS_DEVICE, (*address_ = value;), (world_->copy(address_, &value, sizeof(T));))
    return *this;
  }

  //! Get of one element: reads the element on PE pe().
  SYMM_HOST_DEVICE value_type get() const {
    NV_IF_TARGET(NV_IS_DEVICE, (return *address_;), ({
                   value_type value;
                   world_->copy(&value, address_, sizeof(T));
                   return value;
                 }))
  }
  SYMM_HOST_DEVICE operator value_type() const { return get(); }

  //! The PE this reference points into, and the element's address in this PE's mapping of that PE's heap.
  [[nodiscard]] SYMM_HOST_DEVICE constexpr int pe() const noexcept { return pe_; }
  [[nodiscard]] SYMM_HOST_DEVICE constexpr T* address() const noexcept { return address_; }
  [[nodiscard]] SYMM_HOST_DEVICE constexpr detail::world_state* world() const noexcept { return world_; }

  // A remote-to-remote copy is a get and a put: spell it out as `dst = T(src)`.
  pe_ref& operator=(const pe_ref&) = delete;
  // Compound assignment and increments are hidden read-modify-writes that race with other PEs; use the atomics.
  template <class U> pe_ref& operator+=(U&&) = delete;
  template <class U> pe_ref& operator-=(U&&) = delete;
  template <class U> pe_ref& operator*=(U&&) = delete;
  template <class U> pe_ref& operator/=(U&&) = delete;
  template <class U> pe_ref& operator%=(U&&) = delete;
  template <class U> pe_ref& operator&=(U&&) = delete;
  template <class U> pe_ref& operator|=(U&&) = delete;
  template <class U> pe_ref& operator^=(U&&) = delete;
  template <class U> pe_ref& operator<<=(U&&) = delete;
  template <class U> pe_ref& operator>>=(U&&) = delete;
  pe_ref& operator++() = delete;
  pe_ref& operator--() = delete;
  value_type operator++(int) = delete;
  value_type operator--(int) = delete;
  template <class U> friend bool operator==(const pe_ref&, const pe_ref<U>&) = delete;

private:
  T* address_;
  int pe_;
  detail::world_state* world_;
};

static_assert(std::is_trivially_copyable_v<pe_ref<int>>, "pe_ref travels to kernels by value");

SYMM_END_NAMESPACE
