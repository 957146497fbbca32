// symm/group.hpp: the cooperating groups that share device-side bulk operations. symm never reads threadIdx: the
// caller says which threads cooperate, with a cooperative_groups group or symm::this_thread.
#pragma once

#include <symm/detail/config.hpp>

#if SYMM_CUDA_COMPILATION()
#  include <cooperative_groups.h>
#endif

#include <concepts>
#include <type_traits>
#include <utility>

SYMM_BEGIN_NAMESPACE

//! A group of threads that call an operation together: each knows its rank and the count, and they can synchronise.
//! cooperative_groups::thread_block, thread_block_tile<N> and grid_group model it, and so does symm::this_thread.
template <class G>
concept cooperating_group = requires(const G& g) {
  { g.thread_rank() } -> std::convertible_to<unsigned long long>;
  { g.num_threads() } -> std::convertible_to<unsigned long long>;
  g.sync();
};

//! The calling thread alone (OpenSHMEM's thread-scope calls); made by symm::this_thread().
struct single_thread {
  SYMM_HOST_DEVICE static constexpr unsigned thread_rank() noexcept { return 0; }
  SYMM_HOST_DEVICE static constexpr unsigned num_threads() noexcept { return 1; }
  SYMM_HOST_DEVICE static constexpr void sync() noexcept {}
};
//! The calling thread as a group, in the manner of cooperative_groups::this_thread_block().
SYMM_HOST_DEVICE constexpr single_thread this_thread() noexcept {
  return {};
}

namespace detail {
//! group.sync(), but __syncthreads() for a whole thread block. cooperative_groups' thread_block::sync() first asks
//! whether the calling warp is converged (BRA.DIV) and, when it is not, as after a device wait that only some of its
//! threads ran, takes a collective path (WARPSYNC.COLLECTIVE, then BAR.SYNC with a thread count); __syncthreads()
//! reconverges the warp (WARPSYNC.ALL) and meets at the plain barrier. A block's device barrier round measured 1.125x
//! raw's time with the former and 1.015x with the latter (H100, 5 interleaved rounds; docs/benchmarks.md).
template <class G>
SYMM_DEVICE SYMM_FORCEINLINE void sync_group(const G& group) {
#if SYMM_CUDA_COMPILATION()
  if constexpr (std::is_same_v<G, cooperative_groups::thread_block>) {
    (void) group;
    __syncthreads();
    return;
  }
#endif
  group.sync();
}

//! Whether `G` may call sync(): a grid may only under a cooperative launch, so grid-wide operations leave the
//! synchronisation to the caller.
template <class G>
inline constexpr bool syncs_after_bulk = !requires(const G& g) {
  g.is_valid();
};
} // namespace detail

//! `group`, whose put, get, put_nbi, get_nbi, put_signal, put_signal_nbi and device collectives synchronise it before
//! and after, as NVSHMEM's `*_block` and `*_warp` calls do: made by symm::synced(group). Before: every thread's writes
//! to the source are seen by the threads that copy them. After a blocking call: every thread may reuse the whole
//! source (a put), or read the whole destination (a get); after an nbi call, every thread has issued its part, and the
//! future's wait() still completes the transfer. A plain group skips both, so a small copy costs only its loads and
//! stores; a port of NVSHMEM code whose threads fill the buffer and then put it together says `symm::synced(block)`.
template <cooperating_group Group>
class synced_group {
  static_assert(detail::syncs_after_bulk<Group>,
                "symm::synced: a grid group can synchronise only under a cooperative launch; synchronise the grid "
                "yourself (grid.sync()) around the copy, or pass a block, a warp tile or symm::this_thread()");

public:
  SYMM_HOST_DEVICE constexpr explicit synced_group(const Group& group) noexcept : group_(group) {}
  SYMM_DEVICE auto thread_rank() const { return group_.thread_rank(); }
  SYMM_DEVICE auto num_threads() const { return group_.num_threads(); }
  SYMM_DEVICE void sync() const { detail::sync_group(group_); }
  //! The group without the added synchronisation: what the copy itself runs on.
  SYMM_HOST_DEVICE constexpr const Group& unsynced() const noexcept { return group_; }

private:
  Group group_;
};

//! `group` with NVSHMEM's group semantics for the RMA calls it is passed to (see synced_group).
//! \code  symm::put(symm::synced(cooperative_groups::this_thread_block()), symm::remote(dst, pe), src); \endcode
template <cooperating_group Group>
SYMM_HOST_DEVICE constexpr synced_group<Group> synced(const Group& group) noexcept {
  return synced_group<Group>(group);
}
template <cooperating_group Group>
SYMM_HOST_DEVICE constexpr synced_group<Group> synced(const synced_group<Group>& group) noexcept {
  return group;
}

namespace detail {
template <class G>
inline constexpr bool is_synced_group = false;
template <class G>
inline constexpr bool is_synced_group<synced_group<G>> = true;

//! The group an RMA call copies with: a synced_group's own group, any other group itself.
template <class G>
SYMM_HOST_DEVICE constexpr const auto& copying_group(const G& group) noexcept {
  if constexpr (is_synced_group<G>) return group.unsynced();
  else return group;
}

//! The type of copying_group(G): the future of an nbi call on a synced group is that of the group itself.
template <class G>
using copying_group_t = std::remove_cvref_t<decltype(copying_group(std::declval<const G&>()))>;

//! Runs `copy` on copying_group(group) between the two syncs a synced_group adds (none for any other group): every
//! group-scoped RMA call and device collective goes through it.
template <class G, class Copy>
SYMM_DEVICE SYMM_FORCEINLINE void with_group_syncs(const G& group, Copy&& copy) {
  if constexpr (is_synced_group<G>) group.sync(); // synced_group::sync: sync_group of its group
  copy(copying_group(group));
  if constexpr (is_synced_group<G>) group.sync();
}
} // namespace detail

SYMM_END_NAMESPACE
