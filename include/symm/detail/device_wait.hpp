// symm/detail/device_wait.hpp: bounded device-side spinning. A wait that lasts longer than SYMM_DEVICE_WAIT_TIMEOUT_NS
// (default 20 s) is a probable deadlock: it prints what it waited for and traps, instead of hanging the GPU. A wait
// that can find this PE's heap also watches the world's failure word (below): when the host side of this PE learns
// that a peer failed, the wait ends within one clock check (every 1024 polls) instead of at the timeout.
#pragma once

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
//! so at offset 0 on every PE). Its first 8 bytes hold the device address of this PE's failure word (0 on the host
//! backend, which runs no device code): a device wait finds it from any view of the heap, as the view's local address
//! minus its offset, so no kernel takes an extra argument and no __device__ global is needed.
inline constexpr std::size_t heap_header_bytes = 256;
//! Where in the header the failure word's address lies. The word holds failed PE + 1, 0 while none failed
//! (failure_code, detail/failure_monitor.hpp).
inline constexpr std::size_t failure_slot_offset = 0;

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

[[noreturn]] SYMM_DEVICE __noinline__ inline void report_deadlock(const char* what, int me, int peer) {
  ::printf("symm: PE %d waited %llu ms in %s for PE %d (block %d, thread %d): probable deadlock, trapping\n", me,
           static_cast<unsigned long long>(SYMM_DEVICE_WAIT_TIMEOUT_NS / 1000000), what, peer,
           static_cast<int>(blockIdx.x), static_cast<int>(threadIdx.x));
  __trap();
  __builtin_unreachable();
}

//! The same for a wait on a counter, with what it saw and what it waited for (which tells a missing arrival from a
//! barrier that two callers share by mistake).
[[noreturn]] SYMM_DEVICE __noinline__ inline void
report_count_deadlock(const char* what, int me, int peer, unsigned long long seen, unsigned long long wanted) {
  ::printf("symm: PE %d waited %llu ms in %s for PE %d (block %d, thread %d; count %llu, waiting for %llu): "
           "probable deadlock, trapping\n",
           me, static_cast<unsigned long long>(SYMM_DEVICE_WAIT_TIMEOUT_NS / 1000000), what, peer,
           static_cast<int>(blockIdx.x), static_cast<int>(threadIdx.x), seen, wanted);
  __trap();
  __builtin_unreachable();
}

//! The PE that the host side of this PE found failed, or -1 while none did. `heap`: this PE's heap base (null: the
//! caller has no way to its heap, and sees no failure). Two loads: the header's slot (written once, before any kernel
//! of the world ran) and the failure word itself (host memory, read at system scope: the host writes it while kernels
//! run). Waits call it only where they read the clock, every 1024 polls: the polls themselves are unchanged.
SYMM_DEVICE SYMM_FORCEINLINE int failed_peer(const std::byte* heap) {
  if (heap == nullptr) return -1;
  const std::uint32_t* word = *reinterpret_cast<const std::uint32_t* const*>(heap + failure_slot_offset);
  if (word == nullptr) return -1;
  std::uint32_t code;
  asm volatile("ld.relaxed.sys.global.u32 %0, [%1];" : "=r"(code) : "l"(word) : "memory");
  return static_cast<int>(code) - 1;
}

//! This PE's heap base from a view's local address and heap offset (what array_ref, scalar_ref and signal_ref hold).
template <class T>
[[nodiscard]] SYMM_DEVICE SYMM_FORCEINLINE const std::byte* heap_base_of(const T* local, std::size_t offset) {
  return reinterpret_cast<const std::byte*>(local) - offset;
}

//! A trapping wait whose PE's host side found a peer failed: says so, then traps (what the wait would have done after
//! SYMM_DEVICE_WAIT_TIMEOUT_NS, but within milliseconds of the failure).
[[noreturn]] SYMM_DEVICE __noinline__ inline void report_peer_failed(const char* what, int me, int failed) {
  ::printf("symm: PE %d waited in %s: PE %d failed (block %d, thread %d); trapping\n", me, what, failed,
           static_cast<int>(blockIdx.x), static_cast<int>(threadIdx.x));
  __trap();
  __builtin_unreachable();
}

//! Spins until done() holds. The clock is first read after 1024 polls and then every 1024, so a wait that ends soon
//! costs its polls alone (a %globaltimer read is slow next to a poll). `heap` (this PE's heap base, when the caller
//! has it): at each clock read the wait also looks at the world's failure word, and traps naming the failed PE.
template <class Done>
SYMM_DEVICE SYMM_FORCEINLINE void
device_wait_until(Done&& done, const char* what, int me, int peer, const std::byte* heap = nullptr) {
  std::uint64_t start = 0;
  for (unsigned polls = 1; !done(); ++polls) {
    if ((polls & 1023u) != 0) continue;
    std::uint64_t now = global_timer_ns();
    if (start == 0) start = now;
    else if (now - start > SYMM_DEVICE_WAIT_TIMEOUT_NS) report_deadlock(what, me, peer);
    if (const int failed = failed_peer(heap); failed >= 0) report_peer_failed(what, me, failed);
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
//! `heap`: as device_wait_until's.
template <class AtomicRef>
SYMM_DEVICE SYMM_FORCEINLINE void
device_wait_for_count(const AtomicRef& counter, std::uint64_t wanted, const char* what, int me, int peer,
                      const std::byte* heap = nullptr) {
  std::uint64_t start = 0, seen;
  for (unsigned polls = 1; (seen = counter.load(cuda::memory_order_acquire)) < wanted; ++polls) {
    if ((polls & 1023u) != 0) continue;
    std::uint64_t now = global_timer_ns();
    if (start == 0) start = now;
    else if (now - start > SYMM_DEVICE_WAIT_TIMEOUT_NS) report_count_deadlock(what, me, peer, seen, wanted);
    if (const int failed = failed_peer(heap); failed >= 0) report_peer_failed(what, me, failed);
  }
}

} // namespace detail
SYMM_END_NAMESPACE
#endif
