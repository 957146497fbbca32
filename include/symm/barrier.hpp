// symm/barrier.hpp: host barriers — barrier_all, sync_all, quiet, and the RAII barrier_scope.
#pragma once

#include <symm/world.hpp>

#include <cstdio>
#include <exception>

SYMM_BEGIN_NAMESPACE

//! Completes every operation this PE started (puts visible at their targets, gets landed). Host code; acts on the
//! calling thread's current world. Throws errc::not_initialized without one.
inline void quiet() { detail::require_current_world("symm::quiet()").quiet(); }

//! quiet(), then waits for every PE of the world: whatever any PE wrote before it is visible to every PE after it.
inline void barrier_all() {
  auto& world = detail::require_current_world("symm::barrier_all()");
  world.quiet();
  world.barrier("barrier_all");
}

//! Waits for every PE without completing outstanding non-blocking operations (OpenSHMEM's sync_all).
inline void sync_all() { detail::require_current_world("symm::sync_all()").barrier("sync_all"); }

//! A barrier at the end of a scope: quiet() and barrier_all() when the scope exits, so every write made inside the
//! scope is visible on every PE after it. Immovable; when the scope is left by an exception the barrier is skipped
//! (the world then reports this PE as failed to the others instead of letting them wait).
//!
//! \code
//!   { symm::barrier_scope sync(world);  symm::remote(dst, 1) = src.local(); }   // visible on PE 1 after the brace
//! \endcode
class [[nodiscard]] barrier_scope {
public:
  explicit barrier_scope(world& w) : state_(w.state().get()), uncaught_(std::uncaught_exceptions()) {}
  barrier_scope() : state_(&detail::require_current_world("symm::barrier_scope")), uncaught_(std::uncaught_exceptions()) {}
  barrier_scope(const barrier_scope&) = delete;
  barrier_scope& operator=(const barrier_scope&) = delete;
  barrier_scope(barrier_scope&&) = delete;
  barrier_scope& operator=(barrier_scope&&) = delete;

  ~barrier_scope() noexcept(false) {
    if (std::uncaught_exceptions() > uncaught_) return;
    state_->quiet();
    state_->barrier("barrier_scope");
  }

private:
  detail::world_state* state_;
  int uncaught_;
};

SYMM_END_NAMESPACE
