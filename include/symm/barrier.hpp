// symm/barrier.hpp: host barriers — barrier_all, sync_all, quiet, and the RAII barrier_scope.
#pragma once

#include <symm/detail/collective_release.hpp>
#include <symm/ordering.hpp>
#include <symm/world.hpp>

#include <cstdio>
#include <exception>

SYMM_BEGIN_NAMESPACE

//! quiet(), then waits for every PE of the world: whatever any PE wrote before it is visible to every PE after it.
inline void barrier_all() {
  auto& world = detail::require_current_world("symm::barrier_all()");
  world.quiet("symm::barrier_all()");
  world.barrier("barrier_all");
}

//! Waits for every PE without completing outstanding non-blocking operations (OpenSHMEM's sync_all).
inline void sync_all() {
  detail::require_current_world("symm::sync_all()").barrier("sync_all");
}

//! A barrier at the end of a scope: quiet() and barrier_all() when the scope exits, so every write made inside the
//! scope is visible on every PE after it. Immovable. When the scope is left by an exception the barrier is still made,
//! as symmetric objects still free themselves (detail/collective_release.hpp), so that a PE that catches stays in step
//! with the others; should it fail then, this PE is marked failed and the exception goes on.
//!
//! \code
//!   { symm::barrier_scope sync(world);  symm::remote(dst, 1) = src.local(); }   // visible on PE 1 after the brace
//! \endcode
class [[nodiscard]] barrier_scope {
public:
  explicit barrier_scope(world& w) : state_(w.state().get()), uncaught_(std::uncaught_exceptions()) {}
  barrier_scope()
      : state_(&detail::require_current_world("symm::barrier_scope")), uncaught_(std::uncaught_exceptions()) {}
  barrier_scope(const barrier_scope&) = delete;
  barrier_scope& operator=(const barrier_scope&) = delete;
  barrier_scope(barrier_scope&&) = delete;
  barrier_scope& operator=(barrier_scope&&) = delete;

  ~barrier_scope() noexcept(false) {
    const auto end_scope = [this] {
      state_->quiet("symm::barrier_scope");
      state_->barrier("barrier_scope");
    };
    if (std::uncaught_exceptions() == uncaught_) {
      end_scope();
    } else {
      detail::release_collectively(
          *state_, "a symm::barrier_scope", true, detail::on_release_failure::mark_failed, end_scope);
    }
  }

private:
  detail::world_state* state_;
  int uncaught_;
};

SYMM_END_NAMESPACE

// ---------------------------------------------------------------------------------------------------------------------
// Device code: barriers across PEs from one group (a block, a warp or one thread) per PE. Each channel is an
// independent barrier, so barriers issued by kernels on different streams never cross: give each its own channel.
// Like every device wait they trap after SYMM_DEVICE_WAIT_TIMEOUT_NS, and within milliseconds of this PE's host side
// finding that another PE failed (the world's failure word, detail/device_wait.hpp), naming it.
#if SYMM_CUDA_COMPILATION()
#  include <symm/detail/backend/nvshmem/device_rma.hpp>
#  include <symm/detail/device_wait.hpp>
#  include <symm/group.hpp>
#  include <symm/world_ref.hpp>

#  include <cuda/atomic>

SYMM_BEGIN_NAMESPACE

//! Number of independent device barrier channels per world.
inline constexpr int device_barrier_channels = detail::device_channels;

namespace detail {
//! The flags one barrier round touches, looked up once per session: after an acquire fence the peer table would be
//! re-read from L2 on every round. Thread `rank` signals and awaits PEs me+1+rank, me+1+rank+count, ... (mod n).
struct barrier_flags_view {
  std::uint64_t* mine = nullptr;         // this PE's arrival words on the channel
  std::uint64_t* first_remote = nullptr; // this thread's first peer's word for this PE, or null if it has none
  const std::byte* heap = nullptr;       // this PE's heap base: where the waits find the world's failure word
  int first_peer = -1;
};

template <class Group>
SYMM_DEVICE SYMM_FORCEINLINE barrier_flags_view
lookup_barrier_flags(const Group& group, const world_ref& w, int channel) {
  const int me = w.my_pe(), n = w.n_pes(), rank = static_cast<int>(group.thread_rank());
  barrier_flags_view v;
  v.mine = w.barrier_flags(me, channel);
  v.heap = w.local_heap();
  if (rank < n - 1) {
    v.first_peer = (me + 1 + rank) % n;
    v.first_remote = w.barrier_flags(v.first_peer, channel) + me;
  }
  return v;
}

//! One barrier round at `epoch`: tell every other PE this PE arrived (one release fence per signalling thread, then
//! relaxed stores), wait until every other PE told us (acquire polls). The group syncs before and after, so the
//! release covers every thread's earlier writes and the acquires every thread's later reads (both are cumulative
//! through the group barrier).
template <class Group>
SYMM_DEVICE SYMM_FORCEINLINE void barrier_round(const Group& group, const world_ref& w, int channel,
                                                const barrier_flags_view& flags, std::uint64_t epoch) {
  const int me = w.my_pe(), n = w.n_pes();
  const int rank = static_cast<int>(group.thread_rank()), count = static_cast<int>(group.num_threads());
  using flag = cuda::atomic_ref<std::uint64_t, cuda::thread_scope_system>;
  if (flags.first_remote != nullptr) {
    release_fence_system();
    store_arrival(flags.first_remote, epoch);
    // This thread's peers are first_peer, first_peer + count, ... (mod n), stepped without a division: a `% n` before
    // the first poll put an integer division (~25 instructions, two of them long-latency conversions) between the
    // arrival store and the wait. A loop that continues has count < n - 1, so one subtraction wraps.
    const auto next = [&](int p) { return p + count >= n ? p + count - n : p + count; };
    int peer = flags.first_peer;
    for (int k = rank + count; k < n - 1; k += count) {
      peer = next(peer);
      store_arrival(&w.barrier_flags(peer, channel)[me], epoch);
    }
    peer = flags.first_peer;
    for (int k = rank; k < n - 1; k += count) {
      detail::device_wait_for_count(flag(flags.mine[peer]), epoch, "symm::sync_all", me, peer, flags.heap);
      peer = next(peer);
    }
  }
  sync_group(group); // not group.sync(): the polling threads' warps are diverged here (group.hpp, sync_group)
}
} // namespace detail

//! A sequence of device barriers on one channel by one group per PE, with the channel's epoch kept in registers:
//! each sync() costs one round of flag stores and polls, nothing else. Construct it with every thread of the group;
//! the destructor saves the epoch for the next session on the channel (in a later kernel or later in this one).
//! One session per channel at a time on each PE.
//! \code
//!   symm::barrier_session bar(cooperative_groups::this_thread_block(), world, 1);
//!   for (int step = 0; step < steps; ++step) { exchange_halos(...); bar.barrier(); compute(...); }
//! \endcode
template <cooperating_group Group>
class barrier_session {
public:
  SYMM_DEVICE barrier_session(const Group& group, const world_ref& w, int channel = 0)
      : group_(group), world_(w), channel_(channel) {
    detail::sync_group(group_); // a previous session's saved epoch is visible to every thread
    flags_ = detail::lookup_barrier_flags(group_, w, channel);
    epoch_ = flags_.mine[w.n_pes()];
  }
  barrier_session(const barrier_session&) = delete;
  barrier_session& operator=(const barrier_session&) = delete;
  SYMM_DEVICE ~barrier_session() {
    detail::sync_group(group_); // every thread has read the epoch before it is overwritten
    if (group_.thread_rank() == 0) flags_.mine[world_.n_pes()] = epoch_;
  }

  //! Waits until the group of every PE reached the same sync(); writes before it are visible after it.
  SYMM_DEVICE void sync() {
    detail::sync_group(group_);
    detail::barrier_round(group_, world_, channel_, flags_, ++epoch_);
  }
  //! quiet() and sync(): every put the group issued before it is complete and visible on every PE after it. Device
  //! puts are stores, which the round's system-scope release fence already completes (cumulatively, through the
  //! group barrier before it), so this costs what sync() costs.
  SYMM_DEVICE void barrier() { sync(); }

private:
  Group group_;
  world_ref world_;
  int channel_;
  detail::barrier_flags_view flags_;
  std::uint64_t epoch_ = 0;
};

//! Waits until one group of every PE has called it on the same channel, without completing this group's puts
//! (OpenSHMEM's sync_all). Every thread of `group` calls it. For many barriers in one kernel use a barrier_session.
template <cooperating_group Group>
SYMM_DEVICE void sync_all(const Group& group, const world_ref& w, int channel = 0) {
  barrier_session<Group>(group, w, channel).sync();
}

//! quiet() and sync_all(): every put any thread of the group issued before it is visible on every PE after it.
template <cooperating_group Group>
SYMM_DEVICE void barrier_all(const Group& group, const world_ref& w, int channel = 0) {
  barrier_session<Group>(group, w, channel).barrier();
}

//! A device barrier at the end of a scope: barrier_all(group, w, channel) when the scope exits.
template <cooperating_group Group>
class [[nodiscard]] device_barrier_scope {
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
