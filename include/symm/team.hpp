// symm/team.hpp: symm::team, a set of PEs that operate together (split from the world or another team), its
// trivially copyable device view symm::team_ref, and the barriers over a team's PEs on the host and in kernels.
#pragma once

#include <symm/detail/checked_size.hpp>
#include <symm/detail/collective_release.hpp>
#include <symm/detail/peer_table.hpp>
#include <symm/detail/team_state.hpp>
#include <symm/group.hpp>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <span>
#include <type_traits>
#include <utility>

SYMM_BEGIN_NAMESPACE

class world;
class team_ref;
struct team_2d;

//! How many teams a PE can belong to at once besides the world (NVSHMEM_MAX_TEAMS's role; NVSHMEM's default is 32):
//! 128, or SYMM_MAX_TEAMS given to every translation unit of the build (-DSYMM_MAX_TEAMS=N, 1 to 4095; the same in
//! every PE's program). Each possible team takes a host barrier channel on every PE's control page: about 270 bytes
//! each at 128 (a 36 KiB page), more per channel beyond. On the nvshmem backend a team with a PE reached through
//! NVSHMEM RMA also holds an NVSHMEM team, which NVSHMEM_MAX_TEAMS limits.
inline constexpr int max_teams = detail::max_teams;

//! A set of PEs, numbered 0 to n_pes() - 1 among themselves, that barriers (and later collectives) run over: the
//! world team (`world.team()`) or a team split from another by `split_strided` or `split_2d` (OpenSHMEM's teams).
//! The PEs of every team are world PEs start, start + stride, ... for some start and stride.
//!
//! Splitting is collective over the parent team: every PE of the parent calls it with the same arguments, and PEs
//! whose arguments differ get errc::allocation_mismatch listing each PE's call. A PE that is not in the new team gets
//! an invalid team (`valid() == false`); every operation on it throws errc::invalid_argument naming the PE and the
//! team. Destruction is collective over the team's PEs (a team barrier; nothing for the world team and invalid teams);
//! a team destroyed while an exception propagates skips it, and its world then reports this PE as failed.
//!
//! Each team has its own host barrier channel (one of max_teams on the control page of its first PE), chosen at
//! creation so that no PE of the team uses it for another team: barriers of different teams never interfere, and a PE
//! can be in at most max_teams teams at once besides the world. Move-only; `team_ref` is the copyable view that kernels
//! take.
//!
//! \code
//!   symm::team even = world.team().split_strided(0, 2, (world.n_pes() + 1) / 2);   // on every PE of the world
//!   if (even.valid()) { symm::remote(x, even.world_pe((even.my_pe() + 1) % even.n_pes())) = v;  even.barrier(); }
//! \endcode
class team {
public:
  //! An invalid team (OpenSHMEM's SHMEM_TEAM_INVALID).
  team() noexcept = default;
  // Move-only: kernels take symm::team_ref; pass the team (it converts) or ref().
  team(const team&, detail::kernels_and_copies_take_the_view<team_ref> = {}) = delete;
  team& operator=(const team&) = delete;
  team(team&& other) noexcept : state_(std::move(other.state_)), uncaught_(other.uncaught_) {}
  //! Destroys this team first (collective), then takes `other`'s.
  team& operator=(team&& other) {
    if (this != &other) {
      destroy();
      state_ = std::move(other.state_);
      uncaught_ = other.uncaught_;
    }
    return *this;
  }
  ~team() {
    if (!state_ || !state_->member() || state_->is_world()) return;
    // Made while unwinding too (detail/collective_release.hpp has the rule), so that PEs stay in step.
    detail::release_collectively(
        state_->world(), state_->name(), std::uncaught_exceptions() > uncaught_,
        detail::on_release_failure::mark_failed, [&] { state_->destroy("symm::team's destructor"); });
  }

  //! Whether this PE is a member of a live team (false for a PE outside the team of a split, for a default-made,
  //! moved-from or destroyed team).
  [[nodiscard]] bool valid() const noexcept { return state_ && state_->member(); }

  //! This PE's number in the team, in [0, n_pes()). Throws errc::invalid_argument on an invalid team.
  [[nodiscard]] int my_pe() const { return checked("team::my_pe()").my_index(); }
  //! How many PEs the team has. Throws errc::invalid_argument on an invalid team.
  [[nodiscard]] int n_pes() const { return checked("team::n_pes()").pes().size; }

  //! The world PE number of the team's PE `team_pe`. Throws errc::invalid_pe when it is not in [0, n_pes()).
  template <detail::count_integer PE>
  [[nodiscard]] int world_pe(PE team_pe) const {
    const auto& s = checked("team::world_pe()");
    check_team_pe(s, team_pe, "team::world_pe");
    return s.pes().pe(detail::narrow_pe(team_pe));
  }

  //! The number in `to` of this team's PE `team_pe`, or -1 when that PE is not a member of `to` (OpenSHMEM's
  //! team_translate_pe). Throws errc::invalid_pe when team_pe is not in [0, n_pes()), errc::invalid_argument when
  //! either team is invalid on this PE.
  template <detail::count_integer PE>
  [[nodiscard]] int translate_pe(PE team_pe, const team& to) const {
    const auto& s = checked("team::translate_pe()");
    check_team_pe(s, team_pe, "team::translate_pe");
    return to.checked("team::translate_pe() into a team").pes().index_of(s.pes().pe(detail::narrow_pe(team_pe)));
  }

  //! The world PE numbers of the team's PEs, in team order (what collectives address).
  [[nodiscard]] std::span<const int> world_pes() const { return checked("team::world_pes()").members(); }

  //! Collective over this team: the team of its PEs start, start + stride, ..., start + (size - 1) * stride (numbers
  //! in this team). PEs outside it get an invalid team. Throws errc::invalid_argument (with the values) when stride <
  //! 1, size is not in [1, n_pes()] or a PE of the new team is not in this one; errc::allocation_mismatch when the PEs
  //! passed different arguments; errc::unsupported when the new team's PEs together already use all max_teams team
  //! channels (a PE's teams take channels no other PE of the new team may use: two PEs in 64 teams each use 128).
  //! \code
  //!   auto odd = world.team().split_strided(1, 2, world.n_pes() / 2);
  //! \endcode
  [[nodiscard]] team split_strided(int start, int stride, int size) const {
    return team(detail::split_strided(checked("team::split_strided()"), start, stride, size));
  }

  //! Collective over this team: its PEs as rows of x_range PEs (the last row may be shorter); returns this PE's row,
  //! `x` (PEs whose number / x_range is this PE's), and column, `y` (number % x_range the same). Every PE of this team
  //! gets valid x and y teams. An x_range above n_pes() is taken as n_pes(). Throws errc::invalid_argument when
  //! x_range < 1, and like split_strided otherwise.
  //! \code
  //!   auto [row, column] = world.team().split_2d(4);   // 8 PEs: rows {0..3}, {4..7}; columns {0, 4}, {1, 5}, ...
  //! \endcode
  [[nodiscard]] team_2d split_2d(int x_range) const;

  //! Completes this PE's outstanding operations (quiet), then waits for every PE of the team: whatever a team PE wrote
  //! before it is visible to every team PE after it. Throws errc::invalid_argument on an invalid team,
  //! errc::peer_failed when a PE fails meanwhile.
  void barrier() const {
    auto& s = checked("team::barrier()");
    s.world().quiet("team::barrier()");
    s.world().barrier(s.group(), "team::barrier()");
  }
  //! Waits for every PE of the team, without completing outstanding non-blocking operations.
  void sync() const {
    auto& s = checked("team::sync()");
    s.world().barrier(s.group(), "team::sync()");
  }

  //! Collective over the team: waits for its PEs, then frees its channel; the handle is then invalid. Nothing for the
  //! world team or an invalid team. The destructor does it too; call it to see its errors as exceptions.
  void destroy() {
    if (state_ && state_->member() && !state_->is_world()) state_->destroy("team::destroy()");
    state_.reset();
  }

  //! The view of the team that kernels take. Throws errc::invalid_argument on an invalid team.
  [[nodiscard]] team_ref ref() const;

  //! The shared state, for symm's own types (collectives). Not for users.
  [[nodiscard]] const std::shared_ptr<detail::team_state>& state() const noexcept { return state_; }

private:
  friend class world;
  explicit team(std::shared_ptr<detail::team_state> state) noexcept : state_(std::move(state)) {}

  detail::team_state& checked(std::string_view what) const {
    if (!state_) {
      SYMM_THROW(errc::invalid_argument, "{} on an invalid team: the handle is empty (default-made, moved, destroyed)",
                 what);
    }
    state_->require_member(what);
    state_->world().require_alive(what);
    return *state_;
  }
  template <detail::count_integer PE>
  static void check_team_pe(const detail::team_state& s, PE team_pe, std::string_view what) {
    if (std::cmp_less(team_pe, 0) || std::cmp_greater_equal(team_pe, s.pes().size)) {
      SYMM_THROW(errc::invalid_pe, "PE {}: {}({}) names team PE {}, but {} has PEs 0 to {} (n_pes = {})",
                 s.world().my_pe(), what, team_pe, team_pe, s.name(), s.pes().size - 1, s.pes().size);
    }
  }

  std::shared_ptr<detail::team_state> state_;
  int uncaught_ = std::uncaught_exceptions();
};

//! The two teams of a split_2d: this PE's row and column.
struct team_2d {
  team x; //!< the PEs of this PE's row (x_range PEs, fewer in the last row)
  team y; //!< the PEs of this PE's column
};

inline team_2d team::split_2d(int x_range) const {
  auto [x, y] = detail::split_2d(checked("team::split_2d()"), x_range);
  return team_2d{team(std::move(x)), team(std::move(y))};
}

//! `from.translate_pe(pe, to)`: the number in `to` of `from`'s PE `pe`, or -1 when it is not a member of `to`.
template <detail::count_integer PE>
[[nodiscard]] int translate_pe(const team& from, PE pe, const team& to) {
  return from.translate_pe(pe, to);
}

//! What device code needs of a team: its PEs (world PE start, start + stride, ...), this PE's number in it, and where
//! the teams' device barrier flags live on each PE. Made from a team (implicitly, as at a kernel launch, or by
//! `team.ref()`); valid while the team's world lives. Pass it to kernels by value.
class team_ref {
public:
  team_ref() = default;
  //! Throws errc::invalid_argument when `t` is invalid on this PE.
  team_ref(const team& t) // NOLINT: implicit on purpose, as at a kernel launch
      : team_ref(t.ref()) {}

  //! This PE's number in the team, and the team's size.
  [[nodiscard]] SYMM_HOST_DEVICE constexpr int my_pe() const noexcept { return my_pe_; }
  [[nodiscard]] SYMM_HOST_DEVICE constexpr int n_pes() const noexcept { return pes_.size; }
  //! The world PE number of team PE `team_pe` (not checked).
  [[nodiscard]] SYMM_HOST_DEVICE constexpr int world_pe(int team_pe) const noexcept { return pes_.pe(team_pe); }
  //! The team's number of world PE `world_pe`, or -1 when it is not a member.
  [[nodiscard]] SYMM_HOST_DEVICE constexpr int team_pe(int world_pe) const noexcept { return pes_.index_of(world_pe); }
  //! This PE's world number, and the world's size.
  [[nodiscard]] SYMM_HOST_DEVICE constexpr int world_my_pe() const noexcept { return world_my_pe_; }
  [[nodiscard]] SYMM_HOST_DEVICE constexpr int world_n_pes() const noexcept { return world_n_pes_; }
  //! The world number of the team's first PE, and the step between its PEs' world numbers.
  [[nodiscard]] SYMM_HOST_DEVICE constexpr int start() const noexcept { return pes_.start; }
  [[nodiscard]] SYMM_HOST_DEVICE constexpr int stride() const noexcept { return pes_.stride; }

  //! Channel `channel`'s pair-counted barrier flags on world PE `pe`, in the flag area at heap offset `area`:
  //! world_n_pes() arrival counts (word q counts world PE q's arrivals at pe), then pe's counts of its own arrivals at
  //! each world PE. The teams' device barriers use their own area (barrier_flags); symm's stream collectives another.
  [[nodiscard]] SYMM_HOST_DEVICE std::uint64_t* pair_flags(int pe, std::size_t area, int channel) const noexcept {
    return reinterpret_cast<std::uint64_t*>(detail::peer_base(host_peers_, device_peers_, pe) + area) +
           static_cast<std::size_t>(channel) * 2 * static_cast<std::size_t>(world_n_pes_);
  }
  //! This PE's heap base as device code maps it: where its waits find the world's failure word
  //! (detail/device_wait.hpp).
  [[nodiscard]] SYMM_HOST_DEVICE const std::byte* local_heap() const noexcept {
    return detail::peer_base(host_peers_, device_peers_, world_my_pe_);
  }
  //! Channel `channel`'s team barrier flags on world PE `pe`. Shared by every team.
  [[nodiscard]] SYMM_HOST_DEVICE std::uint64_t* barrier_flags(int pe, int channel) const noexcept {
    return pair_flags(pe, flags_offset_, channel);
  }

  //! Whether this PE reaches a PE of the team only through NVSHMEM RMA (nvshmem backend, another node): then the
  //! team's collectives are NVSHMEM's. Constant false on the other backends.
  [[nodiscard]] SYMM_HOST_DEVICE constexpr bool rma_peer() const noexcept { return detail::rma_transport && rma_peer_; }
  //! The team's NVSHMEM team (nvshmem_team_t), or -1 (NVSHMEM_TEAM_INVALID) when it has none.
  [[nodiscard]] SYMM_HOST_DEVICE constexpr std::int32_t nvshmem_team() const noexcept { return nvshmem_team_; }
  //! This PE's symmetric scratch for device-side collectives over RMA that need one (rooted reduce, in-place allreduce,
  //! large reduce_scatter) and its size (nvshmem backend; null elsewhere).
  [[nodiscard]] SYMM_HOST_DEVICE constexpr std::byte* rma_scratch() const noexcept { return rma_scratch_; }
  [[nodiscard]] SYMM_HOST_DEVICE constexpr std::size_t rma_scratch_bytes() const noexcept { return rma_scratch_bytes_; }

private:
  friend class team;
  std::byte* const* host_peers_ = nullptr;
  std::byte* const* device_peers_ = nullptr;
  std::size_t flags_offset_ = 0;
  detail::strided_pes pes_{};
  int my_pe_ = 0;
  int world_my_pe_ = 0;
  int world_n_pes_ = 0;
  // The same fields on every backend, so that the layout does not depend on SYMM_ENABLE_NVSHMEM.
  std::int32_t nvshmem_team_ = -1;
  bool rma_peer_ = false;
  std::byte* rma_scratch_ = nullptr;
  std::size_t rma_scratch_bytes_ = 0;
};

static_assert(std::is_trivially_copyable_v<team_ref>, "team_ref travels to kernels by value");

inline team_ref team::ref() const {
  const auto& s = checked("team::ref()");
  team_ref r;
  r.host_peers_ = s.world().peer_bases();
  r.device_peers_ = s.world().device_peer_bases();
  r.flags_offset_ = s.world().team_flags_offset();
  r.pes_ = s.pes();
  r.my_pe_ = s.my_index();
  r.world_my_pe_ = s.world().my_pe();
  r.world_n_pes_ = s.world().n_pes();
  r.nvshmem_team_ = s.nvshmem_team();
  r.rma_peer_ = s.rma_peer();
#if SYMM_NVSHMEM_BACKEND()
  if (r.rma_peer_) {
    r.rma_scratch_ = s.world().cuda()->nvshmem()->device_scratch();
    r.rma_scratch_bytes_ = detail::nvshmem_heap::device_scratch_bytes;
  }
#endif
  return r;
}

SYMM_END_NAMESPACE

// ---------------------------------------------------------------------------------------------------------------------
// Device code: barriers over a team's PEs, from one group (a block, a warp or one thread) per PE.
//
// Channels are the user's to choose, as for the world's device barriers (team barriers have their own flags: team
// channel c and world channel c are independent). Barriers that run at the same time on one channel must not have two
// PEs in common: give concurrent barriers of overlapping teams (a row and a column of split_2d, the world and a team)
// different channels; disjoint teams (the rows of a split_2d) may share one. One after another, any teams may use a
// channel: arrivals are counted per pair of PEs, not per PE, so a PE's barriers in one team do not disturb its
// barriers with other PEs.
#if SYMM_CUDA_COMPILATION()
#  include <symm/detail/backend/nvshmem/device_rma.hpp>
#  include <symm/detail/device_wait.hpp>

#  include <cuda/atomic>

SYMM_BEGIN_NAMESPACE

namespace detail {
//! One barrier round over a team's PEs, counted per pair of PEs: count one more arrival at every other team PE (one
//! release fence per signalling thread, then relaxed stores), wait until every other team PE's count of arrivals here
//! reaches this PE's count of arrivals there (acquire polls). The group syncs before and after, so the release covers
//! every thread's earlier writes and the acquires every thread's later reads (both are cumulative through it). Each
//! pair is handled by one thread of the group, which keeps the pair's count. `flags_of(i, pe)` is where a channel's
//! flags lie on team PE i (world PE pe): world_n_pes() arrival counts (word q counts q's arrivals at pe), then pe's
//! counts of its own arrivals at each world PE. `heap`: this PE's heap base, where the waits find the world's failure
//! word (a failed PE ends them with "PE n failed" and a trap within milliseconds).
template <class Group, class FlagsOf>
SYMM_DEVICE SYMM_FORCEINLINE void pair_barrier_round(const Group& group, const team_ref& t, const FlagsOf& flags_of,
                                                     const char* what, const std::byte* heap) {
  using counter = cuda::atomic_ref<std::uint64_t, cuda::thread_scope_system>;
  const int me = t.world_my_pe(), size = t.n_pes();
  const int rank = static_cast<int>(group.thread_rank()), count = static_cast<int>(group.num_threads());
  std::uint64_t* mine = flags_of(t.my_pe(), me);
  std::uint64_t* sent = mine + t.world_n_pes();
  if (rank < size) release_fence_system();
  for (int i = rank; i < size; i += count) {
    const int p = t.world_pe(i);
    if (p == me) continue;
    const std::uint64_t arrivals = ++sent[p];
    store_arrival(&flags_of(i, p)[me], arrivals);
  }
  for (int i = rank; i < size; i += count) {
    const int p = t.world_pe(i);
    if (p != me) detail::device_wait_for_count(counter(mine[p]), sent[p], what, me, p, heap);
  }
  sync_group(group); // the polling threads' warps are diverged here (group.hpp)
}
} // namespace detail

//! Waits until one group of every PE of the team has called it on the same channel, without completing this group's
//! puts (OpenSHMEM's team_sync). Every thread of `group` calls it; only team PEs call it.
//! \code
//!   __global__ void k(symm::team_ref row) { symm::sync_all(cooperative_groups::this_thread_block(), row, 1); }
//! \endcode
template <cooperating_group Group>
SYMM_DEVICE void sync_all(const Group& group, const team_ref& t, int channel = 0) {
  detail::sync_group(group);
  detail::pair_barrier_round(
      group, t, [&](int, int pe) { return t.barrier_flags(pe, channel); },
      "symm::sync_all(team) (do two barriers of teams sharing PEs run on one channel at once?)", t.local_heap());
}

//! quiet() and sync_all() over the team: every put any thread of the group issued before it is visible on every PE
//! of the team after it (the round's release fence completes them, as for the world's barrier_session::barrier()).
template <cooperating_group Group>
SYMM_DEVICE void barrier_all(const Group& group, const team_ref& t, int channel = 0) {
  sync_all(group, t, channel);
}

SYMM_END_NAMESPACE
#endif
