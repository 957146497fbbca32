// symm/barrier.hpp: host barriers — barrier_all, sync_all, quiet, and the RAII barrier_scope.
#pragma once

#include <symm/ordering.hpp>
#include <symm/world.hpp>

#include <cstdio>
#include <exception>

SYMM_BEGIN_NAMESPACE

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

// ---------------------------------------------------------------------------------------------------------------------
// Device code: barriers across PEs from one group (a block, a warp or one thread) per PE. Each channel is an
// independent barrier, so barriers issued by kernels on different streams never cross: give each its own channel.
#if SYMM_CUDA_COMPILATION()
#  include <symm/detail/device_wait.hpp>
#  include <symm/group.hpp>
#  include <symm/world_ref.hpp>

#  include <cuda/atomic>

SYMM_BEGIN_NAMESPACE

//! Number of independent device barrier channels per world.
inline constexpr int device_barrier_channels = detail::barrier_channels;

//! Waits until one group of every PE has called it on the same channel, without completing this group's puts
//! (OpenSHMEM's sync_all). Every thread of `group` calls it.
template <cooperating_group Group>
SYMM_DEVICE void sync_all(const Group& group, const world_ref& w, int channel = 0) {
  group.sync();
  const int me = w.my_pe(), n = w.n_pes();
  std::uint64_t* mine = w.barrier_flags(me, channel);
  // The epoch counter sits after the arrival words; only this PE's one group on this channel touches it.
  const std::uint64_t epoch = mine[n] + 1;
  group.sync();
  if (group.thread_rank() == 0) mine[n] = epoch;
  for (int p = static_cast<int>(group.thread_rank()); p < n; p += static_cast<int>(group.num_threads())) {
    cuda::atomic_ref<std::uint64_t, cuda::thread_scope_system>(w.barrier_flags(p, channel)[me])
        .store(epoch, cuda::memory_order_release);
  }
  for (int p = static_cast<int>(group.thread_rank()); p < n; p += static_cast<int>(group.num_threads())) {
    cuda::atomic_ref<std::uint64_t, cuda::thread_scope_system> arrived(mine[p]);
    detail::device_wait_until([&] { return arrived.load(cuda::memory_order_acquire) >= epoch; }, "symm::sync_all",
                              me, p);
  }
  group.sync();
}

//! quiet() and sync_all(): every put any thread of the group issued before it is visible on every PE after it.
template <cooperating_group Group>
SYMM_DEVICE void barrier_all(const Group& group, const world_ref& w, int channel = 0) {
  cuda::atomic_thread_fence(cuda::memory_order_seq_cst, cuda::thread_scope_system);
  sync_all(group, w, channel);
}

//! A device barrier at the end of a scope: barrier_all(group, w, channel) when the scope exits.
template <cooperating_group Group> class [[nodiscard]] device_barrier_scope {
public:
  SYMM_DEVICE device_barrier_scope(const Group& group, const world_ref& w, int channel = 0)
      : group_(group), world_(w), channel_(channel) {}
  device_barrier_scope(const device_barrier_scope&) = delete;
  device_barrier_scope& operator=(const device_barrier_scope&) = delete;
  SYMM_DEVICE ~device_barrier_scope() { barrier_all(group_, world_, channel_); }

private:
  Group group_;
  world_ref world_;
  int channel_;
};

SYMM_END_NAMESPACE
#endif
