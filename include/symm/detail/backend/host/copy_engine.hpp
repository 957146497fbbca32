// symm/detail/backend/host/copy_engine.hpp: the host backend's non-blocking copies, done by one worker thread per
// world so that put_nbi/get_nbi overlap with the caller's work.
#pragma once

#include <symm/detail/completion.hpp>
#include <symm/detail/copy_2d.hpp>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

SYMM_BEGIN_NAMESPACE
namespace detail {

//! One queued copy (a flat one, or the 2-D copies of one strided put or get), and its completion. Whoever claims it
//! first does it: the worker, or a thread that waits for it before the worker got to it, which then copies it itself
//! rather than sleep through two hand-overs (a wake-up of the worker and one back, 5-45 us each: a 2 MiB put_nbi waited
//! at once cost twice a blocking put).
class copy_job final : public completion {
public:
  copy_job(void* dst, const void* src, std::size_t bytes) noexcept : first_{dst, bytes, src, bytes, bytes, 1} {}
  //! `copies` is not empty.
  explicit copy_job(std::vector<copy_2d_spec> copies) noexcept : first_(copies.front()), rest_(std::move(copies)) {
    rest_.erase(rest_.begin());
  }
  bool ready() override { return state_.load(std::memory_order_acquire) == done; }
  void wait() override {
    if (claim()) return;
    for (int s = state_.load(std::memory_order_acquire); s != done; s = state_.load(std::memory_order_acquire))
      state_.wait(s, std::memory_order_acquire);
  }
  //! Copies, if nobody has claimed the job yet; true when this thread did it.
  bool claim() noexcept {
    int expected = queued;
    if (!state_.compare_exchange_strong(expected, running, std::memory_order_acq_rel)) return false;
    copy_rows(first_);
    for (const copy_2d_spec& c : rest_)
      copy_rows(c);
    state_.store(done, std::memory_order_release);
    state_.notify_all();
    return true;
  }

private:
  static constexpr int queued = 0, running = 1, done = 2;
  copy_2d_spec first_;             // a flat copy is one row, kept here: no allocation
  std::vector<copy_2d_spec> rest_; // a strided copy's others
  std::atomic<int> state_{queued};
};

class copy_engine {
public:
  copy_engine() = default;
  copy_engine(const copy_engine&) = delete;
  copy_engine& operator=(const copy_engine&) = delete;
  ~copy_engine() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (worker_.joinable()) worker_.join();
  }

  //! Queues a copy; the returned completion turns ready once the bytes are in place.
  std::shared_ptr<completion> submit(void* dst, const void* src, std::size_t bytes) {
    return enqueue(std::make_shared<copy_job>(dst, src, bytes));
  }
  //! Queues the 2-D copies of one strided put or get (not empty) as one job.
  std::shared_ptr<completion> submit(std::vector<copy_2d_spec> copies) {
    return enqueue(std::make_shared<copy_job>(std::move(copies)));
  }

  //! Returns when every copy submitted so far is complete.
  void drain() {
    std::unique_lock lock(mutex_);
    idle_.wait(lock, [&] { return pending_ == 0; });
  }

private:
  std::shared_ptr<completion> enqueue(std::shared_ptr<copy_job> job) {
    {
      std::lock_guard lock(mutex_);
      if (!worker_.joinable()) worker_ = std::thread([this] { run(); });
      queue_.push_back(job);
      ++pending_;
    }
    wake_.notify_all();
    return job;
  }

  void run() {
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      std::shared_ptr<copy_job> job = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      // A job a waiter claimed is finished by that waiter: waiting for it here keeps pending_ (drain, and the engine's
      // end) behind every copy, whoever does it.
      if (!job->claim()) job->wait();
      lock.lock();
      if (--pending_ == 0) idle_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::deque<std::shared_ptr<copy_job>> queue_;
  std::size_t pending_ = 0;
  bool stopping_ = false;
  std::thread worker_;
};

} // namespace detail
SYMM_END_NAMESPACE
