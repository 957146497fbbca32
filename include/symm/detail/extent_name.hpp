// symm/detail/extent_name.hpp: an extent as symm spells it in messages and in fmt output: `dynamic` for
// symm::dynamic_extent (printed as a number it would read 18446744073709551615), the decimal number otherwise.
#pragma once

#include <symm/detail/config.hpp>

#include <cuda/std/span>

#include <fmt/core.h>

#include <cstddef>
#include <string_view>

SYMM_BEGIN_NAMESPACE
namespace detail {

//! The spelling of an extent, held by value (no allocation): `view()`, or pass it to fmt as it is.
struct extent_text {
  char chars[24] = {}; // "dynamic", or at most the 20 digits of 2^64 - 1
  std::size_t length = 0;
  [[nodiscard]] constexpr std::string_view view() const noexcept { return {chars, length}; }
};

//! `dynamic` for dynamic_extent, else the extent's decimal digits. Every symm message and formatter that names an
//! extent (or a count that may be dynamic_extent) spells it through this.
//! \code
//!   static_assert(symm::detail::extent_name(symm::dynamic_extent).view() == "dynamic");
//!   SYMM_THROW(errc::extent_mismatch, "... (extents: remote {}, local {})", extent_name(E), extent_name(E2));
//! \endcode
[[nodiscard]] constexpr extent_text extent_name(std::size_t extent) noexcept {
  extent_text text;
  if (extent == ::cuda::std::dynamic_extent) {
    for (const char c : std::string_view("dynamic"))
      text.chars[text.length++] = c;
    return text;
  }
  char digits[20] = {};
  std::size_t n = 0;
  do {
    digits[n++] = static_cast<char>('0' + extent % 10);
    extent /= 10;
  } while (extent != 0);
  while (n != 0)
    text.chars[text.length++] = digits[--n];
  return text;
}

static_assert(extent_name(::cuda::std::dynamic_extent).view() == "dynamic" && extent_name(0).view() == "0" &&
              extent_name(1234567).view() == "1234567");

} // namespace detail
SYMM_END_NAMESPACE

//! extent_name's result formats as its text. It takes no format spec (`{}` only), so it needs nothing of fmt beyond
//! fmt/core.h, which symm's messages already use.
template <>
struct fmt::formatter<::symm::detail::extent_text> {
  template <class ParseContext>
  constexpr auto parse(ParseContext& ctx) {
    return ctx.begin(); // anything but '}' here is fmt's "unknown format specifier"
  }
  template <class FormatContext>
  auto format(const ::symm::detail::extent_text& text, FormatContext& ctx) const {
    auto out = ctx.out();
    for (std::size_t i = 0; i < text.length; ++i)
      *out++ = text.chars[i];
    return out;
  }
};
