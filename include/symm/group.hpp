// symm/group.hpp: the cooperating groups that share device-side bulk operations. symm never reads threadIdx: the
// caller says which threads cooperate, with a cooperative_groups group or symm::this_thread.
#pragma once

#include <symm/detail/config.hpp>

#include <concepts>

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
//! Whether `G` may call sync(): a grid may only under a cooperative launch, so grid-wide operations leave the
//! synchronisation to the caller.
template <class G>
inline constexpr bool syncs_after_bulk = !requires(const G& g) {
  g.is_valid();
};
} // namespace detail

SYMM_END_NAMESPACE
