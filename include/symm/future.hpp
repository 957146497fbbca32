// symm/future.hpp: symm::future<>, the completion of a host-side non-blocking operation, and symm::future<T>, the
// value of one that returns a value.
#pragma once

#include <symm/detail/completion.hpp>
#include <symm/error.hpp>

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <cstring>
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

//! The value of one non-blocking operation that returns one (a host-side nbi atomic: symm/atomic_nbi.hpp; get_nbi of
//! one element). T is trivially copyable, of at most 8 bytes (the atomics' types and small values).
//!
//! Move-only. `get()` waits for the operation, rethrows its error if it had one, and returns the value; the future is
//! empty afterwards (valid() is false), as std::future's. `wait()` waits without taking the value, `ready()` polls.
//! Dropping it never waits, as for future<>: quiet() completes the operation, whose value is then lost.
//! \code
//!   symm::future<long> ticket = symm::fetch_add_nbi(symm::remote(counter, 0), 1L);
//!   ...                                     // other work while the atomic runs
//!   long mine = ticket.get();
//! \endcode
template <class T>
class [[nodiscard]] future {
  static_assert(std::is_trivially_copyable_v<T> && !std::is_const_v<T> && sizeof(T) <= sizeof(std::uint64_t),
                "symm::future<T>: T is the value of one element, trivially copyable and at most 8 bytes (for a larger "
                "one, get_nbi into a buffer of your own and wait on its future<>)");

public:
  future() noexcept = default;
  //! An operation that completed before its call returned (the host backend's): its value is here already.
  explicit future(T value) noexcept : value_(value), has_value_(true) {}
  //! An operation still running: `done` completes it, and its value's bits are in `*result` from then on.
  future(future<> done, std::shared_ptr<detail::result_word> result) noexcept
      : done_(std::move(done)), result_(std::move(result)) {}
  future(future&& other) noexcept
      : done_(std::move(other.done_)), result_(std::move(other.result_)), value_(other.value_),
        has_value_(std::exchange(other.has_value_, false)) {}
  future& operator=(future&& other) noexcept {
    if (this != &other) {
      (void) (done_ = std::move(other.done_)); // (void): nvcc warns of a discarded [[nodiscard]] future<>&
      result_ = std::move(other.result_);
      value_ = other.value_;
      has_value_ = std::exchange(other.has_value_, false);
    }
    return *this;
  }
  future(const future&) = delete;
  future& operator=(const future&) = delete;
  ~future() = default; // never waits

  //! Whether this future holds a value or an operation that will produce one (false after get() or a move).
  [[nodiscard]] bool valid() const noexcept { return has_value_ || result_ != nullptr; }
  //! True when the value is there; does not block.
  [[nodiscard]] bool ready() const { return has_value_ || done_.ready(); }
  //! Blocks until the operation is complete and its value is here; rethrows its symm::error. Keeps the value.
  void wait() {
    if (has_value_ || result_ == nullptr) return;
    // Empty before waiting, as future<>: after a failure the future is empty, and a second get() says so.
    future<> done = std::move(done_);
    const std::shared_ptr<detail::result_word> result = std::move(result_);
    // A heap that ended synchronised its stream first: the value is final, and the stream is gone.
    if (result->source_ended == nullptr || !result->source_ended->load(std::memory_order_acquire)) done.wait();
    std::memcpy(&value_, result->bits, sizeof(T));
    has_value_ = true;
  }
  //! The value, once the operation is complete (waits for it); the future is empty afterwards. Throws
  //! errc::invalid_argument when it is empty (already taken, moved from, or default-made).
  [[nodiscard]] T get() {
    if (!valid()) {
      SYMM_THROW(errc::invalid_argument,
                 "symm::future::get() on an empty future: its value was taken already, or it was moved from or "
                 "default-constructed");
    }
    wait();
    has_value_ = false;
    return value_;
  }

private:
  future<> done_;
  std::shared_ptr<detail::result_word> result_;
  T value_{};
  bool has_value_ = false;
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
