// symm/detail/backend/cuda/host_atomics_wait.hpp: host code reading and waiting on words in GPU memory (the cuda
// backend's heap, or other device memory): symm::wait_until / test and their span forms, signal_wait_until and
// signal_fetch.
//
// A CPU thread cannot load GPU memory, so a read is a small copy on the world's stream (after the world's earlier
// host-issued work; the writer's release and the copy give acquire order), and a wait copies the word (or words) again
// until the comparison holds, backing off from yields to sleeps of up to 100 us (1 ms for the span forms). Every few
// milliseconds the host checks that the other PEs are alive: a dead PE ends the wait in errc::peer_failed, as on the
// host backend.
//
// Why copies and not a kernel that watches the word: a kernel needs a free SM, and the wait is often for a kernel of
// the same process that fills the GPU (a persistent kernel), or, under compute-sanitizer, whose launch order makes
// later kernels wait for it: a waiting kernel would never start, or would hold up the very store the running kernel
// waits for. Copies run on the copy engines beside any kernel. Why not a stream wait (cuStreamWaitValue32/64): it
// cannot be cancelled; after a peer dies its value never comes, and the stream's pending work would hold up every later
// cudaFree and synchronisation of the context, the world's own teardown among them.
#pragma once

#include <symm/detail/config.hpp>
#include <symm/detail/host_wait.hpp>
#include <symm/detail/world_state.hpp>

#include <cstdint>
#include <string_view>

#if SYMM_CUDA_BACKEND()
#  include <symm/detail/backend/cuda/check.hpp>
#  include <symm/detail/backend/cuda/cuda_heap.hpp>
#  include <symm/detail/backend/cuda/host_atomics.hpp>
#  include <symm/detail/backend/cuda/host_atomics_kernels.hpp>

#  include <cuda/std/span>
#  include <cuda_runtime_api.h>

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
  return read_gpu_word(*world.cuda(), word);
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

//! Runs `round()` (a copy and a check; true when the wait is over) until it returns true, backing off up to `longest`
//! between rounds and checking every liveness_period that the other PEs are alive (errc::peer_failed otherwise).
//! False when `deadline` passed first.
template <class Round>
bool poll_gpu(const world_state& world, std::chrono::microseconds longest, std::string_view what, Round&& round,
              std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max()) {
  gpu_backoff backoff(longest);
  const host_wait_mark waiting = world.mark_host_wait();
  auto next_check = std::chrono::steady_clock::now() + liveness_period;
  while (!round()) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= next_check) {
      world.peers().check(what);
      next_check = now + liveness_period;
    }
    if (now >= deadline) return false;
    backoff.pause();
  }
  return true;
}

//! Copies the word, a 4- or 8-byte integer in GPU memory, until `met(value)` holds; returns the value seen.
template <class T, class Met>
std::remove_cv_t<T> gpu_wait(const world_state& world, const T* word, Met&& met, std::string_view what) {
  using value_type = std::remove_cv_t<T>;
  constexpr bool integer_word = std::is_integral_v<value_type> && (sizeof(T) == 4 || sizeof(T) == 8);
  static_assert(integer_word, "gpu_wait: 4- or 8-byte integers only");
  value_type seen{};
  poll_gpu(world, std::chrono::microseconds(100), what, [&] {
    seen = read_gpu_word(world, word);
    return met(seen);
  });
  return seen;
}

//! gpu_wait until `deadline` at most: ok and the value that satisfied `met`, or timed_out and the value seen last.
template <class T, class Met>
wait_result<std::remove_cv_t<T>>
gpu_wait_until_deadline(const world_state& world, const T* word, Met&& met, std::string_view what,
                        std::chrono::steady_clock::time_point deadline) {
  std::remove_cv_t<T> seen{};
  const bool met_it = poll_gpu(
      world, std::chrono::microseconds(100), what,
      [&] {
        seen = read_gpu_word(world, word);
        return met(seen);
      },
      deadline);
  return {met_it ? wait_status::ok : wait_status::timed_out, seen};
}

//! Copies the `n` words at `words` (GPU memory) until `done(snapshot)` holds for a snapshot of them.
template <class T, class Done>
void gpu_poll(const world_state& world, const T* words, std::size_t n, Done&& done, std::string_view what) {
  std::vector<std::remove_cv_t<T>> snapshot(n);
  poll_gpu(world, std::chrono::milliseconds(1), what, [&] {
    read_gpu_words(world, words, n, snapshot.data());
    return done(cuda::std::span<const std::remove_cv_t<T>>(snapshot.data(), n));
  });
}

#endif // SYMM_CUDA_BACKEND()

} // namespace detail
SYMM_END_NAMESPACE
