// symm/detail/device_copy.hpp: the group-cooperative copy under every device put and get: 16-byte accesses when both
// sides allow it, coalesced across the group (consecutive ranks touch consecutive vectors), four in flight per thread
// when both are 16-byte aligned (every symmetric array is), one at a time on the out-of-line path for other alignments.
#pragma once

#include <symm/detail/backend/nvshmem/device_rma.hpp>
#include <symm/detail/config.hpp>
#include <symm/group.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#if SYMM_CUDA_COMPILATION()
SYMM_BEGIN_NAMESPACE
namespace detail {

//! `n` vectors, coalesced across the group. FourInFlight: four loads per thread before their stores (the bulk path);
//! false: one at a time, for the out-of-line path of unusual alignments, whose registers count against every kernel
//! that could call it (four in flight there took block-copy kernels from 32 to 46-48 registers, halving the threads a
//! 1024-thread block copy keeps resident per SM).
template <bool FourInFlight = true, class Vector>
SYMM_DEVICE SYMM_FORCEINLINE void
copy_vectors(unsigned rank, unsigned count, Vector* __restrict__ dst, const Vector* __restrict__ src, std::size_t n) {
  std::size_t i = rank;
  const std::size_t stride = count;
  // Not unrolled further (nor the loops below): the body already keeps four loads in flight, and with a stride the
  // compiler knows (a warp's 32) it unrolled each loop four more times behind a trip-count prologue, ~40 instructions
  // before the first store of a copy that gives each thread one vector (a 32-512 B warp put).
  if constexpr (FourInFlight) {
#  pragma unroll 1
    for (; i + 3 * stride < n; i += 4 * stride) {
      Vector a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
      dst[i] = a;
      dst[i + stride] = b;
      dst[i + 2 * stride] = c;
      dst[i + 3 * stride] = d;
    }
  }
#  pragma unroll 1
  for (; i < n; i += stride)
    dst[i] = src[i];
}

SYMM_DEVICE SYMM_FORCEINLINE void
copy_bytes(unsigned rank, unsigned count, unsigned char* dst, const unsigned char* src, std::size_t n) {
#  pragma unroll 1
  for (std::size_t i = rank; i < n; i += count)
    dst[i] = src[i];
}

//! Copies `bytes` from src to dst with the group's threads (`rank` of `count`), one vector in flight per thread (the
//! unaligned path's, see copy_vectors). Buffers must not overlap.
template <std::size_t Width, class Vector>
SYMM_DEVICE SYMM_FORCEINLINE void
copy_aligned(unsigned rank, unsigned count, unsigned char* dst, const unsigned char* src, std::size_t bytes) {
  std::size_t head = (Width - (reinterpret_cast<std::uintptr_t>(dst) & (Width - 1))) & (Width - 1);
  head = head < bytes ? head : bytes;
  copy_bytes(rank, count, dst, src, head);
  std::size_t vectors = (bytes - head) / Width;
  copy_vectors<false>(rank, count, reinterpret_cast<Vector*>(dst + head), reinterpret_cast<const Vector*>(src + head),
                      vectors);
  std::size_t done = head + vectors * Width;
  copy_bytes(rank, count, dst + done, src + done, bytes - done);
}

//! Any alignment: the widest access both pointers allow after a byte head. Out of line, so that the common case
//! below stays a short loop: inlined, this dispatch cost ~60 ns per call in a loop of small copies on an H200.
//! Internal linkage: with relocatable device code (the nvshmem backend) an external function is compiled on its own,
//! and its register count (~100) would exceed what a caller's __launch_bounds__(1024) allows (64); ptxas fits a
//! translation unit's own function to its callers.
SYMM_DEVICE __noinline__ static void
group_copy_unaligned(unsigned rank, unsigned count, unsigned char* dst, const unsigned char* src, std::size_t bytes) {
  auto misalignment = (reinterpret_cast<std::uintptr_t>(dst) ^ reinterpret_cast<std::uintptr_t>(src));
  if ((misalignment & 15) == 0) copy_aligned<16, int4>(rank, count, dst, src, bytes);
  else if ((misalignment & 7) == 0) copy_aligned<8, int2>(rank, count, dst, src, bytes);
  else if ((misalignment & 3) == 0) copy_aligned<4, int>(rank, count, dst, src, bytes);
  else copy_bytes(rank, count, dst, src, bytes);
}

//! Both pointers 16-byte aligned (symmetric arrays start 256-byte aligned) is the case to make fast: 16-byte vectors,
//! then a byte tail (one byte per thread; a single thread copying the tail in 8/4/2/1-byte pieces measured slower on
//! an H200), the shape of a hand-written copy loop. Anything else goes to group_copy_unaligned.
SYMM_DEVICE SYMM_FORCEINLINE void
group_copy(unsigned rank, unsigned count, void* dst_, const void* src_, std::size_t bytes) {
  auto* dst = static_cast<unsigned char*>(dst_);
  auto* src = static_cast<const unsigned char*>(src_);
  if (((reinterpret_cast<std::uintptr_t>(dst) | reinterpret_cast<std::uintptr_t>(src)) & 15) == 0) [[likely]] {
    const std::size_t vectors = bytes / 16, done = vectors * 16;
    copy_vectors(rank, count, reinterpret_cast<int4*>(dst), reinterpret_cast<const int4*>(src), vectors);
    copy_bytes(rank, count, dst + done, src + done, bytes - done);
    return;
  }
  group_copy_unaligned(rank, count, dst, src, bytes);
}

//! One thread copies alone (symm::this_thread()). Up to 16 bytes: inline, with the widest access that both addresses
//! and the size allow (an 8-byte put_signal from an 8-byte-aligned word is one load and one store; the group path
//! took an out-of-line call for that alignment, and a byte loop for a 16-byte-aligned one). Larger: the group path.
SYMM_DEVICE SYMM_FORCEINLINE void thread_copy(void* dst_, const void* src_, std::size_t bytes) {
  auto* dst = static_cast<unsigned char*>(dst_);
  auto* src = static_cast<const unsigned char*>(src_);
  if (bytes > 16) {
    group_copy(0, 1, dst, src, bytes);
    return;
  }
  const auto common = reinterpret_cast<std::uintptr_t>(dst) | reinterpret_cast<std::uintptr_t>(src) | bytes;
  const auto words = [&]<class Word>(Word) {
    for (std::size_t i = 0; i < bytes; i += sizeof(Word))
      *reinterpret_cast<Word*>(dst + i) = *reinterpret_cast<const Word*>(src + i);
  };
  if ((common & 15) == 0) words(int4{});
  else if ((common & 7) == 0) words(std::uint64_t{});
  else if ((common & 3) == 0) words(std::uint32_t{});
  else if ((common & 1) == 0) words(std::uint16_t{});
  else words(std::uint8_t{});
}

//! What every group-scoped put and get does: `group`'s threads copy the first min(dst_bytes, src_bytes) bytes; to or
//! from a peer reached through NVSHMEM RMA (a tagged address), NVSHMEM's group copy does it.
template <class Group>
SYMM_DEVICE SYMM_FORCEINLINE void
group_copy(const Group& group, void* dst, std::size_t dst_bytes, const void* src, std::size_t src_bytes) {
  const std::size_t bytes = dst_bytes < src_bytes ? dst_bytes : src_bytes;
  if (is_rma_address(dst) || is_rma_address(src)) {
    rma_group_copy(group, dst, src, bytes);
    return;
  }
  if constexpr (std::is_same_v<Group, single_thread>) thread_copy(dst, src, bytes);
  else
    group_copy(static_cast<unsigned>(group.thread_rank()), static_cast<unsigned>(group.num_threads()), dst, src, bytes);
}

} // namespace detail
SYMM_END_NAMESPACE
#endif
