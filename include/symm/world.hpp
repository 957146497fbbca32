// symm/world.hpp: symm::world, the RAII handle of one PE's membership in a job.
#pragma once

#include <symm/detail/world_state.hpp>
#include <symm/team.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <optional>

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
} // namespace detail

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
    detail::current_world = state_.get();
  }

  world(const world&) = delete;
  world& operator=(const world&) = delete;
  world(world&&) = delete;
  world& operator=(world&&) = delete;

  ~world() {
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
