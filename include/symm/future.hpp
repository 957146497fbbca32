// symm/future.hpp: symm::future<>, the completion of a host-side non-blocking operation.
#pragma once

#include <symm/detail/completion.hpp>

#include <algorithm>
#include <concepts>
#include <exception>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

SYMM_BEGIN_NAMESPACE

template <class T = void>
class future;

//! Completion of one non-blocking operation (put_nbi, get_nbi, on-stream operations).
//!
//! Move-only. `wait()` blocks until the operation is complete (a put's data is in place at the target PE, a get's in
//! the local buffer) and rethrows the operation's error, if any. `ready()` polls. Dropping a future (destroying it, or
//! assigning over it, unwaited) never waits, on every backend: the operation goes on, and `symm::quiet()` (or a
//! barrier) completes it with every other outstanding operation of the PE, as OpenSHMEM's nbi calls are completed;
//! until then a put's source must not change and a get's destination must stay allocated.
template <>
class [[nodiscard]] future<void> {
public:
  future() noexcept = default;
  explicit future(std::shared_ptr<detail::completion> done) noexcept : done_(std::move(done)) {}
  //! A stream-ordered operation's future: its state lives here, not on the heap.
  explicit future(const detail::stream_state& stream) noexcept : stream_(stream) {}
  future(future&& other) noexcept : done_(std::move(other.done_)), stream_(std::exchange(other.stream_, {})) {}
  future& operator=(future&& other) noexcept {
    if (this != &other) {
      done_ = std::move(other.done_);
      stream_ = std::exchange(other.stream_, {});
    }
    return *this;
  }
  future(const future&) = delete;
  future& operator=(const future&) = delete;
  ~future() = default; // never waits (see above)

  //! Whether this future refers to an operation (false after wait() or a move).
  [[nodiscard]] bool valid() const noexcept { return done_ != nullptr || stream_.operations != nullptr; }
  //! True when the operation is complete; does not block.
  [[nodiscard]] bool ready() const {
    if (stream_.operations != nullptr) return stream_.operations->ready(stream_);
    return done_ == nullptr || done_->ready();
  }
  //! Blocks until the operation is complete; rethrows its symm::error. The future is empty afterwards.
  void wait() {
    if (stream_.operations != nullptr) {
      const detail::stream_state stream = std::exchange(stream_, {});
      stream.operations->wait(stream);
      return;
    }
    if (!done_) return;
    auto done = std::move(done_);
    done->wait();
  }

private:
  std::shared_ptr<detail::completion> done_;
  detail::stream_state stream_;
};

namespace detail {
//! when_all's completion: its parts, polled and waited in the caller's thread (no thread of its own).
class joined_completion final : public completion {
public:
  explicit joined_completion(std::vector<future<>> parts) noexcept : parts_(std::move(parts)) {}
  bool ready() override {
    return std::ranges::all_of(parts_, [](const future<>& part) { return part.ready(); });
  }
  //! Waits for every part, even after one failed, then rethrows the first failure.
  void wait() override {
    std::exception_ptr first_failure;
    for (future<>& part : parts_) {
      try {
        part.wait();
      } catch (...) {
        if (!first_failure) first_failure = std::current_exception();
      }
    }
    if (first_failure) std::rethrow_exception(first_failure);
  }

private:
  std::vector<future<>> parts_;
};
} // namespace detail

//! One future for several operations: ready when every part is; wait() waits for all of them (every part, even after
//! one failed) and rethrows the first part's error. Parts of any kind may be joined (host copies, stream-ordered
//! operations of several streams); nothing runs in the background, the parts are polled and waited by the thread that
//! asks. Dropping the joined future drops its parts (it never waits: quiet() completes them).
//! \code  symm::when_all(symm::put_nbi(a, x), symm::put_nbi(b, y)).wait();  \endcode
[[nodiscard]] inline future<> when_all(std::vector<future<>> parts) {
  return future<>(std::make_shared<detail::joined_completion>(std::move(parts)));
}
template <class... Futures>
  requires(std::same_as<std::remove_cvref_t<Futures>, future<>>&&...)
[[nodiscard]] future<> when_all(Futures&&... parts) {
  static_assert((!std::is_lvalue_reference_v<Futures> && ...),
                "symm::when_all takes its futures by value: std::move "
                "them in (a future is move-only)");
  std::vector<future<>> joined;
  joined.reserve(sizeof...(parts));
  (joined.push_back(std::move(parts)), ...);
  return when_all(std::move(joined));
}

SYMM_END_NAMESPACE
