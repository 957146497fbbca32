// symm/detail/peer_table.hpp: PE pe's heap base in this PE's mapping, the lookup every remote address is built from.
#pragma once

#include <symm/detail/config.hpp>

#include <cstddef>

SYMM_BEGIN_NAMESPACE
namespace detail {

//! PE `pe`'s heap base as this PE maps it. Device code reads the device copy of the table through the read-only cache
//! (the table does not change while the world lives, so the compiler may hoist the read out of loops, and an acquire
//! does not force it again) and states that the base is global memory, so accesses through it are LDG/STG rather than
//! generic LD/ST. Host code reads the host copy.
[[nodiscard]] SYMM_HOST_DEVICE SYMM_FORCEINLINE std::byte*
peer_base(std::byte* const* host_table, std::byte* const* device_table, int pe) noexcept {
  NV_IF_TARGET(NV_IS_DEVICE, ({
                 auto* base = reinterpret_cast<std::byte*>(
                     __ldg(reinterpret_cast<const unsigned long long*>(device_table + pe)));
                 __builtin_assume(__isGlobal(base));
                 return base;
               }),
               ({
                 (void) device_table;
                 return host_table[pe];
               }))
}

} // namespace detail
SYMM_END_NAMESPACE
