// symm/detail/device_wait.hpp: bounded device-side spinning. A wait that lasts longer than SYMM_DEVICE_WAIT_TIMEOUT_NS
// (default 20 s) is a probable deadlock: it says what it waited for and traps, instead of hanging the GPU (through
// this PE's trap record, which the host prints, where it has the heap; by printf where it has not). A wait
// that can find this PE's heap also watches the world's failure word (below): when the host side of this PE learns
// that a peer failed, the wait ends within one clock check (every 1024 polls) instead of at the timeout.
#pragma once

#include <symm/detail/wait_trap_record.hpp>
#include <symm/wait_status.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>

#if !defined(SYMM_DEVICE_WAIT_TIMEOUT_NS)
#  define SYMM_DEVICE_WAIT_TIMEOUT_NS 20000000000ull
#endif

SYMM_BEGIN_NAMESPACE
namespace detail {

//! Bytes at the start of every PE's heap that belong to symm ahead of its system area (the world's first allocation,
//! so at offset 0 on every PE). Its first 8 bytes hold the device address of this PE's failure word, the first member
//! of its trap record (detail/wait_trap_record.hpp; 0 on the host backend, which runs no device code): a device wait
//! finds it from any view of the heap, as the view's local address minus its offset, so no kernel takes an extra
//! argument and no __device__ global is needed.
inline constexpr std::size_t heap_header_bytes = 256;
//! Where in the header the failure word's address lies. The word holds failed PE + 1, 0 while none failed
//! (failure_code, detail/failure_monitor.hpp).
inline constexpr std::size_t failure_slot_offset = 0;
//! Where in the header the trap record's claim lies (a 4-byte word, 0 until a wait of this PE gives up; GPU memory,
//! zeroed with the heap): record_wait_trap.
inline constexpr std::size_t trap_claim_offset = 8;

} // namespace detail
SYMM_END_NAMESPACE

#if SYMM_CUDA_COMPILATION()
#  include <cuda/atomic>

SYMM_BEGIN_NAMESPACE
namespace detail {

SYMM_DEVICE SYMM_FORCEINLINE std::uint64_t global_timer_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

//! PTX's fence.release.sys (sm_90 and later): release_fence_system's fence where the GPU has it.
SYMM_DEVICE SYMM_FORCEINLINE void fence_release_sys_ptx() {
  asm volatile("fence.release.sys;" ::: "memory");
}

//! A system-scope release fence: this thread's earlier loads and stores are ordered before its later stores, which
//! a peer's acquire of such a store then sees (the release pattern of a barrier's arrival or a signal). On sm_90 and
//! later it is PTX's fence.release.sys: MEMBAR.ALL.SYS alone. cuda::atomic_thread_fence(memory_order_release) emits
//! fence.acq_rel.sys, which adds an L1 invalidate (CCTL.IVALL) that an arrival does not need: the waits that follow
//! are acquire loads, which invalidate L1 themselves. Older GPUs have no one-way fence and take the acq_rel one.
SYMM_DEVICE SYMM_FORCEINLINE void release_fence_system() {
  NV_IF_ELSE_TARGET(NV_PROVIDES_SM_90, (fence_release_sys_ptx();),
                    (cuda::atomic_thread_fence(cuda::memory_order_release, cuda::thread_scope_system);))
}

//! The deadlock bound in milliseconds, for messages.
inline constexpr std::uint64_t device_wait_timeout_ms = SYMM_DEVICE_WAIT_TIMEOUT_NS / 1000000;

//! The reporter of the waits that have no way to this PE's heap (the raw-word forms of wait_until and the span
//! forms): printf, out of line. Its call costs the kernel's fences their speed (see detail/wait_trap_record.hpp), so
//! symm's own waits, which hold a view of the heap, write the trap record instead (give_up).
[[noreturn]] SYMM_DEVICE __noinline__ inline void report_deadlock(const char* what, int me, int peer) {
  ::printf("symm: PE %d waited %llu ms in %s for PE %d (block %d, thread %d): probable deadlock, trapping\n", me,
           static_cast<unsigned long long>(device_wait_timeout_ms), what, peer, static_cast<int>(blockIdx.x),
           static_cast<int>(threadIdx.x));
  __trap();
  __builtin_unreachable();
}

//! This PE's trap record from its heap base (the failure slot of the heap's header), or null: no heap (the caller
//! has none), or no record in the slot (a heap that device code never waits on with a failure word).
SYMM_DEVICE SYMM_FORCEINLINE wait_trap_record* wait_trap_record_of(const std::byte* heap) {
  if (heap == nullptr) return nullptr;
  return *reinterpret_cast<wait_trap_record* const*>(heap + failure_slot_offset);
}

//! The PE that the host side of this PE found failed, or -1 while none did. `heap`: this PE's heap base (null: the
//! caller has no way to its heap, and sees no failure). Two loads: the header's slot (written once, before any kernel
//! of the world ran) and the failure word itself (host memory, read at system scope: the host writes it while kernels
//! run). Waits call it only where they read the clock, every 1024 polls: the polls themselves are unchanged.
SYMM_DEVICE SYMM_FORCEINLINE int failed_peer(const std::byte* heap) {
  const wait_trap_record* record = wait_trap_record_of(heap);
  if (record == nullptr) return -1;
  std::uint32_t code;
  asm volatile("ld.relaxed.sys.global.u32 %0, [%1];" : "=r"(code) : "l"(&record->failure_code) : "memory");
  return static_cast<int>(code) - 1;
}

//! This PE's heap base from a view's local address and heap offset (what array_ref, scalar_ref and signal_ref hold).
template <class T>
[[nodiscard]] SYMM_DEVICE SYMM_FORCEINLINE const std::byte* heap_base_of(const T* local, std::size_t offset) {
  return reinterpret_cast<const std::byte*>(local) - offset;
}

//! A trapping wait that gives up: writes why into this PE's trap record (when `heap` leads to one), then traps. No
//! call: the host prints the record (detail/wait_trap_record.hpp).
[[noreturn]] SYMM_DEVICE SYMM_FORCEINLINE void
give_up(const std::byte* heap, wait_trap_reason reason, const char* what, int me, int peer, std::uint64_t seen = 0,
        std::uint64_t wanted = 0) {
  if (wait_trap_record* record = wait_trap_record_of(heap)) {
    auto* claim = reinterpret_cast<std::uint32_t*>(const_cast<std::byte*>(heap) + trap_claim_offset);
    record_wait_trap(claim, record, reason, what, me, peer, device_wait_timeout_ms, seen, wanted);
  }
  __trap();
  __builtin_unreachable();
}

//! A trapping wait's clock read (start: when the first was, 0 before it): gives up when the wait has lasted longer than
//! SYMM_DEVICE_WAIT_TIMEOUT_NS (`late`, naming `peer`) or the failure word names a failed PE. One give_up for both,
//! so that each wait inlines the cold record-and-trap code once.
SYMM_DEVICE SYMM_FORCEINLINE void
give_up_if_due(std::uint64_t& start, const std::byte* heap, wait_trap_reason late, const char* what, int me, int peer,
               std::uint64_t seen = 0, std::uint64_t wanted = 0) {
  const std::uint64_t now = global_timer_ns();
  if (start == 0) start = now;
  const bool past_bound = now - start > SYMM_DEVICE_WAIT_TIMEOUT_NS;
  const int failed = past_bound ? -1 : failed_peer(heap);
  if (past_bound || failed >= 0)
    give_up(heap, past_bound ? late : wait_trap_reason::peer_failed, what, me, past_bound ? peer : failed, seen,
            wanted);
}

//! Spins until done() holds. The clock is first read after 1024 polls and then every 1024, so a wait that ends soon
//! costs its polls alone (a %globaltimer read is slow next to a poll). This form has no heap: it sees no failed peer,
//! and prints (report_deadlock) when it gives up.
template <class Done>
SYMM_DEVICE SYMM_FORCEINLINE void device_wait_until(Done&& done, const char* what, int me, int peer) {
  std::uint64_t start = 0;
  for (unsigned polls = 1; !done(); ++polls) {
    if ((polls & 1023u) != 0) continue;
    std::uint64_t now = global_timer_ns();
    if (start == 0) start = now;
    else if (now - start > SYMM_DEVICE_WAIT_TIMEOUT_NS) report_deadlock(what, me, peer);
  }
}

//! The same for a caller that has this PE's heap base: at each clock read the wait also looks at the world's failure
//! word, and it gives up (a trap record naming the failed PE, or the deadlock) without a call.
template <class Done>
SYMM_DEVICE SYMM_FORCEINLINE void
device_wait_until(Done&& done, const char* what, int me, int peer, const std::byte* heap) {
  std::uint64_t start = 0;
  for (unsigned polls = 1; !done(); ++polls) {
    if ((polls & 1023u) != 0) continue;
    give_up_if_due(start, heap, wait_trap_reason::deadlock, what, me, peer);
  }
}

//! device_wait_until with a bound that ends the wait instead of trapping: ok when done() held, timed_out when more
//! than `timeout_ns` passed first, peer_failed when (with `heap`) the world's failure word names a failed PE. The same
//! polls and clock reads (the clock starts at the 1024th poll, so a wait that times out lasts at least the timeout);
//! its own loop, so that the trapping one stays as it is.
template <class Done>
[[nodiscard]] SYMM_DEVICE SYMM_FORCEINLINE wait_status
device_wait_until_for(Done&& done, std::uint64_t timeout_ns, const std::byte* heap = nullptr) {
  std::uint64_t start = 0;
  for (unsigned polls = 1; !done(); ++polls) {
    if ((polls & 1023u) != 0) continue;
    std::uint64_t now = global_timer_ns();
    if (start == 0) start = now;
    else if (now - start > timeout_ns) return wait_status::timed_out;
    if (failed_peer(heap) >= 0) return wait_status::peer_failed;
  }
  return wait_status::ok;
}

//! Spins until the counter reaches `wanted`. The polls are acquire loads: an acquire fence after the wait would cost
//! a second system-wide memory barrier per barrier round (MEMBAR.SYS; an acquire load is a load and an L1 invalidate).
//! `heap`: as device_wait_until's; the trap record says how far the count got.
template <class AtomicRef>
SYMM_DEVICE SYMM_FORCEINLINE void device_wait_for_count(
    const AtomicRef& counter, std::uint64_t wanted, const char* what, int me, int peer, const std::byte* heap) {
  std::uint64_t start = 0, seen;
  for (unsigned polls = 1; (seen = counter.load(cuda::memory_order_acquire)) < wanted; ++polls) {
    if ((polls & 1023u) != 0) continue;
    give_up_if_due(start, heap, wait_trap_reason::count_deadlock, what, me, peer, seen, wanted);
  }
}

} // namespace detail
SYMM_END_NAMESPACE
#endif
