// symm/detail/backend/cuda/host_atomics_wait.hpp: host code reading and waiting on words in GPU memory (the cuda
// backend's heap, or other device memory): symm::wait_until / test and their span forms, signal_wait_until and
// signal_fetch.
//
// A CPU thread cannot load GPU memory, so a read is a small copy on the world's stream (after the world's earlier
// host-issued work; the writer's release and the copy give acquire order). A wait for one word launches symm's wait
// kernel (one thread, host_atomics_ptx.hpp) on a private stream of the calling thread: it polls the word with acquire
// loads at system scope until the comparison holds and reports the value into pinned host memory, which the host polls
// without any CUDA call, backing off from yields to sleeps of up to 100 us. Every few milliseconds the host checks that
// the other PEs are alive: a dead PE ends the wait in errc::peer_failed, as on the host backend.
//
// The kernel needs an SM. When it has not reported within a few of its milliseconds it is not running: the GPU is
// full (a persistent kernel, several PEs' grids), or compute-sanitizer runs the process's kernels one at a time and a
// kernel that waits for this very host thread is running. Then the host also copies the word each round, as the span
// forms do: copies need no SM, so the wait ends whichever sees the value first.
//
// Why a kernel and not a stream wait (cuStreamWaitValue32/64, which costs no GPU thread): a stream wait cannot be
// cancelled. After a peer dies its value never comes, and the stream's pending work would then hold up every later
// cudaFree and synchronisation of the context, the world's own teardown among them: a hang. The kernel watches a
// cancel word (pinned host memory) too, and ends within microseconds of the host setting it; and it gives up after
// about a millisecond, when the host launches it again, so that a cudaFree or cudaDeviceSynchronize in another thread
// of the process (PEs as threads share a context) waits for it no longer than that, even when that thread is the one
// that is to write the word. Why not copies alone: a running kernel sees the value within a microsecond, a copy round
// trip costs several.
//
// The span forms (wait_until_any / _some) copy the words with the same back-off and liveness checks.
#pragma once

#include <symm/detail/config.hpp>
#include <symm/detail/host_wait.hpp>
#include <symm/detail/world_state.hpp>

#include <cstdint>
#include <string_view>

#if SYMM_CUDA_BACKEND()
#  include <symm/detail/backend/cuda/check.hpp>
#  include <symm/detail/backend/cuda/driver.hpp>
#  include <symm/detail/backend/cuda/host_atomics.hpp>

#  include <cuda.h>
#  include <cuda/std/span>
#  include <cuda_runtime_api.h>

#  include <atomic>
#  include <chrono>
#  include <cstring>
#  include <thread>
#  include <type_traits>
#  include <vector>
#endif

SYMM_BEGIN_NAMESPACE
namespace detail {

#if SYMM_CUDA_BACKEND()

//! The word now, copied after the world stream's earlier work; acquire order with respect to the GPU's writes.
template <class T>
std::remove_cv_t<T> read_gpu_word(const world_state& world, const T* word) {
  static_assert(sizeof(T) <= sizeof(std::uint64_t));
  cuda_heap& heap = *world.cuda();
  unsigned long long* bounce = &thread_host_side_words().result; // pinned: a faster copy than into pageable memory
  SYMM_TRY_CUDA(cudaMemcpyAsync(bounce, word, sizeof(T), cudaMemcpyDeviceToHost, heap.stream()));
  SYMM_TRY_CUDA(cudaStreamSynchronize(heap.stream()));
  std::remove_cv_t<T> value;
  std::memcpy(&value, bounce, sizeof(T));
  return value;
}

//! `n` words now, into `out`.
template <class T>
void read_gpu_words(const world_state& world, const T* words, std::size_t n, std::remove_cv_t<T>* out) {
  if (n == 0) return;
  cuda_heap& heap = *world.cuda();
  SYMM_TRY_CUDA(cudaMemcpyAsync(out, words, n * sizeof(T), cudaMemcpyDefault, heap.stream()));
  SYMM_TRY_CUDA(cudaStreamSynchronize(heap.stream()));
}

//! Yields at first, then sleeps from 10 us up to `longest`: a GPU wait is for a kernel of another PE, which may take
//! long.
class gpu_backoff {
public:
  explicit gpu_backoff(std::chrono::microseconds longest) : longest_(longest) {}
  void pause() {
    if (rounds_++ < 64) {
      std::this_thread::yield();
      return;
    }
    std::this_thread::sleep_for(sleep_);
    if (sleep_ < longest_) sleep_ *= 2;
  }

private:
  unsigned rounds_ = 0;
  std::chrono::microseconds sleep_{10};
  std::chrono::microseconds longest_;
};

//! The calling thread's wait machinery: a non-blocking stream on one device for the wait kernels (its pinned report
//! and cancel words are thread_host_side_words()), and the generation of its latest wait: each wait takes a new one, so
//! that a report or a cancel is never taken for another wait's.
struct host_wait_slot {
  int device = -1;
  cudaStream_t stream = nullptr;
  unsigned generation = 0;

  host_wait_slot() = default;
  host_wait_slot(const host_wait_slot&) = delete;
  host_wait_slot& operator=(const host_wait_slot&) = delete;
  ~host_wait_slot() {
    // At thread exit; at process exit CUDA may be gone already, and then there is nothing to free.
    if (stream != nullptr) (void) cudaStreamDestroy(stream);
    (void) cudaGetLastError();
  }

  //! Ready for a wait on `on_device` (the current device).
  void prepare(int on_device) {
    if (stream == nullptr || device != on_device) {
      // A cancelled kernel may still be queued there; it ends by itself, and the driver frees the stream after.
      if (stream != nullptr) SYMM_TRY_CUDA(cudaStreamDestroy(stream));
      stream = nullptr;
      SYMM_TRY_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
      device = on_device;
    }
  }
};
inline host_wait_slot& thread_host_wait_slot() {
  thread_local host_wait_slot slot;
  return slot;
}

//! Waits until `*word <c> value` (c: symm::cmp's code) for a 4- or 8-byte integer in GPU memory; returns the value
//! seen. `met(v)` is the same comparison on the host, for the copies taken when the kernel does not run. Throws
//! errc::peer_failed when another PE fails meanwhile (see the header comment).
template <class T, class Met>
std::remove_cv_t<T>
gpu_wait(const world_state& world, T* word, int c, std::remove_cv_t<T> value, Met&& met, std::string_view what) {
  using value_type = std::remove_cv_t<T>;
  constexpr bool integer_word = std::is_integral_v<value_type> && (sizeof(T) == 4 || sizeof(T) == 8);
  static_assert(integer_word, "gpu_wait: 4- or 8-byte integers only");
  const int device = world.cuda()->device();
  context_scope on(device);
  host_wait_slot& slot = thread_host_wait_slot();
  slot.prepare(device);
  const unsigned generation = ++slot.generation;
  host_side_words& words = thread_host_side_words();
  std::atomic_ref<unsigned long long> status(words.report[1]);
  std::atomic_ref<unsigned> cancel(words.cancel);
  status.store(0, std::memory_order_relaxed);

  const host_kernels kernels = host_kernels_of(device);
  auto address = static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(word));
  unsigned long long value_bits = atomic_bits(value);
  unsigned long long* report = words.report;
  const unsigned* cancel_word = &words.cancel;
  unsigned kernel_generation = generation;
  int type = static_cast<int>(atomic_type_code_of<value_type>()), compare = c;
  void* params[] = {&address, &value_bits, &report, &cancel_word, &kernel_generation, &type, &compare};
  SYMM_TRY_CU(driver().cuLaunchKernel(
      kernels.wait, 1, 1, 1, 1, 1, 1, 0, reinterpret_cast<CUstream>(slot.stream), params, nullptr));

  const unsigned long long met_status = 2ull * generation + 1;
  // Leaving by an exception (a dead peer, a CUDA error) cancels the kernel; it ends by itself within microseconds.
  // So does leaving on a copy's value: a kernel still queued ends as soon as it starts.
  struct cancel_on_exit {
    std::atomic_ref<unsigned>& cancel;
    unsigned generation;
    ~cancel_on_exit() { cancel.store(generation, std::memory_order_release); }
  } cancel_guard{cancel, generation};
  // A running kernel reports at least every millisecond; silence for longer than this means it has not started.
  constexpr auto kernel_silence = std::chrono::milliseconds(4);
  auto launched = std::chrono::steady_clock::now();
  bool copying = false;
  gpu_backoff backoff(std::chrono::microseconds(100));
  auto next_check = std::chrono::steady_clock::now() + liveness_period;
  for (;;) {
    const unsigned long long reported = status.load(std::memory_order_acquire);
    if (reported == met_status) return atomic_from_bits<value_type>(words.report[0]);
    if (reported == met_status - 1) { // its millisecond is up (it has ended, or is about to): again
      status.store(0, std::memory_order_relaxed);
      SYMM_TRY_CU(driver().cuLaunchKernel(
          kernels.wait, 1, 1, 1, 1, 1, 1, 0, reinterpret_cast<CUstream>(slot.stream), params, nullptr));
      launched = std::chrono::steady_clock::now();
    }
    const auto now = std::chrono::steady_clock::now();
    copying = copying || now - launched > kernel_silence;
    if (copying) {
      const value_type seen = read_gpu_word(world, word);
      if (met(seen)) return seen;
    }
    if (now >= next_check) {
      world.peers().check(what);
      next_check = now + liveness_period;
      // A kernel that failed (an address it could not read) never reports: the stream says so.
      const cudaError_t state = cudaStreamQuery(slot.stream);
      if (state != cudaSuccess && state != cudaErrorNotReady) {
        throw_cuda_error(state, "symm's host wait kernel (cudaStreamQuery)");
      }
      if (state == cudaSuccess && status.load(std::memory_order_acquire) == 0) {
        SYMM_THROW(errc::cuda, "PE {}: {}: symm's host wait kernel ended without reporting", world.my_pe(), what);
      }
    }
    backoff.pause();
  }
}

//! Waits until `done(snapshot)` holds for a snapshot (a host copy) of the `n` words at `words` (GPU memory), copying
//! them again each round with the same back-off and liveness checks as gpu_wait.
template <class T, class Done>
void gpu_poll(const world_state& world, const T* words, std::size_t n, Done&& done, std::string_view what) {
  std::vector<std::remove_cv_t<T>> snapshot(n);
  gpu_backoff backoff(std::chrono::milliseconds(1));
  auto next_check = std::chrono::steady_clock::now() + liveness_period;
  for (;;) {
    read_gpu_words(world, words, n, snapshot.data());
    if (done(cuda::std::span<const std::remove_cv_t<T>>(snapshot.data(), n))) return;
    const auto now = std::chrono::steady_clock::now();
    if (now >= next_check) {
      world.peers().check(what);
      next_check = now + liveness_period;
    }
    backoff.pause();
  }
}

#endif // SYMM_CUDA_BACKEND()

} // namespace detail
SYMM_END_NAMESPACE
