// symm/detail/backend/cuda/result_words.hpp: the pinned words that value futures own (detail::result_word): a
// host-side nbi atomic's kernel, or a get_nbi's copy, writes the value there, and future<T>::get() reads it once the
// operation is complete, without a CUDA call of its own.
//
// One pool per heap, and every operation that writes one of its words is enqueued on that heap's stream: a word can
// go back to the pool the moment its future lets go of it, even when that future was dropped before its operation
// ran, because the next operation to take the word is enqueued after the old one and writes after it (stream order),
// and nobody reads the old value. (A word shared between two streams could be written late by the first stream's
// operation after the second stream's: hence a pool per heap, not per process.)
//
// The pool's first block is allocated when the heap is made, before any kernel of the job runs (allocating pinned
// memory can wait for running kernels, which may wait for this very thread: host_atomics_kernels.hpp). It doubles only
// when more value futures are alive at once than it holds (4096 at first). It lives as long as the heap or the last
// future holding one of its words, whichever is later; `ended()` tells such a future that the heap, whose stream was
// synchronised before it ended, is gone, so that it reads its final value without touching the dead stream.
#pragma once

#include <symm/detail/config.hpp>

#if SYMM_CUDA_BACKEND()
#  include <symm/detail/backend/cuda/check.hpp>
#  include <symm/detail/completion.hpp>

#  include <cuda_runtime_api.h>

#  include <atomic>
#  include <cstddef>
#  include <cstdint>
#  include <memory>
#  include <mutex>
#  include <vector>

SYMM_BEGIN_NAMESPACE
namespace detail {

class result_word_pool : public std::enable_shared_from_this<result_word_pool> {
public:
  static constexpr std::size_t first_block_words = 4096;

  //! Allocates the first block (pinned, mapped, portable: a kernel on any device may write it).
  static std::shared_ptr<result_word_pool> make() {
    auto pool = std::shared_ptr<result_word_pool>(new result_word_pool);
    pool->grow(first_block_words);
    return pool;
  }

  result_word_pool(const result_word_pool&) = delete;
  result_word_pool& operator=(const result_word_pool&) = delete;
  ~result_word_pool() {
    for (const block& b : blocks_)
      (void) cudaFreeHost(b.words); // at exit the runtime may be gone already: nothing to report
  }

  //! A zeroed word for one operation about to be enqueued on the heap's stream (the heap's device current), held by
  //! the returned pointer: one allocation, the shared_ptr's control block.
  std::shared_ptr<result_word> take() {
    std::lock_guard lock(mutex_);
    if (free_.empty()) grow(capacity_); // more value futures alive than words: double (see the header comment)
    result_word* word = free_.back();
    free_.pop_back();
    *word->bits = 0; // a 4-byte load's copy fills only the low half
    word->source_ended = &ended_;
    return std::shared_ptr<result_word>(word, [pool = shared_from_this()](result_word* w) { pool->give_back(w); });
  }

  //! The heap is ending, its stream synchronised: every word holds its final value.
  void heap_ended() noexcept { ended_.store(true, std::memory_order_release); }

private:
  struct block {
    std::uint64_t* words;
    std::unique_ptr<result_word[]> slots;
  };

  result_word_pool() = default;

  void give_back(result_word* word) noexcept {
    std::lock_guard lock(mutex_);
    free_.push_back(word); // cannot throw: reserved for every word in grow()
  }

  void grow(std::size_t count) {
    // Everything that can throw first, so that a failure leaves the pool as it was.
    free_.reserve(capacity_ + count);
    blocks_.reserve(blocks_.size() + 1);
    auto slots = std::make_unique<result_word[]>(count);
    void* memory = nullptr;
    SYMM_TRY_CUDA(cudaHostAlloc(&memory, count * sizeof(std::uint64_t), cudaHostAllocPortable | cudaHostAllocMapped));
    block b{static_cast<std::uint64_t*>(memory), std::move(slots)};
    for (std::size_t i = 0; i < count; ++i) {
      b.slots[i].bits = b.words + i;
      free_.push_back(&b.slots[i]);
    }
    blocks_.push_back(std::move(b));
    capacity_ += count;
  }

  std::mutex mutex_;
  std::vector<block> blocks_;
  std::vector<result_word*> free_;
  std::size_t capacity_ = 0;
  std::atomic<bool> ended_{false};
};

} // namespace detail
SYMM_END_NAMESPACE

#endif // SYMM_CUDA_BACKEND()
