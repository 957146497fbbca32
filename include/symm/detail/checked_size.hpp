// symm/detail/checked_size.hpp: element counts and PE numbers as user code gives them, checked before use. Without
// these checks a negative int count becomes a size_t near 2^64, `count * sizeof(T)` wraps to a small byte size, and a
// 64-bit PE number 2^32 + 1 becomes PE 1: each silently names another size or another PE.
#pragma once

#include <symm/detail/config.hpp>
#include <symm/error.hpp>

#include <cuda/std/utility>

#include <concepts>
#include <cstddef>
#include <limits>
#include <string_view>
#include <utility>

SYMM_BEGIN_NAMESPACE
namespace detail {

//! An integer type a count or a PE number may be given as (bool is not a number of anything).
template <class Int>
concept count_integer = std::integral<Int> && !std::same_as<std::remove_cv_t<Int>, bool>;

//! `count` elements of `element_bytes` each as a std::size_t count, before anything is allocated. Throws
//! errc::invalid_argument for a negative count and errc::heap_exhausted when the bytes exceed what a std::size_t
//! counts (no heap can hold them); `what` names the object ("symm::array of 8-byte elements").
template <count_integer Count>
std::size_t checked_element_count(Count count, std::size_t element_bytes, int pe, std::string_view what) {
  if (std::cmp_less(count, 0)) {
    SYMM_THROW(errc::invalid_argument,
               "PE {}: {}: {} elements asked for; an element count cannot be negative (converted to std::size_t it "
               "would have asked for {} elements)",
               pe, what, count, static_cast<std::size_t>(count));
  }
  const std::size_t most = std::numeric_limits<std::size_t>::max() / (element_bytes == 0 ? 1 : element_bytes);
  if (std::cmp_greater(count, most)) {
    SYMM_THROW(errc::heap_exhausted,
               "PE {}: {}: {} elements of {} bytes are more bytes than a std::size_t counts (at most {} elements): no "
               "heap can hold them",
               pe, what, count, element_bytes, most);
  }
  return static_cast<std::size_t>(count);
}

//! A PE number of any integer type as the int every peer table is indexed by. Host code keeps the value (a wider one
//! is checked against the range in full by the caller, see pe_fits_int); device code maps a value no int holds to -1,
//! which the range check that follows then rejects, instead of wrapping to some other PE. An int costs nothing.
template <count_integer PE>
[[nodiscard]] SYMM_HOST_DEVICE constexpr int narrow_pe(PE pe) noexcept {
  if constexpr (std::same_as<PE, int>) {
    return pe;
  } else {
    return ::cuda::std::in_range<int>(pe) ? static_cast<int>(pe) : -1;
  }
}

//! Host-side check of a PE number given as any integer type against [0, n_pes): throws errc::invalid_pe naming the
//! value as given (not as cut to an int) and the range. The message shows the call as `call_head` + pe + ")"
//! ("remote(obj, " gives "remote(obj, 5)"): nothing is formatted unless the check fails.
template <count_integer PE>
void check_pe_number(PE pe, int n_pes, int my_pe, std::string_view call_head, std::string_view range_owner) {
  if (std::cmp_less(pe, 0) || std::cmp_greater_equal(pe, n_pes)) {
    SYMM_THROW(errc::invalid_pe, "PE {}: {}{}) names PE {}, but {} has PEs 0 to {} (n_pes = {})", my_pe, call_head, pe,
               pe, range_owner, n_pes - 1, n_pes);
  }
}

} // namespace detail
SYMM_END_NAMESPACE
