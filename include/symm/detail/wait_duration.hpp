// symm/detail/wait_duration.hpp: the timeout of a bounded wait (wait_until_for, signal_wait_until_for), given as a
// std::chrono or a cuda::std::chrono duration, in nanoseconds.
#pragma once

#include <symm/detail/config.hpp>

#include <cuda/std/chrono>
#include <cuda/std/ratio>

#include <chrono>
#include <cstdint>
#include <type_traits>

SYMM_BEGIN_NAMESPACE
namespace detail {

template <class D>
inline constexpr bool is_wait_duration = false;
template <class Rep, class Period>
inline constexpr bool is_wait_duration<std::chrono::duration<Rep, Period>> = true;
template <class Rep, class Period>
inline constexpr bool is_wait_duration<cuda::std::chrono::duration<Rep, Period>> = true;

//! A timeout: any std::chrono or cuda::std::chrono duration (std::chrono::milliseconds(5), 200us, ...).
template <class D>
concept wait_duration = is_wait_duration<std::remove_cvref_t<D>>;

//! `count` ticks of `Period` in nanoseconds: 0 for a negative (or NaN) count, saturated at the largest value.
template <class Period, class Rep>
[[nodiscard]] SYMM_HOST_DEVICE constexpr std::uint64_t nanoseconds_of(Rep count) noexcept {
  // cuda::std's ratio, as Period may be std's or cuda::std's
  using to_ns = cuda::std::ratio_divide<cuda::std::ratio<Period::num, Period::den>, cuda::std::nano>;
  constexpr std::uint64_t most = ~std::uint64_t{0};
  if (!(count > Rep(0))) return 0;
  if constexpr (std::is_floating_point_v<Rep>) {
    const double ns = static_cast<double>(count) * static_cast<double>(to_ns::num) / static_cast<double>(to_ns::den);
    return ns >= 18446744073709549568.0 ? most : static_cast<std::uint64_t>(ns);
  } else {
    const auto ticks = static_cast<std::uint64_t>(count);
    constexpr auto num = static_cast<std::uint64_t>(to_ns::num), den = static_cast<std::uint64_t>(to_ns::den);
    return ticks > most / num ? most : ticks * num / den;
  }
}

//! A std::chrono timeout in nanoseconds. Device code reads the count from the duration's bytes (its only member):
//! count() is a constexpr host function, which device code may call only under nvcc's --expt-relaxed-constexpr, and
//! symm does not require that flag (a duration passed to a kernel as an argument then works without it).
template <class Rep, class Period>
[[nodiscard]] SYMM_HOST_DEVICE std::uint64_t timeout_ns(const std::chrono::duration<Rep, Period>& timeout) noexcept {
  static_assert(sizeof(timeout) == sizeof(Rep) && std::is_trivially_copyable_v<std::chrono::duration<Rep, Period>>,
                "a std::chrono::duration holds its count alone");
  Rep count{};
  NV_IF_ELSE_TARGET(NV_IS_DEVICE, (__builtin_memcpy(&count, &timeout, sizeof(count));), (count = timeout.count();))
  return nanoseconds_of<Period>(count);
}

template <class Rep, class Period>
[[nodiscard]] SYMM_HOST_DEVICE std::uint64_t
timeout_ns(const cuda::std::chrono::duration<Rep, Period>& timeout) noexcept {
  return nanoseconds_of<Period>(timeout.count());
}

} // namespace detail
SYMM_END_NAMESPACE
