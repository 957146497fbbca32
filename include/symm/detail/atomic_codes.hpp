// symm/detail/atomic_codes.hpp: the codes that name an atomic operation and its element type, shared by pe_ref, the
// host-side atomic kernels (PTX, tools/host_atomics_kernels.cu) and the NVSHMEM backend's RMA atomics.
#pragma once

#include <symm/detail/config.hpp>

#include <cstdint>
#include <cstring>
#include <type_traits>

SYMM_BEGIN_NAMESPACE
namespace detail {

//! Every atomic of pe_ref. The values are the kernel's op codes (tools/host_atomics_kernels.cu): keep them in step.
enum class atomic_op : int { load, store, exchange, compare_exchange, add, sub, bit_and, bit_or, bit_xor, min, max };

//! The element types the kernel knows, by the same codes as the kernel.
enum class atomic_type_code : int { i32, u32, i64, u64, f32, f64 };

template <class T>
constexpr atomic_type_code atomic_type_code_of() noexcept {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, float>) return atomic_type_code::f32;
  else if constexpr (std::is_same_v<U, double>) return atomic_type_code::f64;
  else if constexpr (sizeof(U) == 4) return std::is_signed_v<U> ? atomic_type_code::i32 : atomic_type_code::u32;
  else return std::is_signed_v<U> ? atomic_type_code::i64 : atomic_type_code::u64;
}

template <class T>
SYMM_HOST_DEVICE std::uint64_t atomic_bits(const T& value) noexcept {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  return bits;
}

template <class T>
SYMM_HOST_DEVICE T atomic_from_bits(std::uint64_t bits) noexcept {
  T value;
  std::memcpy(&value, &bits, sizeof(T));
  return value;
}

} // namespace detail
SYMM_END_NAMESPACE
