// symm/detail/wait_trap_record.hpp: why a device wait gave up, written where the host can read it. A trapping wait
// (a probable deadlock, or a peer that failed) must say why before it traps; a printf there costs every kernel that
// merely holds such a wait, on its fast path: any call makes ptxas order each system fence against the callee
// (`@!PT LDS` x4 and MEMBAR.ALL.CTA before every MEMBAR.ALL.SYS), which slowed symm's device barrier and put_signal
// round trip against hand-written kernels. So the wait writes its reason into this record, with plain stores and no
// call, and traps. The record is this PE's mapped pinned host memory (the failure word is its first member), so the
// host still reads it after the trap has ended the CUDA context: the failure monitor prints it within its period, and
// the heap's teardown prints it if the monitor did not (report_wait_trap, once).
#pragma once

#include <symm/detail/config.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <type_traits>

#if SYMM_CUDA_COMPILATION()
#  include <cuda/atomic>
#endif

SYMM_BEGIN_NAMESPACE
namespace detail {

//! Why a wait gave up.
enum class wait_trap_reason : std::uint32_t {
  none = 0,
  deadlock = 1,       //!< it waited longer than SYMM_DEVICE_WAIT_TIMEOUT_NS
  count_deadlock = 2, //!< the same, in a wait for a counter (seen and wanted say how far it got)
  peer_failed = 3,    //!< the failure word named a failed PE (peer)
};

//! Whether a wait wrote the record. Only the thread that claimed it (the first of the PE to give up) writes it, and
//! marks it written last.
enum class wait_trap_state : std::uint32_t { free = 0, written = 1 };

//! Bytes of the wait's name kept (with its terminating 0).
inline constexpr std::size_t wait_trap_what_bytes = 96;

//! One per PE, in mapped pinned host memory; its device address is the heap header's failure slot (device_wait.hpp).
struct alignas(16) wait_trap_record {
  //! The failure word: failed PE + 1, 0 while none failed (failure_code, failure_monitor.hpp); first, so that a
  //! pointer to the record is a pointer to the word.
  std::uint32_t failure_code;
  std::uint32_t state;  //!< a wait_trap_state, set by device code
  std::uint32_t reason; //!< a wait_trap_reason
  std::int32_t pe;      //!< the PE whose kernel gave up (-1: unknown)
  std::int32_t peer;    //!< the PE it waited for (deadlocks; -1: none), or the failed PE
  std::uint32_t block;
  std::uint32_t thread;
  std::uint32_t reported;   //!< set by the host once it printed the record
  std::uint64_t seen;       //!< count_deadlock: the count last seen
  std::uint64_t wanted;     //!< count_deadlock: the count waited for
  std::uint64_t timeout_ms; //!< the kernel's SYMM_DEVICE_WAIT_TIMEOUT_NS, in ms (the host's may differ)
  char what[wait_trap_what_bytes];
};
static_assert(offsetof(wait_trap_record, failure_code) == 0,
              "device waits read the failure word at the record's "
              "address");
static_assert(sizeof(wait_trap_record) == 160 && std::is_trivially_copyable_v<wait_trap_record>);

#if SYMM_CUDA_COMPILATION()
//! Device code: claims the record through `claim` (a word of this PE's GPU memory, 0 until the first thread to give
//! up sets it: a device-scope exchange, since atomics on host memory need PCIe AtomicOps that not every host has) and,
//! when this thread won it, writes why. No call and no local memory (see the top of this file). The written state is
//! a system-scope release, so the host that sees it sees the fields. Returns whether this thread wrote the record.
SYMM_DEVICE SYMM_FORCEINLINE bool
record_wait_trap(std::uint32_t* claim, wait_trap_record* record, wait_trap_reason reason, const char* what, int pe,
                 int peer, std::uint64_t timeout_ms, std::uint64_t seen = 0, std::uint64_t wanted = 0) {
  if (cuda::atomic_ref<std::uint32_t, cuda::thread_scope_device>(*claim).exchange(1u, cuda::memory_order_relaxed) != 0)
    return false;
  record->reason = static_cast<std::uint32_t>(reason);
  record->pe = pe;
  record->peer = peer;
  record->block = blockIdx.x;
  record->thread = threadIdx.x;
  record->seen = seen;
  record->wanted = wanted;
  record->timeout_ms = timeout_ms;
  std::size_t i = 0;
  // One byte at a time: a cold path, and `what` (a string literal) has no alignment to rely on.
#  pragma unroll 1
  for (; i + 1 < wait_trap_what_bytes && what != nullptr && what[i] != '\0'; ++i)
    record->what[i] = what[i];
  record->what[i] = '\0';
  cuda::atomic_ref<std::uint32_t, cuda::thread_scope_system>(record->state)
      .store(static_cast<std::uint32_t>(wait_trap_state::written), cuda::memory_order_release);
  return true;
}
#endif

//! Host code: prints a written record to `out` once (later calls, and calls before the device wrote it, print nothing),
//! in the words the device waits used to print. Returns whether it printed.
inline bool report_wait_trap(wait_trap_record& record, std::FILE* out) noexcept {
  if (std::atomic_ref<std::uint32_t>(record.state).load(std::memory_order_acquire) !=
      static_cast<std::uint32_t>(wait_trap_state::written)) {
    return false;
  }
  if (std::atomic_ref<std::uint32_t>(record.reported).exchange(1, std::memory_order_acq_rel) != 0) return false;
  char what[wait_trap_what_bytes];
  for (std::size_t i = 0; i < wait_trap_what_bytes; ++i)
    what[i] = record.what[i];
  what[wait_trap_what_bytes - 1] = '\0';
  const auto timeout_ms = static_cast<unsigned long long>(record.timeout_ms);
  switch (static_cast<wait_trap_reason>(record.reason)) {
    case wait_trap_reason::peer_failed:
      std::fprintf(out, "symm: PE %d waited in %s: PE %d failed (block %u, thread %u); the kernel trapped\n", record.pe,
                   what, record.peer, record.block, record.thread);
      break;
    case wait_trap_reason::count_deadlock:
      std::fprintf(out,
                   "symm: PE %d waited %llu ms in %s for PE %d (block %u, thread %u; count %llu, waiting for %llu): "
                   "probable deadlock; the kernel trapped\n",
                   record.pe, timeout_ms, what, record.peer, record.block, record.thread,
                   static_cast<unsigned long long>(record.seen), static_cast<unsigned long long>(record.wanted));
      break;
    default:
      if (record.peer < 0) { // a wait on this PE's own word (a signal), for no PE in particular
        std::fprintf(out,
                     "symm: PE %d waited %llu ms in %s (block %u, thread %u): probable deadlock; the kernel trapped\n",
                     record.pe, timeout_ms, what, record.block, record.thread);
      } else {
        std::fprintf(out,
                     "symm: PE %d waited %llu ms in %s for PE %d (block %u, thread %u): probable deadlock; the "
                     "kernel trapped\n",
                     record.pe, timeout_ms, what, record.peer, record.block, record.thread);
      }
      break;
  }
  std::fflush(out);
  return true;
}

} // namespace detail
SYMM_END_NAMESPACE
