// symm/format.hpp: fmt formatters for symm's views whose extent is a template parameter: symm::array, array_ref and
// pe_span. They print what a view is (kind, extent, size, the PE of a remote one), never what it holds: formatting does
// not communicate. Host code only.
#pragma once

#include <symm/array_ref.hpp>
#include <symm/detail/config.hpp>
#include <symm/detail/extent_name.hpp>
#include <symm/pe_span.hpp>

#include <fmt/core.h>

#include <cstddef>
#include <string_view>

SYMM_BEGIN_NAMESPACE
namespace detail {

inline std::string_view elements_word(std::size_t size) noexcept {
  return size == 1 ? "element" : "elements";
}

//! "array_ref<dynamic>{16 elements, heap offset 256}": a symmetric view, the same text on every PE.
template <class Out>
Out describe_symmetric(Out out, std::string_view kind, std::size_t extent, std::size_t size, std::size_t offset) {
  return fmt::format_to(out, "{}<{}>{{{} {}, heap offset {}}}", kind, extent_name(extent), size, elements_word(size),
                        offset);
}

//! "pe_span<dynamic>{PE 1, 16 elements}": elements on another PE.
template <class Out>
Out describe_remote(Out out, std::string_view kind, std::size_t extent, int pe, std::size_t size) {
  return fmt::format_to(out, "{}<{}>{{PE {}, {} {}}}", kind, extent_name(extent), pe, size, elements_word(size));
}

//! The formatters' common part: no format spec (`{}` only, as for extent_name).
struct view_formatter {
  template <class ParseContext>
  constexpr auto parse(ParseContext& ctx) {
    return ctx.begin(); // anything but '}' here is fmt's "unknown format specifier"
  }
};

} // namespace detail
SYMM_END_NAMESPACE

//! `array_ref<16>{16 elements, heap offset 256}`, `array_ref<dynamic>{...}` for a dynamic extent. The element type is
//! not printed; the heap offset is the same on every PE.
template <class T, std::size_t Extent>
struct fmt::formatter<::symm::array_ref<T, Extent>> : ::symm::detail::view_formatter {
  template <class FormatContext>
  auto format(const ::symm::array_ref<T, Extent>& a, FormatContext& ctx) const {
    return ::symm::detail::describe_symmetric(ctx.out(), "array_ref", Extent, a.size(), a.offset());
  }
};

//! `array<dynamic>{16 elements, heap offset 256}`: the owning container, as its view (symm/symmetric.hpp defines it).
template <class T, std::size_t Extent>
struct fmt::formatter<::symm::array<T, Extent>> : ::symm::detail::view_formatter {
  template <class FormatContext>
  auto format(const ::symm::array<T, Extent>& a, FormatContext& ctx) const {
    return ::symm::detail::describe_symmetric(ctx.out(), "array", Extent, a.size(), a.offset());
  }
};

//! `pe_span<dynamic>{PE 1, 16 elements}`, `pe_span<16>{PE 1, 16 elements}`: the view, not the remote values (get them
//! first: `fmt::print("{}", std::vector<T>(symm::remote(a, 1)))`).
template <class T, std::size_t Extent>
struct fmt::formatter<::symm::pe_span<T, Extent>> : ::symm::detail::view_formatter {
  template <class FormatContext>
  auto format(const ::symm::pe_span<T, Extent>& s, FormatContext& ctx) const {
    return ::symm::detail::describe_remote(ctx.out(), "pe_span", Extent, s.pe(), s.size());
  }
};
