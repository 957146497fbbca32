// symm/launch.hpp: symm::launch(n, fn), n PEs started from inside one program — for tests, examples and
// single-process multi-GPU programs.
#pragma once

#include <symm/detail/env.hpp>
#include <symm/world.hpp>

#include <signal.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

SYMM_BEGIN_NAMESPACE

//! How symm::launch runs its PEs.
enum class launch_mode {
  processes, //!< fork one process per PE (call it before any CUDA call in this process)
  threads,   //!< one thread per PE, sharing this process (and its CUDA context)
};

struct launch_options {
  launch_mode mode = launch_mode::processes;
  world_options world{}; //!< used when fn takes a symm::world&
  //! The whole job's bound (0: none), as `symmrun --timeout`: past it, launch stops the PEs still running and throws
  //! errc::timeout naming each with its process state (stopped, running, asleep). Processes mode only: a thread
  //! cannot be stopped from outside.
  std::chrono::milliseconds timeout{0};
};

//! What symm::launch throws (launch_mode::processes) when a PE called symm::global_exit: the other PEs were stopped.
//! A symm::error with errc::peer_failed, so that code catching launch's errors sees it as the job's end.
class global_exit_error : public error {
public:
  global_exit_error(int pe, int exit_code)
      : error(
            errc::peer_failed,
            fmt::format("symm::launch: PE {} called symm::global_exit({}); the other PEs were stopped", pe, exit_code)),
        pe_(pe), exit_code_(exit_code) {}
  //! The PE that called it, and the code it passed.
  [[nodiscard]] int pe() const noexcept { return pe_; }
  [[nodiscard]] int exit_code() const noexcept { return exit_code_; }

private:
  int pe_;
  int exit_code_;
};

namespace detail {

//! A private job directory and a random token, removed with the launch.
class launch_job {
public:
  explicit launch_job(int n_pes) {
    unsigned char random[16];
    if (::getrandom(random, sizeof(random), 0) != static_cast<ssize_t>(sizeof(random))) {
      SYMM_THROW(errc::system, "getrandom failed: {}", std::strerror(errno));
    }
    for (unsigned char b : random)
      token_ += fmt::format("{:02x}", b);
    std::string base = fmt::format("/tmp/symm-{}", ::getuid());
    ensure_private_dir(base);
    dir_ = fmt::format("{}/launch-{}-{}", base, ::getpid(), token_.substr(0, 8));
    ensure_private_dir(dir_);
    n_pes_ = n_pes;
  }
  launch_job(const launch_job&) = delete;
  launch_job& operator=(const launch_job&) = delete;
  ~launch_job() {
    ::unlink((dir_ + "/boot.sock").c_str());
    ::unlink(fmt::format("{}/{}", dir_, global_exit_file).c_str());
    ::rmdir(dir_.c_str());
  }
  [[nodiscard]] job_info info(int pe) const { return job_info{pe, n_pes_, pe, n_pes_, dir_, token_, "symm::launch"}; }
  [[nodiscard]] const std::string& dir() const noexcept { return dir_; }

private:
  std::string dir_, token_;
  int n_pes_ = 0;
};

template <class Fn>
void run_pe(Fn& fn, const launch_options& options) {
  launched_finalize_failure.reset();
  if constexpr (std::is_invocable_v<Fn&, world&>) {
    {
      world w(options.world);
      fn(w);
    }
  } else {
    static_assert(std::is_invocable_v<Fn&>, "symm::launch(n, fn): fn must be callable as fn(symm::world&) or fn()");
    fn();
  }
  // A world whose finalize failed (symm::world's destructor) ends this PE with its error.
  if (auto failed = std::exchange(launched_finalize_failure, std::nullopt)) throw *failed;
}

//! How a PE still running at launch's timeout looks: a stopped process (SIGSTOP, ^Z, a debugger) is paused, not hung.
inline std::string describe_running_pe(int pe, pid_t pid) {
  const char state = process_state_code(pid);
  std::string condition = process_condition(static_cast<std::uint32_t>(pid));
  if (state == 'T' || state == 't') condition += ", not hung";
  return fmt::format("\n  PE {} (pid {}): {}", pe, pid, condition.empty() ? "in an unknown state" : condition);
}

inline std::string describe_status(int status) {
  if (WIFEXITED(status) && WEXITSTATUS(status) == exit_peer_failed) {
    return "stopped because another PE failed (exit status 3)";
  }
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return fmt::format("was killed by signal {} ({})", WTERMSIG(status), ::strsignal(WTERMSIG(status)));
  return fmt::format("ended with wait status {}", status);
}

//! PEs as threads share one CUDA context, whose streams share CUDA_DEVICE_MAX_CONNECTIONS hardware queues (8 unless
//! set). A queue starts its work in order, so a PE's stream work waiting behind that PE's barrier or signal-wait kernel
//! (which waits for the other PEs) can hold back another PE's stream on the same queue, and the job deadlocks. symm
//! asks for CUDA's most, 32, unless the user chose a number; once per process. It only helps when CUDA has not started
//! in the process yet, and only while the PEs' streams are at most 32 (docs/launching.md).
inline void request_hardware_queues_for_thread_pes() {
  static std::once_flag once;
  std::call_once(once, [] { set_env_default("CUDA_DEVICE_MAX_CONNECTIONS", "32"); });
}

} // namespace detail

//! Runs `fn` as n PEs and returns when all have finished. fn is `void(symm::world&)` (launch makes each PE's world
//! from options.world) or `void()` (fn makes its own). Processes mode forks one child per PE; when a PE fails (a
//! non-zero exit, an exception, a signal) the others are stopped at once and launch throws errc::peer_failed naming
//! the PE and how it ended; when a PE calls symm::global_exit(code), the others are stopped and launch throws
//! symm::global_exit_error with the PE and the code. Threads mode runs the PEs as threads and rethrows the first PE's
//! exception; there symm::global_exit ends the whole process.
template <class Fn>
void launch(int n_pes, Fn&& fn, const launch_options& options = {}) {
  if (n_pes < 1 || n_pes > 4096) {
    SYMM_THROW(errc::invalid_argument, "symm::launch: n_pes = {} is not in [1, 4096]", n_pes);
  }
  if (SYMM_NVSHMEM_BACKEND() && options.mode == launch_mode::threads &&
      detail::choose_backend(options.world) == backend::nvshmem) {
    SYMM_THROW(errc::unsupported,
               "symm::launch: {} PEs as threads on the nvshmem backend: NVSHMEM has one PE per process; use "
               "launch_mode::processes (or the cuda backend for PEs as threads)",
               n_pes);
  }
  if (options.timeout.count() < 0) {
    SYMM_THROW(errc::invalid_argument, "symm::launch: timeout = {} ms is negative (0: no timeout)",
               options.timeout.count());
  }
  if (options.mode == launch_mode::threads && options.timeout.count() > 0) {
    SYMM_THROW(errc::unsupported,
               "symm::launch: a timeout ({} ms) needs launch_mode::processes: PEs that are threads cannot be stopped "
               "from outside (bound their waits with SYMM_COLLECTIVE_TIMEOUT_MS and SYMM_BARRIER_TIMEOUT_MS instead)",
               options.timeout.count());
  }
  detail::launch_job job(n_pes);
  if (options.mode == launch_mode::threads) {
    if (n_pes > 1) detail::request_hardware_queues_for_thread_pes();
    std::vector<std::exception_ptr> failures(static_cast<std::size_t>(n_pes));
    const detail::live_worlds::thread_pes_running running; // no other thread can tell which PE's world is its own
    std::vector<std::thread> threads;
    for (int pe = 0; pe < n_pes; ++pe) {
      threads.emplace_back([&, pe] {
        detail::launched_job = job.info(pe);
        try {
          detail::run_pe(fn, options);
        } catch (...) {
          failures[static_cast<std::size_t>(pe)] = std::current_exception();
        }
        detail::launched_job.reset();
      });
    }
    for (auto& t : threads)
      t.join();
    // Report the root cause: a PE's own error before the peer_failed errors it caused in the others.
    std::exception_ptr first_peer_failure;
    for (auto& f : failures) {
      if (!f) continue;
      try {
        std::rethrow_exception(f);
      } catch (const error& e) {
        if (e.code() != errc::peer_failed) throw;
        if (!first_peer_failure) first_peer_failure = f;
      }
    }
    if (first_peer_failure) std::rethrow_exception(first_peer_failure);
    return;
  }

  std::fflush(nullptr); // buffered output would otherwise be printed by every child again
  std::vector<pid_t> children;
  for (int pe = 0; pe < n_pes; ++pe) {
    pid_t pid = ::fork();
    if (pid < 0) {
      for (pid_t c : children)
        ::kill(c, SIGKILL);
      SYMM_THROW(errc::system, "symm::launch: fork of PE {} failed: {}", pe, std::strerror(errno));
    }
    if (pid == 0) {
      // The parent's handlers (a test framework's, say) would report the SIGTERM that stops a failed job's PEs.
      ::signal(SIGTERM, SIG_DFL);
      ::signal(SIGINT, SIG_DFL);
      int code = 0;
      detail::launched_job = job.info(pe);
      try {
        detail::run_pe(fn, options);
      } catch (const error& e) {
        std::fprintf(stderr, "symm::launch: PE %d failed: %s\n", pe, e.what());
        code = e.code() == errc::peer_failed ? detail::exit_peer_failed : 1;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "symm::launch: PE %d failed: %s\n", pe, e.what());
        code = 1;
      } catch (...) {
        std::fprintf(stderr, "symm::launch: PE %d failed with an exception that is not a std::exception\n", pe);
        code = 1;
      }
      std::fflush(nullptr);
      ::_exit(code);
    }
    children.push_back(pid);
  }
  // Reap in completion order; the first failure stops the rest (SIGTERM, then SIGKILL after a grace period). The
  // report names the root cause: a PE that failed by itself, before PEs that failed because a peer did.
  std::string failure, consequence;
  std::optional<std::pair<int, int>> global_exit; // (PE, code) of a PE's symm::global_exit
  std::size_t remaining = children.size();
  auto stop_deadline = std::chrono::steady_clock::time_point::max();
  bool stopping = false;
  const auto stop_all = [&] {
    stopping = true;
    for (pid_t c : children) {
      if (c <= 0) continue;
      ::kill(c, SIGTERM);
      ::kill(c, SIGCONT); // a stopped PE gets its SIGTERM only once it runs
    }
    stop_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  };
  const bool timed = options.timeout.count() > 0;
  bool timed_out = false;
  const auto timeout_at = std::chrono::steady_clock::now() + options.timeout;
  while (remaining > 0) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, stopping || timed ? WNOHANG : 0);
    if (pid < 0 && errno == EINTR) continue;
    if (pid < 0 && errno == ECHILD) break;
    if (pid == 0) {
      const auto now = std::chrono::steady_clock::now();
      if (now > stop_deadline) {
        for (pid_t c : children)
          if (c > 0) ::kill(c, SIGKILL);
        stop_deadline = std::chrono::steady_clock::time_point::max();
      }
      if (timed && !stopping && now >= timeout_at) {
        // Paused is not hung: each PE's state, read before the stop changes it, is the report.
        std::string running;
        for (std::size_t pe = 0; pe < children.size(); ++pe)
          if (children[pe] > 0) running += detail::describe_running_pe(static_cast<int>(pe), children[pe]);
        failure = fmt::format("symm::launch: the job ran longer than its timeout of {} ms; stopped the {} PE{} still "
                              "running:{}",
                              options.timeout.count(), remaining, remaining == 1 ? "" : "s", running);
        timed_out = true;
        stop_all();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      continue;
    }
    if (pid < 0) SYMM_THROW(errc::system, "symm::launch: waitpid failed: {}", std::strerror(errno));
    auto it = std::find(children.begin(), children.end(), pid);
    if (it == children.end()) continue; // a child of someone else in this process
    int pe = static_cast<int>(it - children.begin());
    *it = -1;
    --remaining;
    if (!global_exit && !timed_out && failure.empty() && (global_exit = detail::read_global_exit(job.dir()))) {
      if (!stopping) stop_all(); // whichever PE ended first (the caller, or one its mark_failed ended)
      continue;
    }
    if (global_exit) continue; // the others' ends are launch's doing
    bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (ok || timed_out) continue; // after a timeout, the PEs' ends are launch's doing
    bool root_cause = !(WIFEXITED(status) && WEXITSTATUS(status) == detail::exit_peer_failed);
    std::string& slot = root_cause ? failure : consequence;
    if (slot.empty()) slot = fmt::format("symm::launch: PE {} (pid {}) {}", pe, pid, detail::describe_status(status));
    // PEs that failed because of a peer saw the peer's failure themselves; the root cause stops the rest.
    if (root_cause && !stopping) stop_all();
  }
  if (global_exit) throw global_exit_error(global_exit->first, global_exit->second);
  if (timed_out) throw error(errc::timeout, failure);
  if (!failure.empty()) throw error(errc::peer_failed, failure);
  if (!consequence.empty()) throw error(errc::peer_failed, consequence);
}

SYMM_END_NAMESPACE
