// symm/detail/backend/host/copy_engine.hpp: the host backend's non-blocking copies, done by one worker thread per
// world so that put_nbi/get_nbi overlap with the caller's work.
#pragma once

#include <symm/detail/completion.hpp>

#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

SYMM_BEGIN_NAMESPACE
namespace detail {

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
    auto done = std::make_shared<flag_completion>();
    {
      std::lock_guard lock(mutex_);
      if (!worker_.joinable()) worker_ = std::thread([this] { run(); });
      queue_.push_back({dst, src, bytes, done});
      ++pending_;
    }
    wake_.notify_all();
    return done;
  }

  //! Returns when every copy submitted so far is complete.
  void drain() {
    std::unique_lock lock(mutex_);
    idle_.wait(lock, [&] { return pending_ == 0; });
  }

private:
  struct job {
    void* dst;
    const void* src;
    std::size_t bytes;
    std::shared_ptr<flag_completion> done;
  };

  void run() {
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      job j = queue_.front();
      queue_.pop_front();
      lock.unlock();
      std::memmove(j.dst, j.src, j.bytes);
      j.done->set();
      lock.lock();
      if (--pending_ == 0) idle_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::deque<job> queue_;
  std::size_t pending_ = 0;
  bool stopping_ = false;
  std::thread worker_;
};

} // namespace detail
SYMM_END_NAMESPACE
