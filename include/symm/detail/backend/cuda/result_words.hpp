// symm/detail/backend/cuda/result_words.hpp: the pinned words that value futures own (detail::result_word): a
// host-side nbi atomic's kernel, or a get_nbi's copy, writes the value there, and future<T>::get() reads it once the
// operation is complete, without a CUDA call of its own.
//
// Reuse: a word goes back to host_side_pool at once when its future saw the operation complete (get() or wait()). A
// future dropped before that cannot give it back at once, since the kernel or copy may still write it: such a word
// waits here, with its stream, until that stream has been seen idle (every operation on it finished) or has ended
// (cuda_heap synchronises its stream before it ends it). Retired words are looked at when a word is taken, at most one
// cudaStreamQuery per stream per take, so that a dropped future costs nothing when it is dropped.
#pragma once

#include <symm/detail/config.hpp>

#if SYMM_CUDA_BACKEND()
#  include <symm/detail/backend/cuda/host_atomics_kernels.hpp>
#  include <symm/detail/completion.hpp>

#  include <cuda_runtime_api.h>

#  include <algorithm>
#  include <memory>
#  include <mutex>
#  include <utility>
#  include <vector>

SYMM_BEGIN_NAMESPACE
namespace detail {

class result_words {
public:
  static result_words& instance() {
    static result_words* words = new result_words; // leaked on purpose, as host_side_pool (a future may outlive main)
    return *words;
  }

  //! A word for one operation about to be enqueued on `stream` (a stream of a live cuda_heap).
  std::shared_ptr<result_word> take(cudaStream_t stream) {
    reclaim_idle();
    host_side_words* words = host_side_pool::instance().take();
    auto* bits = reinterpret_cast<const std::uint64_t*>(&words->result);
    return std::shared_ptr<result_word>(new result_word{bits, false}, [stream, words](result_word* word) {
      instance().release(words, stream, word->complete);
      delete word;
    });
  }

  //! A cuda_heap's stream, from its creation to its end (after the heap synchronised it).
  void stream_started(cudaStream_t stream) {
    std::lock_guard lock(mutex_);
    live_.push_back(stream);
  }
  void stream_ended(cudaStream_t stream) noexcept {
    std::lock_guard lock(mutex_);
    std::erase(live_, stream);
    give_back_if(retired_, [&](const retired& r) { return r.stream == stream; });
  }

private:
  struct retired {
    host_side_words* words;
    cudaStream_t stream;
  };

  void release(host_side_words* words, cudaStream_t stream, bool complete) noexcept {
    std::lock_guard lock(mutex_);
    // A stream no longer live was synchronised before it ended: nothing writes the word any more.
    if (complete || std::ranges::find(live_, stream) == live_.end()) {
      host_side_pool::instance().give_back(words);
      return;
    }
    try {
      retired_.push_back({words, stream});
    } catch (...) { // out of memory: the word is lost, nothing else
    }
  }

  //! Gives back the retired words of every stream now idle.
  void reclaim_idle() {
    std::lock_guard lock(mutex_);
    if (retired_.empty()) return;
    std::vector<cudaStream_t> idle;
    for (const retired& r : retired_) {
      if (std::ranges::find(idle, r.stream) != idle.end()) continue;
      const cudaError_t status = cudaStreamQuery(r.stream);
      if (status == cudaSuccess) idle.push_back(r.stream);
      else if (status != cudaErrorNotReady) (void) cudaGetLastError(); // an error belongs to the stream's own calls
    }
    give_back_if(retired_, [&](const retired& r) { return std::ranges::find(idle, r.stream) != idle.end(); });
  }

  template <class Pred>
  static void give_back_if(std::vector<retired>& list, Pred pred) noexcept {
    const auto tail = std::ranges::partition(list, [&](const retired& r) { return !pred(r); });
    for (const retired& r : tail)
      host_side_pool::instance().give_back(r.words);
    list.erase(tail.begin(), tail.end());
  }

  std::mutex mutex_;
  std::vector<cudaStream_t> live_;
  std::vector<retired> retired_;
};

} // namespace detail
SYMM_END_NAMESPACE

#endif // SYMM_CUDA_BACKEND()
