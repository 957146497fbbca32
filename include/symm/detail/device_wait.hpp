// symm/detail/device_wait.hpp: bounded device-side spinning. A wait that lasts longer than SYMM_DEVICE_WAIT_TIMEOUT_NS
// (default 20 s) is a probable deadlock: it prints what it waited for and traps, instead of hanging the GPU.
#pragma once

#include <symm/detail/config.hpp>

#include <cstdint>
#include <cstdio>

#if !defined(SYMM_DEVICE_WAIT_TIMEOUT_NS)
#  define SYMM_DEVICE_WAIT_TIMEOUT_NS 20000000000ull
#endif

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

//! Spins until done() holds. The clock is first read after 1024 polls and then every 1024, so a wait that ends soon
//! costs its polls alone (a %globaltimer read is slow next to a poll).
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

//! device_wait_until with a bound that ends the wait instead of trapping: true when done() held, false when more than
//! `timeout_ns` passed first. The same polls and clock reads (the clock starts at the 1024th poll, so a wait that times
//! out lasts at least the timeout); its own loop, so that the trapping one stays as it is.
template <class Done>
[[nodiscard]] SYMM_DEVICE SYMM_FORCEINLINE bool device_wait_until_for(Done&& done, std::uint64_t timeout_ns) {
  std::uint64_t start = 0;
  for (unsigned polls = 1; !done(); ++polls) {
    if ((polls & 1023u) != 0) continue;
    std::uint64_t now = global_timer_ns();
    if (start == 0) start = now;
    else if (now - start > timeout_ns) return false;
  }
  return true;
}

//! Spins until the counter reaches `wanted`. The polls are acquire loads: an acquire fence after the wait would cost
//! a second system-wide memory barrier per barrier round (MEMBAR.SYS; an acquire load is a load and an L1 invalidate).
template <class AtomicRef>
SYMM_DEVICE SYMM_FORCEINLINE void
device_wait_for_count(const AtomicRef& counter, std::uint64_t wanted, const char* what, int me, int peer) {
  std::uint64_t start = 0, seen;
  for (unsigned polls = 1; (seen = counter.load(cuda::memory_order_acquire)) < wanted; ++polls) {
    if ((polls & 1023u) != 0) continue;
    std::uint64_t now = global_timer_ns();
    if (start == 0) start = now;
    else if (now - start > SYMM_DEVICE_WAIT_TIMEOUT_NS) report_count_deadlock(what, me, peer, seen, wanted);
  }
}

} // namespace detail
SYMM_END_NAMESPACE
#endif
