// symm/detail/host_wait.hpp: host-side waiting on a word of the symmetric heap, and the wake-ups that host-side
// writers owe to waiters (world_state::wake_word_waiters). Used by the atomics (pe_ref), symm/wait.hpp and
// symm/signal.hpp.
//
// A 4-byte word is waited on with a futex: spin briefly, then sleep until a writer wakes the word. Each PE's control
// page counts the threads asleep on words of its heap ("sleepers"); a host writer through symm (an atomic, a p, a
// signal) wakes the word only when that count is not 0, so writes cost a fence and a load, not a system call, when
// nobody sleeps. The lost-wake-up race is closed Dekker style: the waiter counts itself, fences and re-reads the word
// before sleeping; the writer writes, fences and reads the count. A write symm does not see (a bulk put into an array
// of 4-byte words, a store by a kernel into host memory) is noticed when the sleep times out: sleeps start at 50 us and
// grow to 5 ms. 8-byte words cannot be futex words, so those waits spin with std::this_thread::yield().
// Either way, every few milliseconds the waiter checks that the other PEs are alive (detail::liveness), so a wait for
// a PE that died ends in errc::peer_failed instead of hanging. Words in GPU memory (the cuda backend's heap) cannot be
// read by a CPU thread: detail/backend/cuda/host_atomics_wait.hpp waits on those, with the same liveness checks.
#pragma once

#include <symm/detail/control_segment.hpp>
#include <symm/detail/world_state.hpp>
#include <symm/error.hpp>
#include <symm/wait_status.hpp>

#if SYMM_CUDA_BACKEND()
#  include <cuda_runtime_api.h>
#endif

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string_view>
#include <thread>
#include <type_traits>

SYMM_BEGIN_NAMESPACE
namespace detail {

//! Throws errc::unsupported when host code cannot do atomics on the heap of `world`. On the host backend they are CPU
//! atomics; on the cuda backend the heap is GPU memory, which a CPU thread cannot update atomically, so host code runs
//! them in a one-thread kernel (detail/backend/cuda/host_atomics.hpp), which only a translation unit compiled with
//! the CUDA backend (SYMM_ENABLE_CUDA=1) has: a program whose world was made elsewhere can reach this without it.
inline void require_host_atomics(const world_interface* world, int pe, std::string_view what) {
  if (world->kind() == symm::backend::host) return;
  if (SYMM_CUDA_BACKEND() && heap_on_gpu(world->kind())) return;
  throw_no_host_atomics(world, pe, what);
}

//! The PE whose heap holds `address` as mapped by this PE, or -1 for memory outside every heap.
inline int heap_owner(const world_state& world, const void* address) {
  auto* p = static_cast<const std::byte*>(address);
  for (int pe = 0; pe < world.n_pes(); ++pe) {
    const std::byte* base = world.peer_bases()[pe];
    if (p >= base && p < base + world.heap_bytes()) return pe;
  }
  return -1;
}

//! Whether host code must reach `address` through the GPU (copies: detail/backend/cuda/host_atomics_wait.hpp) rather
//! than with CPU loads: the heap on the cuda backend, or other device memory. Host memory (a pinned flag a kernel
//! writes, say) is read directly on either backend; on the host backend nothing is GPU memory that symm could reach
//! (that world has no GPU of its own).
inline bool in_gpu_memory(const world_state& world, const void* address) {
  if (world.kind() == symm::backend::host) return false;
  if (heap_owner(world, address) >= 0) return true;
#if SYMM_CUDA_BACKEND()
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, address) != cudaSuccess) {
    (void) cudaGetLastError();
    return false;
  }
  return attributes.type == cudaMemoryTypeDevice;
#else
  return false;
#endif
}

//! How often a host wait checks the other PEs' health.
inline constexpr std::chrono::milliseconds liveness_period{5};

//! The steady_clock time `timeout_ns` from now; time_point::max() (no deadline) for one of centuries.
inline std::chrono::steady_clock::time_point host_deadline(std::uint64_t timeout_ns) {
  constexpr std::uint64_t century_ns = 3155760000000000000ull;
  if (timeout_ns >= century_ns) return std::chrono::steady_clock::time_point::max();
  return std::chrono::steady_clock::now() + std::chrono::nanoseconds(static_cast<std::int64_t>(timeout_ns));
}

//! Waits until `done(value)` holds for the value of `*word` (a 4- or 8-byte word of PE owner's heap, or -1 for memory
//! outside the heaps), or until `deadline` passes; returns ok and that value, or timed_out and the value seen last.
//! Acquire: what was written before the satisfying write is visible after. Throws errc::peer_failed when another PE
//! fails meanwhile. The deadline is looked at with the liveness clock, so a wait may outlast it by one futex sleep
//! (up to 5 ms).
template <class T, class Done>
wait_result<std::remove_cv_t<T>>
host_wait_until_deadline(const world_state& world, int owner, T* word, Done&& done, std::string_view what,
                         std::chrono::steady_clock::time_point deadline) {
  using value_type = std::remove_cv_t<T>;
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "host_wait: 4- or 8-byte words only");
  std::atomic_ref<value_type> atom(*const_cast<value_type*>(word));
  for (int spin = 0; spin < 2048; ++spin) {
    value_type v = atom.load(std::memory_order_acquire);
    if (done(v)) return {wait_status::ok, v};
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
  }
  const host_wait_mark waiting = world.mark_host_wait();
  auto next_check = std::chrono::steady_clock::now() + liveness_period;
  std::chrono::microseconds sleep{50};
  for (unsigned round = 0;; ++round) {
    if constexpr (sizeof(T) == sizeof(std::uint32_t)) {
      auto sleepers = atomic_at(world.control(owner < 0 ? world.my_pe() : owner).sleepers);
      sleepers.fetch_add(1, std::memory_order_seq_cst);
      std::atomic_thread_fence(std::memory_order_seq_cst);
      value_type seen = atom.load(std::memory_order_seq_cst);
      if (!done(seen)) {
        std::uint32_t bits;
        static_assert(sizeof(bits) == sizeof(seen));
        __builtin_memcpy(&bits, &seen, sizeof(bits));
        futex_wait(reinterpret_cast<std::uint32_t*>(const_cast<value_type*>(word)), bits, sleep);
        if (sleep < std::chrono::milliseconds(5)) sleep *= 2;
      }
      sleepers.fetch_sub(1, std::memory_order_relaxed);
    } else {
      std::this_thread::yield();
    }
    value_type v = atom.load(std::memory_order_acquire);
    if (done(v)) return {wait_status::ok, v};
    if ((round & 63u) == 0 || sizeof(T) == sizeof(std::uint32_t)) {
      auto now = std::chrono::steady_clock::now();
      if (now >= next_check) {
        world.peers().check(what);
        next_check = now + liveness_period;
      }
      if (now >= deadline) return {wait_status::timed_out, v};
    }
  }
}

//! host_wait_until_deadline without a deadline: waits while the other PEs live and returns the value that satisfied
//! `done`.
template <class T, class Done>
std::remove_cv_t<T> host_wait(const world_state& world, int owner, T* word, Done&& done, std::string_view what) {
  return host_wait_until_deadline(world, owner, word, done, what, std::chrono::steady_clock::time_point::max()).value;
}

//! Waits until `done()` holds, where done reads several words (wait_until_any / some): spins, then yields, checking
//! liveness as host_wait does.
template <class Done>
void host_poll(const world_state& world, Done&& done, std::string_view what) {
  for (int spin = 0; spin < 2048; ++spin) {
    if (done()) return;
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
  }
  const host_wait_mark waiting = world.mark_host_wait();
  auto next_check = std::chrono::steady_clock::now() + liveness_period;
  for (unsigned round = 0;; ++round) {
    std::this_thread::yield();
    if (done()) return;
    if ((round & 63u) == 0) {
      auto now = std::chrono::steady_clock::now();
      if (now >= next_check) {
        world.peers().check(what);
        next_check = now + liveness_period;
      }
    }
  }
}

} // namespace detail
SYMM_END_NAMESPACE
