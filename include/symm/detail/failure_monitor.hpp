// symm/detail/failure_monitor.hpp: the thread that makes a peer's failure visible to this PE's kernels. A kernel that
// waits for a dead peer cannot ask the host, and the host thread that launched it may itself be blocked (in
// cudaStreamSynchronize, say): so each world on a GPU backend runs one background thread that asks the liveness check
// every few milliseconds whether some other PE failed and, when one did, writes the failure word (mapped pinned host
// memory that every device wait reads where it reads its clock, detail/device_wait.hpp), then stops.
//
// The liveness source and the writer are parameters, so that the thread's logic is tested on the CPU with fakes
// (tests/host/test_errors.cpp) and the world gives it the real ones (world_state.hpp).
#pragma once

#include <symm/detail/config.hpp>
#include <symm/detail/env.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

SYMM_BEGIN_NAMESPACE
namespace detail {

//! The failure word's value when PE `pe` failed (0: no PE failed). Written once, into mapped pinned host memory that
//! this PE's kernels read (detail/device_wait.hpp).
[[nodiscard]] constexpr std::uint32_t failure_code(int pe) noexcept {
  return static_cast<std::uint32_t>(pe) + 1;
}

//! SYMM_FAILURE_POLL_MS when unset: how often the monitor asks. A kernel waiting on a dead peer ends within this period
//! plus its own check interval (1024 polls, well under a millisecond) of the host's liveness check noticing the death.
inline constexpr std::chrono::milliseconds default_failure_poll{5};

//! How often the failure monitor asks (SYMM_FAILURE_POLL_MS; 0: no monitor, kernels then see a failed peer only
//! through their own bounds).
inline std::chrono::milliseconds failure_poll_from_env() {
  return env_milliseconds("SYMM_FAILURE_POLL_MS", default_failure_poll, "0: no failure monitor");
}

//! A background thread that every `period` calls `failed_peer()` (the failed PE's number, or a negative number while
//! none failed) and, the first time it names a PE, calls `publish(pe)` once and stops asking. With `each_period`,
//! it also calls that every period, before asking, until stop() (after the publish too: a kernel that traps because
//! of the failure does so after it); without, the thread ends at the publish. None may block for long; an exception
//! from any is swallowed (a throwing source counts as "none failed this time"): nothing escapes the thread. stop()
//! (and the destructor) wakes and joins it at once, however long the period: call it before whatever the functions
//! use goes away.
class failure_monitor {
public:
  failure_monitor(std::chrono::milliseconds period, std::function<int()> failed_peer, std::function<void(int)> publish,
                  std::function<void()> each_period = {})
      : period_(period), failed_peer_(std::move(failed_peer)), publish_(std::move(publish)),
        each_period_(std::move(each_period)) {
    if (period_.count() <= 0) period_ = std::chrono::milliseconds(1);
    thread_ = std::thread([this] { run(); });
  }
  failure_monitor(const failure_monitor&) = delete;
  failure_monitor& operator=(const failure_monitor&) = delete;
  ~failure_monitor() { stop(); }

  //! Ends the thread and waits for it; a call while `publish` runs waits for that call to return. Idempotent.
  void stop() noexcept {
    {
      const std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
  }

  //! The PE it published, or -1 while it has published none.
  [[nodiscard]] int published() const noexcept { return published_.load(std::memory_order_acquire); }

  //! Whether the thread still asks about failures (false once it published, or after stop()).
  [[nodiscard]] bool running() const noexcept { return !finished_.load(std::memory_order_acquire); }

private:
  void run() noexcept {
    std::unique_lock lock(mutex_);
    while (!stopping_) {
      if (wake_.wait_for(lock, period_, [this] { return stopping_; })) break;
      lock.unlock();
      if (each_period_) {
        try {
          each_period_();
        } catch (...) {
        }
      }
      if (!finished_.load(std::memory_order_relaxed)) ask();
      if (finished_.load(std::memory_order_relaxed) && !each_period_) return;
      lock.lock();
    }
    finished_.store(true, std::memory_order_release);
  }

  //! One question to failed_peer, and the publish when it names a PE.
  void ask() noexcept {
    int pe = -1;
    try {
      pe = failed_peer_();
    } catch (...) {
      pe = -1;
    }
    if (pe < 0) return;
    try {
      publish_(pe);
    } catch (...) {
    }
    published_.store(pe, std::memory_order_release);
    finished_.store(true, std::memory_order_release);
  }

  std::chrono::milliseconds period_;
  std::function<int()> failed_peer_;
  std::function<void(int)> publish_;
  std::function<void()> each_period_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::atomic<int> published_{-1};
  std::atomic<bool> finished_{false};
  std::thread thread_; // last: started once everything it uses exists
};

} // namespace detail
SYMM_END_NAMESPACE
