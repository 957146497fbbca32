// symm/concepts.hpp: the rules on types that symm enforces at compile time.
#pragma once

#include <symm/detail/config.hpp>

#include <cuda/std/span>

#include <array>
#include <concepts>
#include <cstddef>
#include <ranges>
#include <span>
#include <type_traits>

SYMM_BEGIN_NAMESPACE

//! Opt out (or in) for a user type: whether its objects may be copied bytewise between PEs. Defaults to
//! trivially-copyable; specialise to false for a type whose bytes mean nothing on another PE (one holding a pointer).
template <class T>
inline constexpr bool enable_transportable = std::is_trivially_copyable_v<std::remove_cv_t<T>>;

//! A type whose objects can live in the symmetric heap and be put or got as bytes.
template <class T>
concept transportable =
    std::is_object_v<T> && !std::is_array_v<T> && !std::is_volatile_v<T> && enable_transportable<std::remove_cv_t<T>>;

inline constexpr std::size_t dynamic_extent = cuda::std::dynamic_extent;

//! Opt-in trait for symmetric objects: types whose storage has the same offset on every PE.
template <class T>
inline constexpr bool enable_symmetric_object = false;

//! What `symm::remote(obj, pe)` accepts.
template <class T>
concept symmetric_object = enable_symmetric_object<std::remove_cvref_t<T>>;

//! A contiguous range whose elements can be copied into a symmetric T (the local side of a put or get).
template <class R, class T>
concept contiguous_range_of = std::ranges::contiguous_range<R> && std::ranges::sized_range<R> &&
    std::same_as<std::remove_cv_t<std::ranges::range_value_t<R>>, std::remove_cv_t<T>>;

//! A contiguous range of T that can be written (the local side of a get).
template <class R, class T>
concept writable_contiguous_range_of = contiguous_range_of<R, T> &&
    !std::is_const_v<std::remove_reference_t<std::ranges::range_reference_t<R>>>;

namespace detail {
template <class>
inline constexpr bool always_false = false;

//! The static extent of a range type, or dynamic_extent.
template <class R>
struct static_extent_of : std::integral_constant<std::size_t, dynamic_extent> {};
template <class T, std::size_t N>
struct static_extent_of<T[N]> : std::integral_constant<std::size_t, N> {};
template <class T, std::size_t N>
struct static_extent_of<std::array<T, N>> : std::integral_constant<std::size_t, N> {};
template <class T, std::size_t N>
struct static_extent_of<cuda::std::span<T, N>> : std::integral_constant<std::size_t, N> {};
template <class T, std::size_t N>
struct static_extent_of<std::span<T, N>> : std::integral_constant<std::size_t, N> {};
template <class R>
inline constexpr std::size_t static_extent_v = static_extent_of<std::remove_cvref_t<R>>::value;

//! True when both extents are known at compile time and differ.
template <std::size_t A, std::size_t B>
inline constexpr bool extents_conflict = A != dynamic_extent&& B != dynamic_extent&& A != B;
} // namespace detail

SYMM_END_NAMESPACE

//! cuda::std::span is a view: a span made from one, even from a temporary, points into the same elements. libcu++ says
//! so to cuda::std::ranges only; saying it to std::ranges as well lets a std::span take `array.local()` (a
//! cuda::std::span returned by value) as it takes a std::span: `std::span<float> mine = a.local();`. Allowed:
//! enable_borrowed_range is meant to be specialised for types outside the standard library. A program that gets the
//! same specialisation elsewhere (a later CCCL, another library) defines SYMM_NO_STD_BORROWED_CUDA_SPAN.
#if !defined(SYMM_NO_STD_BORROWED_CUDA_SPAN)
namespace std::ranges {
template <class T, std::size_t Extent>
inline constexpr bool enable_borrowed_range<cuda::std::span<T, Extent>> = true;
} // namespace std::ranges
#endif
