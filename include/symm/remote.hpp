// symm/remote.hpp: symm::remote(obj, pe), the one way to name another PE's copy of a symmetric object.
#pragma once

#include <symm/array_ref.hpp>
#include <symm/detail/checked_size.hpp>
#include <symm/detail/device_check.hpp>
#include <symm/pe_ref.hpp>
#include <symm/pe_span.hpp>

SYMM_BEGIN_NAMESPACE

namespace detail {
template <count_integer PE>
inline void check_pe_on_host(const detail::world_interface* world, PE pe, int n_pes) {
  if constexpr (SYMM_CHECK_LEVEL(1)) {
    check_pe_number(pe, n_pes, world != nullptr ? world->my_pe() : -1, "remote(obj, ", "the world");
  }
}
} // namespace detail

//! PE `pe`'s elements of a symmetric array. Communication happens only through what the returned pe_span does.
//! Throws errc::invalid_pe (host) or traps (device, SYMM_CHECK >= 1) when pe is not in [0, n_pes). `pe` may be any
//! integer type; a value no int holds is out of range, never cut to another PE.
template <class T, std::size_t E, detail::count_integer PE>
[[nodiscard]] SYMM_HOST_DEVICE pe_span<T, E> remote(const array_ref<T, E>& a, PE pe_number) {
  NV_IF_TARGET(NV_IS_DEVICE, ({
                 const int pe = detail::narrow_pe(pe_number);
                 // Read the table before the check (entry 0 for a bad PE, which then traps): a read that sits behind
                 // the trap's branch could not be hoisted out of the caller's loops.
                 T* address = a.address_on(static_cast<unsigned>(pe) < static_cast<unsigned>(a.n_pes()) ? pe : 0);
                 SYMM_DEVICE_ASSERT_PE(pe, a.n_pes(), "symm::remote");
                 return pe_span<T, E>(address, a.size(), pe, a.world());
               }),
               ({
                 detail::check_pe_on_host(a.world(), pe_number, a.n_pes());
                 const int pe = detail::narrow_pe(pe_number);
                 return pe_span<T, E>(a.address_on(pe), a.size(), pe, a.world());
               }))
}

template <class T, std::size_t E, detail::count_integer PE>
[[nodiscard]] pe_span<T, E> remote(array<T, E>& a, PE pe) {
  return remote(a.ref(), pe);
}
//! A const array gives read-only remote access: constness goes through the element type.
template <class T, std::size_t E, detail::count_integer PE>
[[nodiscard]] pe_span<const T, E> remote(const array<T, E>& a, PE pe) {
  return remote(array_ref<const T, E>(a.ref()), pe);
}

//! PE `pe`'s value of a symmetric scalar.
template <class T, detail::count_integer PE>
[[nodiscard]] SYMM_HOST_DEVICE pe_ref<T> remote(const scalar_ref<T>& s, PE pe) {
  return remote(s.element(), pe)[0];
}
template <class T, detail::count_integer PE>
[[nodiscard]] pe_ref<T> remote(scalar<T>& s, PE pe) {
  return remote(s.ref(), pe);
}
template <class T, detail::count_integer PE>
[[nodiscard]] pe_ref<const T> remote(const scalar<T>& s, PE pe) {
  return remote(array_ref<const T, 1>(s.ref().element()), pe)[0];
}

//! Anything else has no copy on other PEs: say so instead of listing overloads. The deduced return type makes the
//! compiler instantiate this body, and so print the message, before it looks at what the caller does with the result
//! (`remote(ptr, 1)[0]` said "invalid types 'void[int]'" first).
template <class Object, class PE>
  requires(!symmetric_object<Object>)
auto remote(Object&&, PE) {
  static_assert(
      detail::always_false<Object>,
      "symm::remote(obj, pe): obj must be a symmetric object (symm::array, symm::scalar or their _ref views). "
      "A raw pointer or an ordinary container lives at different addresses on each PE, so it has no "
      "remote counterpart; allocate it as a symm::array instead");
}

SYMM_END_NAMESPACE
