// symm/world.hpp: symm::world, the RAII handle of one PE's membership in a job.
#pragma once

#include <symm/detail/world_state.hpp>
#include <symm/team.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

SYMM_BEGIN_NAMESPACE

namespace detail {
//! A finalize error of a world of symm::launch's, for launch to throw once the PE's function returned.
inline thread_local std::optional<error> launched_finalize_failure;

//! The exit status of a PE that failed only because another PE did (errc::peer_failed); 1 for any other failure.
inline constexpr int exit_peer_failed = 3;

//! Ends this PE after its world's finalize found `failed` (already printed): a destructor cannot throw, and a PE that
//! saw its job break must not exit 0.
inline void end_pe_after_failed_finalize(const error& failed) noexcept {
  if (launched_job) {
    launched_finalize_failure = failed;
    return;
  }
  std::fflush(nullptr);
  std::_Exit(failed.code() == errc::peer_failed ? exit_peer_failed : 1);
}

//! The file of the job directory through which symm::global_exit tells the launcher (symmrun, symm::launch) the job's
//! exit status: "PE CODE\n", made by link() so that the first PE to call it wins.
inline constexpr std::string_view global_exit_file = "global_exit";

inline void record_global_exit(const std::string& job_dir, int pe, int code) noexcept {
  if (job_dir.empty()) return;
  const std::string mine = fmt::format("{}/{}.{}", job_dir, global_exit_file, pe);
  const std::string shared = fmt::format("{}/{}", job_dir, global_exit_file);
  const int fd = ::open(mine.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return;
  const std::string text = fmt::format("{} {}\n", pe, code);
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  if (written) (void) ::link(mine.c_str(), shared.c_str()); // complete before anyone can read it; the first one wins
  ::unlink(mine.c_str());
}

//! What a PE's symm::global_exit left in `job_dir`: (PE, code), or none.
inline std::optional<std::pair<int, int>> read_global_exit(const std::string& job_dir) {
  std::FILE* f = std::fopen(fmt::format("{}/{}", job_dir, global_exit_file).c_str(), "r");
  if (f == nullptr) return std::nullopt;
  int pe = -1, code = 0;
  const bool read = std::fscanf(f, "%d %d", &pe, &code) == 2;
  std::fclose(f);
  if (!read) return std::nullopt;
  return std::pair{pe, code};
}
} // namespace detail

//! NVSHMEM's nvshmem_global_exit: ends every PE of the job, from one PE, with exit status `code` (as the operating
//! system keeps it: code & 0xff). Does not return, and needs nothing from the other PEs: it marks this PE failed (the
//! others' waits end with errc::peer_failed naming the call), tells the launcher the code through the job directory,
//! flushes stdout and stderr and ends this process without running destructors or atexit handlers (std::_Exit).
//! - under symmrun: symmrun stops the other PEs at once and exits with `code`, even 0, printing
//!   "symmrun: PE k called symm::global_exit(code)";
//! - under symm::launch with launch_mode::processes: launch stops the other PEs and throws symm::global_exit_error
//!   (errc::peer_failed) carrying the PE and the code; the calling program goes on;
//! - under symm::launch with launch_mode::threads: the PEs are threads of this process, so the process itself ends
//!   with `code` (launch does not return);
//! - under another launcher (mpirun, srun, torchrun): this process ends with `code`, the others end with status 3 at
//!   their next wait (peer_failed), and the launcher reports what it reports for a rank that exits early.
//! \code
//!   if (!converged && iteration == max_iterations) symm::global_exit(2);
//! \endcode
[[noreturn]] inline void global_exit(int code) noexcept {
  try {
    detail::world_state* world = detail::find_current_world();
    int pe = -1;
    std::string job_dir;
    if (world != nullptr) {
      pe = world->my_pe();
      if (!world->job().derived_dir) job_dir = world->job().job_dir; // a derived one is gone after the rendezvous
    } else if (detail::launched_job) {
      pe = detail::launched_job->pe;
      job_dir = detail::launched_job->job_dir;
    } else if (auto given = detail::get_env("SYMM_JOB_DIR"); given && detail::get_env("SYMM_PE")) {
      pe = detail::env_int("SYMM_PE").value_or(-1);
      job_dir = *given;
    }
    detail::record_global_exit(job_dir, pe, code);
    if (world != nullptr && world->alive()) {
      world->mark_failed(fmt::format("PE {} called symm::global_exit({})", pe, code));
    }
  } catch (...) {
    // Ending the process is what was asked; what could not be told, the launcher learns from the exit status.
  }
  std::fflush(nullptr);
  std::_Exit(code);
}

//! One PE's view of the job: constructing it joins the job (collective), destroying it leaves (collective).
//!
//! The PE's rank and the job's size come from the launcher: `symmrun`, Open MPI, PMI, Slurm or torchrun variables,
//! or `symm::launch`. Construction maps every PE's symmetric heap and returns when all PEs have joined; it throws
//! symm::error when no launcher variables are set, a PE does not come within the bootstrap timeout, or the heap cannot
//! be created. Destruction completes this PE's outstanding operations (quiet) and waits for every PE (barrier); a
//! world destroyed while an exception propagates marks this PE failed instead, so the other PEs raise
//! errc::peer_failed rather than wait forever.
//!
//! A finalize that finds an error (a PE that had already left, or failed, while this one waited in the finalize
//! barrier: the PEs ran different sequences of collectives) prints it and ends this PE with a non-zero status: 3 for
//! errc::peer_failed, 1 otherwise, after flushing stdout and stderr. Under symm::launch it is thrown from launch
//! instead, since one PE of a program cannot end the program.
//!
//! Symmetric objects keep their world's state alive but stop working when the world ends (errc::finalized).
//!
//! \code
//!   symm::world world;
//!   fmt::print("PE {} of {}\n", world.my_pe(), world.n_pes());
//! \endcode
class world {
public:
  world() : world(world_options{}) {}
  explicit world(const world_options& options)
      : state_(std::make_shared<detail::world_state>(options)),
        world_team_(std::make_shared<detail::team_state>(state_)), previous_(detail::current_world),
        uncaught_(std::uncaught_exceptions()) {
    try {
      detail::live_worlds::add(state_.get());
    } catch (...) { // out of memory: leave as a world destroyed while unwinding does, so that the others do not wait
      (void) state_->finalize(true);
      throw;
    }
    detail::current_world = state_.get();
  }

  world(const world&) = delete;
  world& operator=(const world&) = delete;
  world(world&&) = delete;
  world& operator=(world&&) = delete;

  ~world() {
    detail::live_worlds::remove(state_.get()); // first: no other thread looks it up from now on (docs/api.md, Threads)
    std::optional<error> failed = state_->finalize(std::uncaught_exceptions() > uncaught_);
    if (detail::current_world == state_.get()) detail::current_world = previous_;
    if (failed) detail::end_pe_after_failed_finalize(*failed);
  }

  //! This PE's number, in [0, n_pes()).
  [[nodiscard]] int my_pe() const noexcept { return state_->my_pe(); }
  //! How many PEs the job has.
  [[nodiscard]] int n_pes() const noexcept { return state_->n_pes(); }
  //! This PE's number among the PEs of its node, and their count.
  [[nodiscard]] int local_pe() const noexcept { return state_->job().local_pe; }
  [[nodiscard]] int local_n_pes() const noexcept { return state_->job().local_n_pes; }
  //! Which backend holds the heap.
  [[nodiscard]] symm::backend backend() const noexcept { return state_->kind(); }
  //! The GPU this PE uses and why (docs/launching.md: world_options::device, else SYMM_DEVICE, else the local PE
  //! modulo the visible GPUs); number -1 on the host backend.
  [[nodiscard]] device_info device() const { return state_->device(); }
  //! Which launcher started the job, what identifies the job, and where its PEs met (SYMM_DEBUG=1 prints it at start).
  [[nodiscard]] launcher_info launcher() const { return state_->launcher(); }
  //! Bytes of symmetric heap per PE.
  [[nodiscard]] std::size_t heap_size() const noexcept { return state_->heap_bytes(); }
  //! Bytes of symmetric heap in use (identical on every PE).
  [[nodiscard]] std::size_t heap_in_use() const noexcept { return state_->allocator().bytes_in_use(); }

  //! Completes every operation this PE started (all puts visible at their targets, all gets landed).
  void quiet() { state_->quiet("world::quiet()"); }
  //! quiet() on every PE, then waits until every PE arrives. Writes before it are visible to all PEs after it.
  void barrier() {
    state_->quiet("world::barrier()");
    state_->barrier();
  }
  //! Waits until every PE arrives, without completing outstanding non-blocking operations.
  void sync() { state_->barrier("sync_all"); }

  //! The world team: every PE, numbered as in the world. What teams are split from. Its barrier is the world's.
  [[nodiscard]] symm::team team() const { return symm::team(world_team_); }

  //! The shared state, for symmetric objects. Not for users.
  [[nodiscard]] const std::shared_ptr<detail::world_state>& state() const noexcept { return state_; }

private:
  std::shared_ptr<detail::world_state> state_;
  // Made once: every world.team() handle shares it (its member list, its NVSHMEM team) instead of rebuilding them.
  std::shared_ptr<detail::team_state> world_team_;
  detail::world_state* previous_;
  int uncaught_;
};

SYMM_END_NAMESPACE
