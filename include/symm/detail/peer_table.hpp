// symm/detail/peer_table.hpp: PE pe's heap base in this PE's mapping, the lookup every remote address is built from.
#pragma once

#include <symm/detail/config.hpp>

#include <cstddef>
#include <cstdint>

SYMM_BEGIN_NAMESPACE
namespace detail {

// ---- Addresses of peers reached through NVSHMEM RMA (the NVSHMEM backend only) ----
//
// On the NVSHMEM backend a peer whose heap this GPU cannot load from and store to (another node; nvshmem_ptr gives
// null) still has an entry in the peer table: this PE's own heap base, tagged with bit 63 and the peer's number in bits
// 48-62. Every address built from it (base + offset, + index) is therefore this PE's symmetric address of the same
// element, tagged: the operations recognise it (is_rma_address) and hand the local address and the PE to NVSHMEM's
// RMA (detail/backend/nvshmem/). A tagged address is never dereferenced. Without the NVSHMEM backend no address is
// tagged, is_rma_address is constant false, and the tests compile away.
inline constexpr bool rma_transport = SYMM_NVSHMEM_BACKEND(); //!< whether any address can be tagged
inline constexpr std::uintptr_t rma_tag_bit = std::uintptr_t{1} << 63;
inline constexpr int rma_pe_shift = 48;
inline constexpr std::uintptr_t rma_local_mask = (std::uintptr_t{1} << rma_pe_shift) - 1;
inline constexpr int rma_max_pes = 1 << (63 - rma_pe_shift);

[[nodiscard]] SYMM_HOST_DEVICE SYMM_FORCEINLINE constexpr bool is_rma_address([[maybe_unused]] const void* p) noexcept {
#if SYMM_NVSHMEM_BACKEND()
  return (reinterpret_cast<std::uintptr_t>(p) & rma_tag_bit) != 0;
#else
  return false;
#endif
}
//! The tagged address of `local` (this PE's symmetric address) on PE `pe`.
template <class T>
[[nodiscard]] SYMM_HOST_DEVICE SYMM_FORCEINLINE T* make_rma_address(T* local, int pe) noexcept {
  return reinterpret_cast<T*>(
      reinterpret_cast<std::uintptr_t>(local) | rma_tag_bit | (static_cast<std::uintptr_t>(pe) << rma_pe_shift));
}
//! This PE's symmetric address of a tagged address's element.
template <class T>
[[nodiscard]] SYMM_HOST_DEVICE SYMM_FORCEINLINE T* rma_local(T* p) noexcept {
  return reinterpret_cast<T*>(reinterpret_cast<std::uintptr_t>(p) & rma_local_mask);
}
//! The PE a tagged address points into.
[[nodiscard]] SYMM_HOST_DEVICE SYMM_FORCEINLINE int rma_pe(const void* p) noexcept {
  return static_cast<int>((reinterpret_cast<std::uintptr_t>(p) & ~rma_tag_bit) >> rma_pe_shift);
}

//! PE `pe`'s heap base as this PE maps it. Device code reads the device copy of the table through the read-only cache
//! and states that the base is global memory, so accesses through it are LDG/STG rather than generic LD/ST. Host code
//! reads the host copy.
//!
//! The device read is an inline-asm ld.global.nc that is neither volatile nor a memory access to the compiler: the
//! table does not change while the world lives, so the read is a pure function of its address, which the compiler
//! hoists out of loops and merges across fences and memory clobbers. With __ldg it stayed in any loop that also held
//! a fence or an `asm volatile("" ::: "memory")` (a p-then-quiet loop, a loop of warp puts): after quiet's fence has
//! emptied L1 that is an L2 round trip per iteration before the store can issue (tests/sass: p_quiet_loop,
//! warp_put_loop).
[[nodiscard]] SYMM_HOST_DEVICE SYMM_FORCEINLINE std::byte*
peer_base(std::byte* const* host_table, std::byte* const* device_table, int pe) noexcept {
  NV_IF_TARGET(NV_IS_DEVICE, ({
                 unsigned long long bits;
                 asm("ld.global.nc.u64 %0, [%1];" : "=l"(bits) : "l"(device_table + pe)); // not volatile: see above
                 auto* base = reinterpret_cast<std::byte*>(bits);
                 // A tagged base (NVSHMEM RMA) is not an address at all, so only without that backend can the compiler
                 // be told that every base is global memory.
                 if constexpr (!SYMM_NVSHMEM_BACKEND()) __builtin_assume(__isGlobal(base));
                 return base;
               }),
               ({
                 (void) device_table;
                 return host_table[pe];
               }))
}

} // namespace detail
SYMM_END_NAMESPACE
