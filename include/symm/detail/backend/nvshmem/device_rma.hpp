// symm/detail/backend/nvshmem/device_rma.hpp: what device code does with a peer it reaches through NVSHMEM RMA rather
// than through a mapping (a tagged address, detail/peer_table.hpp): the load, store, atomic or group copy it would have
// done becomes the NVSHMEM call that does the same. Defined for every CUDA compilation so that call sites can test
// `if (is_rma_address(p))` without #if: without the NVSHMEM backend no address is tagged, is_rma_address is constant
// false, the branch is removed and these bodies (a trap) are never compiled into a kernel.
//
// Ordering follows symm's device rules for a mapped peer: a put is on its way when the call returns (blocking NVSHMEM
// forms, so the source may be reused, as after a mapped copy), fence()/quiet() order and complete it
// (symm::fence/quiet call nvshmem_fence/nvshmem_quiet on this backend), a get has landed when it returns, atomics and
// signals with release order complete this PE's earlier operations first.
#pragma once

#include <symm/detail/atomic_codes.hpp>
#include <symm/detail/backend/nvshmem/nvshmem_api.hpp>
#include <symm/detail/config.hpp>
#include <symm/detail/peer_table.hpp>
#include <symm/group.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#if SYMM_CUDA_COMPILATION()
#  include <cooperative_groups.h>
#  include <cuda/atomic>
#  include <cuda/std/bit>

SYMM_BEGIN_NAMESPACE
namespace detail {

//! The groups NVSHMEM has collective forms for: a whole block and a whole warp. Every other group shares the work
//! thread by thread.
template <class Group>
inline constexpr bool is_block_group = std::is_same_v<Group, cooperative_groups::thread_block>;
template <class Group>
inline constexpr bool is_warp_group = false;
template <class Parent>
inline constexpr bool is_warp_group<cooperative_groups::thread_block_tile<32, Parent>> = true;

#  if SYMM_NVSHMEM_BACKEND()
// NVSHMEM names its typed calls by size; symm passes every element as its bits.
SYMM_DEVICE SYMM_FORCEINLINE void rma_put_word(std::uint8_t* t, std::uint8_t v, int pe) {
  nvshmem_uint8_p(t, v, pe);
}
SYMM_DEVICE SYMM_FORCEINLINE void rma_put_word(std::uint16_t* t, std::uint16_t v, int pe) {
  nvshmem_uint16_p(t, v, pe);
}
SYMM_DEVICE SYMM_FORCEINLINE void rma_put_word(std::uint32_t* t, std::uint32_t v, int pe) {
  nvshmem_uint32_p(t, v, pe);
}
SYMM_DEVICE SYMM_FORCEINLINE void rma_put_word(std::uint64_t* t, std::uint64_t v, int pe) {
  nvshmem_uint64_p(t, v, pe);
}
SYMM_DEVICE SYMM_FORCEINLINE std::uint8_t rma_get_word(const std::uint8_t* s, int pe) {
  return nvshmem_uint8_g(s, pe);
}
SYMM_DEVICE SYMM_FORCEINLINE std::uint16_t rma_get_word(const std::uint16_t* s, int pe) {
  return nvshmem_uint16_g(s, pe);
}
SYMM_DEVICE SYMM_FORCEINLINE std::uint32_t rma_get_word(const std::uint32_t* s, int pe) {
  return nvshmem_uint32_g(s, pe);
}
SYMM_DEVICE SYMM_FORCEINLINE std::uint64_t rma_get_word(const std::uint64_t* s, int pe) {
  return nvshmem_uint64_g(s, pe);
}

#    define SYMM_RMA_AMO_FOR(Bits, Name)                                                                               \
      SYMM_DEVICE SYMM_FORCEINLINE Bits amo_fetch(Bits* t, int pe) {                                                   \
        return nvshmem_##Name##_atomic_fetch(t, pe);                                                                   \
      }                                                                                                                \
      SYMM_DEVICE SYMM_FORCEINLINE void amo_set(Bits* t, Bits v, int pe) {                                             \
        nvshmem_##Name##_atomic_set(t, v, pe);                                                                         \
      }                                                                                                                \
      SYMM_DEVICE SYMM_FORCEINLINE Bits amo_swap(Bits* t, Bits v, int pe) {                                            \
        return nvshmem_##Name##_atomic_swap(t, v, pe);                                                                 \
      }                                                                                                                \
      SYMM_DEVICE SYMM_FORCEINLINE Bits amo_compare_swap(Bits* t, Bits c, Bits v, int pe) {                            \
        return nvshmem_##Name##_atomic_compare_swap(t, c, v, pe);                                                      \
      }                                                                                                                \
      SYMM_DEVICE SYMM_FORCEINLINE Bits amo_fetch_add(Bits* t, Bits v, int pe) {                                       \
        return nvshmem_##Name##_atomic_fetch_add(t, v, pe);                                                            \
      }                                                                                                                \
      SYMM_DEVICE SYMM_FORCEINLINE Bits amo_fetch_and(Bits* t, Bits v, int pe) {                                       \
        return nvshmem_##Name##_atomic_fetch_and(t, v, pe);                                                            \
      }                                                                                                                \
      SYMM_DEVICE SYMM_FORCEINLINE Bits amo_fetch_or(Bits* t, Bits v, int pe) {                                        \
        return nvshmem_##Name##_atomic_fetch_or(t, v, pe);                                                             \
      }                                                                                                                \
      SYMM_DEVICE SYMM_FORCEINLINE Bits amo_fetch_xor(Bits* t, Bits v, int pe) {                                       \
        return nvshmem_##Name##_atomic_fetch_xor(t, v, pe);                                                            \
      }
SYMM_RMA_AMO_FOR(std::uint32_t, uint32)
SYMM_RMA_AMO_FOR(std::uint64_t, uint64)
#    undef SYMM_RMA_AMO_FOR

//! The widest word (up to 8 bytes) that both the size and the alignment of T allow: the unit of a p or a g.
template <class T>
using rma_word = std::conditional_t<
    sizeof(T) % 8 == 0 && alignof(T) >= 8, std::uint64_t,
    std::conditional_t<sizeof(T) % 4 == 0 && alignof(T) >= 4, std::uint32_t,
                       std::conditional_t<sizeof(T) % 2 == 0 && alignof(T) >= 2, std::uint16_t, std::uint8_t>>>;

//! Completes this PE's earlier operations, mapped stores (a system-scope fence) and NVSHMEM's alike: what an update
//! with release order owes to whoever sees it.
SYMM_DEVICE SYMM_FORCEINLINE void rma_complete_earlier() {
  cuda::atomic_thread_fence(cuda::memory_order_seq_cst, cuda::thread_scope_system);
  nvshmem_quiet();
}
#  endif // SYMM_NVSHMEM_BACKEND()

//! `*target = value` on the tagged address's PE (a p: complete with quiet(), like a store).
template <class T>
SYMM_DEVICE void rma_p(T* target, const T& value) {
#  if SYMM_NVSHMEM_BACKEND()
  using Word = rma_word<T>;
  auto* words = reinterpret_cast<Word*>(rma_local(target));
  Word pieces[sizeof(T) / sizeof(Word)];
  __builtin_memcpy(pieces, &value, sizeof(T));
  for (std::size_t i = 0; i < sizeof(T) / sizeof(Word); ++i)
    rma_put_word(words + i, pieces[i], rma_pe(target));
#  else
  (void) target, (void) value;
  __trap(); // unreachable: only the NVSHMEM backend tags addresses
#  endif
}

//! `*source` on the tagged address's PE (a g).
template <class T>
SYMM_DEVICE std::remove_cv_t<T> rma_g(T* source) {
  std::remove_cv_t<T> value{};
#  if SYMM_NVSHMEM_BACKEND()
  using Word = rma_word<T>;
  const auto* words = reinterpret_cast<const Word*>(rma_local(source));
  Word pieces[sizeof(T) / sizeof(Word)];
  for (std::size_t i = 0; i < sizeof(T) / sizeof(Word); ++i)
    pieces[i] = rma_get_word(words + i, rma_pe(source));
  __builtin_memcpy(&value, pieces, sizeof(T));
#  else
  (void) source;
  __trap();
#  endif
  return value;
}

//! A group's copy where dst (a put) or src (a get) is a tagged address. Blocking NVSHMEM forms: on return the source
//! may be reused (put) or the data has landed (get), as after the mapped copy.
template <class Group>
SYMM_DEVICE void rma_group_copy(const Group& group, void* dst, const void* src, std::size_t bytes) {
#  if SYMM_NVSHMEM_BACKEND()
  const bool put = is_rma_address(dst);
  const int pe = put ? rma_pe(dst) : rma_pe(src);
  void* to = put ? rma_local(dst) : dst;
  const void* from = put ? src : rma_local(src);
  if constexpr (is_block_group<Group>) {
    if (put) nvshmemx_putmem_block(to, from, bytes, pe);
    else nvshmemx_getmem_block(to, from, bytes, pe);
  } else if constexpr (is_warp_group<Group>) {
    if (put) nvshmemx_putmem_warp(to, from, bytes, pe);
    else nvshmemx_getmem_warp(to, from, bytes, pe);
  } else {
    // Any other group: each thread moves its own 16-byte-aligned share.
    const std::size_t count = group.num_threads(), rank = group.thread_rank();
    const std::size_t share = ((bytes + count - 1) / count + 15) / 16 * 16;
    const std::size_t begin = rank * share < bytes ? rank * share : bytes;
    const std::size_t end = begin + share < bytes ? begin + share : bytes;
    if (end > begin) {
      if (put) nvshmem_putmem(static_cast<char*>(to) + begin, static_cast<const char*>(from) + begin, end - begin, pe);
      else nvshmem_getmem(static_cast<char*>(to) + begin, static_cast<const char*>(from) + begin, end - begin, pe);
    }
  }
#  else
  (void) group, (void) dst, (void) src, (void) bytes;
  __trap();
#  endif
}

//! An atomic on the tagged address's element; returns the old value (0 for a store). Integers and bitwise operations
//! map to NVSHMEM's atomics of the same width on the bits (two's complement: a signed add is an unsigned add of the
//! same bits); float add/sub and min/max, which NVSHMEM lacks, are compare-and-swap loops. Release (or stronger)
//! order completes this PE's earlier operations first; acquire needs nothing more, as the old value has come back
//! before anything after the call is issued.
template <class T>
SYMM_DEVICE T rma_atomic(T* target, atomic_op op, T operand, T expected, cuda::memory_order order) {
#  if SYMM_NVSHMEM_BACKEND()
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "NVSHMEM atomics are 4 or 8 bytes wide");
  using Bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  auto* word = reinterpret_cast<Bits*>(rma_local(target));
  const int pe = rma_pe(target);
  if (order == cuda::memory_order_release || order == cuda::memory_order_acq_rel ||
      order == cuda::memory_order_seq_cst) {
    rma_complete_earlier();
  }
  const Bits bits = cuda::std::bit_cast<Bits>(operand);
  // The read-modify-writes NVSHMEM lacks: retry a compare-and-swap until no other PE came between.
  auto cas_loop = [&](auto update) {
    Bits seen = amo_fetch(word, pe);
    for (;;) {
      const Bits desired = cuda::std::bit_cast<Bits>(static_cast<T>(update(cuda::std::bit_cast<T>(seen))));
      const Bits before = amo_compare_swap(word, seen, desired, pe);
      if (before == seen) return before;
      seen = before;
    }
  };
  Bits old = 0;
  switch (op) {
    case atomic_op::load: old = amo_fetch(word, pe); break;
    case atomic_op::store: amo_set(word, bits, pe); break;
    case atomic_op::exchange: old = amo_swap(word, bits, pe); break;
    case atomic_op::compare_exchange:
      old = amo_compare_swap(word, cuda::std::bit_cast<Bits>(expected), bits, pe);
      break;
    case atomic_op::add:
    case atomic_op::sub:
      if constexpr (std::is_integral_v<T>) {
        old = amo_fetch_add(word, op == atomic_op::add ? bits : static_cast<Bits>(Bits{0} - bits), pe);
      } else {
        old = op == atomic_op::add ? cas_loop([&](T v) { return v + operand; }) : cas_loop([&](T v) {
          return v - operand;
        });
      }
      break;
    case atomic_op::bit_and: old = amo_fetch_and(word, bits, pe); break;
    case atomic_op::bit_or: old = amo_fetch_or(word, bits, pe); break;
    case atomic_op::bit_xor: old = amo_fetch_xor(word, bits, pe); break;
    case atomic_op::min: old = cas_loop([&](T v) { return operand < v ? operand : v; }); break;
    case atomic_op::max: old = cas_loop([&](T v) { return v < operand ? operand : v; }); break;
  }
  return cuda::std::bit_cast<T>(old);
#  else
  (void) target, (void) op, (void) operand, (void) expected, (void) order;
  __trap();
  return T{};
#  endif
}

//! A signal update (set or add) on the tagged address's PE, after completing this PE's earlier operations: whoever
//! sees the signal sees them (release order, as the mapped update has).
SYMM_DEVICE inline void rma_signal(std::uint64_t* signal, std::uint64_t value, bool add) {
#  if SYMM_NVSHMEM_BACKEND()
  rma_complete_earlier();
  nvshmemx_signal_op(rma_local(signal), value, add ? NVSHMEM_SIGNAL_ADD : NVSHMEM_SIGNAL_SET, rma_pe(signal));
#  else
  (void) signal, (void) value, (void) add;
  __trap();
#  endif
}

//! A group's put with signal to a tagged address: NVSHMEM's put-with-signal for a block, a warp or one thread, which
//! orders the signal after the data; any other group copies, synchronises, and one thread signals.
template <class Group>
SYMM_DEVICE void rma_put_signal(const Group& group, void* dst, const void* src, std::size_t bytes,
                                std::uint64_t* signal, std::uint64_t value, bool add) {
#  if SYMM_NVSHMEM_BACKEND()
  const int pe = rma_pe(dst), sig_op = add ? NVSHMEM_SIGNAL_ADD : NVSHMEM_SIGNAL_SET;
  std::uint64_t* sig = rma_local(signal);
  if constexpr (is_block_group<Group>) {
    nvshmemx_putmem_signal_block(rma_local(dst), src, bytes, sig, value, sig_op, pe);
  } else if constexpr (is_warp_group<Group>) {
    nvshmemx_putmem_signal_warp(rma_local(dst), src, bytes, sig, value, sig_op, pe);
  } else if constexpr (std::is_same_v<Group, single_thread>) {
    nvshmem_putmem_signal(rma_local(dst), src, bytes, sig, value, sig_op, pe);
  } else {
    rma_group_copy(group, dst, src, bytes);
    group.sync();
    if (group.thread_rank() == 0) rma_signal(signal, value, add);
  }
#  else
  (void) group, (void) dst, (void) src, (void) bytes, (void) signal, (void) value, (void) add;
  __trap();
#  endif
}

//! A barrier's arrival word on a peer: a relaxed system-scope store (the caller's release fence orders what came before
//! it), or, through NVSHMEM, a signal set that completes this PE's earlier operations first.
SYMM_DEVICE SYMM_FORCEINLINE void store_arrival(std::uint64_t* word, std::uint64_t value) {
  if (is_rma_address(word)) rma_signal(word, value, false);
  else cuda::atomic_ref<std::uint64_t, cuda::thread_scope_system>(*word).store(value, cuda::memory_order_relaxed);
}

//! What symm::quiet() and symm::fence() add in device code on the NVSHMEM backend: NVSHMEM's own completion and
//! ordering of the operations it carries (nothing without that backend).
SYMM_DEVICE SYMM_FORCEINLINE void rma_quiet() {
#  if SYMM_NVSHMEM_BACKEND()
  nvshmem_quiet();
#  endif
}
SYMM_DEVICE SYMM_FORCEINLINE void rma_fence() {
#  if SYMM_NVSHMEM_BACKEND()
  nvshmem_fence();
#  endif
}

} // namespace detail
SYMM_END_NAMESPACE
#endif // SYMM_CUDA_COMPILATION()
