// symm/detail/completion.hpp: what a symm::future waits on: a flag set by the host copy engine, or a CUDA event.
#pragma once

#include <symm/detail/config.hpp>

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <type_traits>

SYMM_BEGIN_NAMESPACE
namespace detail {

class completion {
public:
  virtual ~completion() = default;
  [[nodiscard]] virtual bool ready() = 0;
  //! Blocks until complete; rethrows the operation's error, if it had one.
  virtual void wait() = 0;
};

class flag_completion final : public completion {
public:
  void set(std::exception_ptr failure = nullptr) {
    failure_ = std::move(failure);
    done_.store(true, std::memory_order_release);
    done_.notify_all();
  }
  bool ready() override { return done_.load(std::memory_order_acquire); }
  void wait() override {
    done_.wait(false, std::memory_order_acquire);
    if (failure_) std::rethrow_exception(failure_);
  }

private:
  std::atomic<bool> done_{false};
  std::exception_ptr failure_;
};

//! The completion of an operation that finished before its call returned (a small host-backend copy). One object
//! serves every such future, through a shared_ptr that owns nothing (the aliasing constructor), so that issuing one
//! allocates nothing and counts no references.
class done_completion final : public completion {
public:
  bool ready() override { return true; }
  void wait() override {}
};

[[nodiscard]] inline std::shared_ptr<completion> completed() noexcept {
  static done_completion done;
  return std::shared_ptr<completion>(std::shared_ptr<void>(), &done);
}

//! Where a value-returning non-blocking operation of a GPU backend (a host-side nbi atomic, a get_nbi of one element)
//! leaves its result: 8 bytes of pinned host memory that its kernel or copy writes, readable once the operation is
//! complete. Its future owns it through a shared_ptr whose deleter gives it back to its heap's pool
//! (detail/backend/cuda/result_words.hpp); `source_ended` turns true when that heap has ended, its stream synchronised
//! first, so that the future reads the final value without waiting on a stream that no longer exists.
struct result_word {
  std::uint64_t* bits = nullptr;
  const std::atomic<bool>* source_ended = nullptr;
};

//! The completion of a stream-ordered operation, kept inside its symm::future so that issuing one allocates nothing:
//! the stream, the operation's name and caller (for errors), and whether the stream was being captured into a graph
//! when it was issued. What ready() and wait() do lives with the CUDA backend (detail/backend/cuda/cuda_heap.hpp,
//! stream_operation), reached through `operations`, so that this header needs no CUDA. Trivially copyable.
struct stream_state {
  struct operations_table {
    bool (*ready)(const stream_state&);
    void (*wait)(const stream_state&);
  };
  const operations_table* operations = nullptr; //!< null: no operation
  void* stream = nullptr;                       //!< a cudaStream_t
  const char* what = nullptr;
  int pe = -1;
  bool recorded = false;
};
static_assert(std::is_trivially_copyable_v<stream_state>, "a future moves its stream state by copying it");

} // namespace detail
SYMM_END_NAMESPACE
