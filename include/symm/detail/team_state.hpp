// symm/detail/team_state.hpp: what the handles of one team share — its PEs in world numbering, its host barrier
// channel, its count of collective operations, its NVSHMEM team (nvshmem backend) — and the collective splits that
// make teams.
#pragma once

#include <symm/detail/backend/nvshmem/nvshmem_team.hpp>
#include <symm/detail/world_state.hpp>

#include <bit>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

SYMM_BEGIN_NAMESPACE
namespace detail {

//! The PEs start, start + stride, ..., start + (size - 1) * stride (stride >= 1).
struct strided_pes {
  int start = 0;
  int stride = 1;
  int size = 0;

  [[nodiscard]] SYMM_HOST_DEVICE constexpr int pe(int index) const noexcept { return start + index * stride; }
  //! Where `p` is among them, or -1.
  [[nodiscard]] SYMM_HOST_DEVICE constexpr int index_of(int p) const noexcept {
    if (p < start || (p - start) % stride != 0) return -1;
    int index = (p - start) / stride;
    return index < size ? index : -1;
  }
};

//! "1, 3, 5" for few PEs, "0, 2, 4, ..., 62" for many.
inline std::string list_pes(strided_pes pes) {
  std::string out;
  const int shown = pes.size <= 16 ? pes.size : 3;
  for (int i = 0; i < shown; ++i)
    out += fmt::format("{}{}", i == 0 ? "" : ", ", pes.pe(i));
  if (shown < pes.size) out += fmt::format(", ..., {}", pes.pe(pes.size - 1));
  return out;
}

//! The shared state of a team. A PE outside the team holds one too (`member()` false), so that its invalid handle can
//! say which team it is not a member of.
class team_state {
public:
  //! The world team: every PE, channel 0 of PE 0, the world's own count of collective operations (shared with
  //! allocations, which are collective over the world team too).
  explicit team_state(std::shared_ptr<world_state> world)
      : world_(std::move(world)), pes_{0, 1, world_->n_pes()}, my_index_(world_->my_pe()), channel_(0),
        name_(fmt::format("the world team (world PEs 0 to {})", world_->n_pes() - 1)) {
    fill_members();
    world_rma_ = rma_peer_;
    if (world_rma_) nvshmem_team_ = nvshmem_world_team; // symm's PE numbers are NVSHMEM's
  }

  //! A team split from a parent. `channel` is its host barrier channel on the control page of its first PE.
  team_state(std::shared_ptr<world_state> world, strided_pes pes, int channel, std::string name, bool world_rma)
      : world_(std::move(world)), pes_(pes), my_index_(pes.index_of(world_->my_pe())), channel_(channel),
        name_(std::move(name)), world_rma_(world_rma) {
    fill_members();
  }

  team_state(const team_state&) = delete;
  team_state& operator=(const team_state&) = delete;

  [[nodiscard]] world_state& world() const noexcept { return *world_; }
  [[nodiscard]] const std::shared_ptr<world_state>& world_ptr() const noexcept { return world_; }
  //! The team's PEs in world numbering.
  [[nodiscard]] strided_pes pes() const noexcept { return pes_; }
  [[nodiscard]] const std::vector<int>& members() const noexcept { return members_; }
  //! This PE's number in the team; -1 when it is not a member.
  [[nodiscard]] int my_index() const noexcept { return my_index_; }
  [[nodiscard]] bool member() const noexcept { return my_index_ >= 0 && !destroyed_; }
  [[nodiscard]] bool is_world() const noexcept { return channel_ == 0; }
  [[nodiscard]] int channel() const noexcept { return channel_; }
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  //! The weakest link between the team's GPUs (detail/topology.hpp), for the collectives' plan: found once, when the
  //! team is made, from the world's topology, the same on every PE.
  [[nodiscard]] team_links links() const noexcept { return links_; }

  //! Whether this PE reaches a PE of the team only through NVSHMEM RMA (nvshmem backend, another node): then the
  //! team's collectives are NVSHMEM's, over nvshmem_team(). Always false on the other backends.
  [[nodiscard]] bool rma_peer() const noexcept { return rma_transport && rma_peer_; }
  //! Whether the world has such a PE: then splits make NVSHMEM teams alongside (the same on every PE of a job).
  [[nodiscard]] bool world_rma() const noexcept { return rma_transport && world_rma_; }
  //! The team's NVSHMEM team (nvshmem_team_t), or no_nvshmem_team: none is needed (world_rma() false), or NVSHMEM
  //! made none (nvshmem_problem() says why).
  [[nodiscard]] std::int32_t nvshmem_team() const noexcept { return nvshmem_team_; }
  [[nodiscard]] const std::string& nvshmem_problem() const noexcept { return nvshmem_problem_; }
  void set_nvshmem_team(nvshmem_team_result made) {
    nvshmem_team_ = made.team;
    nvshmem_problem_ = std::move(made.problem);
  }

  //! Throws errc::invalid_argument when this PE may not use the team: it is not a member, or the team was destroyed.
  void require_member(std::string_view what) const {
    if (destroyed_) {
      SYMM_THROW(errc::invalid_argument, "PE {}: {} on {}, which this PE already destroyed", world_->my_pe(), what,
                 name_);
    }
    if (my_index_ < 0) {
      SYMM_THROW(errc::invalid_argument,
                 "PE {}: {} on an invalid team: PE {} is not a member of {} (start {}, stride {}, size {} in world "
                 "PEs), so its handle is invalid (valid() == false)",
                 world_->my_pe(), what, world_->my_pe(), name_, pes_.start, pes_.stride, pes_.size);
    }
  }

  //! The team as the PEs of a collective operation (members only).
  [[nodiscard]] collective_group group() noexcept {
    if (is_world()) return world_->world_group();
    return collective_group{members_, channel_, &sequence_, name_};
  }

  //! Collective over the team: waits for every member, then frees the team's channel on this PE. No request is read
  //! after it: the channel's next team reuses the slots.
  void destroy(std::string_view what) {
    if (!member() || is_world()) return;
    world_->agree(collective_request{0, collective_kind::destroy_team, {0, 0, 0}, world_->team_channels()}, group(),
                  what, nullptr, /*check=*/false);
    world_->release_team_channel(channel_);
    destroyed_ = true;
    nvshmem_destroy_team(std::exchange(nvshmem_team_, no_nvshmem_team)); // collective over the team's PEs too
  }

private:
  void fill_members() {
    members_.reserve(static_cast<std::size_t>(pes_.size));
    for (int i = 0; i < pes_.size; ++i) {
      members_.push_back(pes_.pe(i));
      if constexpr (rma_transport) rma_peer_ = rma_peer_ || !world_->mapped(pes_.pe(i));
    }
    links_ = world_->topology().links_of(members_);
  }

  std::shared_ptr<world_state> world_;
  strided_pes pes_;
  int my_index_ = -1;
  int channel_ = 0;
  std::string name_;
  std::vector<int> members_;
  team_links links_;
  std::uint64_t sequence_ = 0; // collective operations on this team (not used by the world team)
  bool destroyed_ = false;
  bool rma_peer_ = false;
  bool world_rma_ = false;
  std::int32_t nvshmem_team_ = no_nvshmem_team;
  std::string nvshmem_problem_;
};

//! Why a team of a parent without an NVSHMEM team has none either.
inline nvshmem_team_result no_nvshmem_parent(const team_state& parent) {
  return {no_nvshmem_team, fmt::format("its parent, {}, has none: {}", parent.name(), parent.nvshmem_problem())};
}

[[noreturn]] inline void throw_no_channel(const world_state& w, std::string_view what, strided_pes pes,
                                          const std::vector<collective_request>& asked, strided_pes in_parent) {
  std::string table;
  for (int i = 0; i < pes.size; ++i) {
    const channel_set& used = asked[static_cast<std::size_t>(in_parent.pe(i))].channels;
    table += fmt::format("\n  PE {}: {} teams", pes.pe(i), used.size() - 1);
  }
  SYMM_THROW(errc::unsupported,
             "PE {}: {}: no host barrier channel is free for the new team (world PEs {}): each of the {} team "
             "channels is used by a team that one of its PEs belongs to (a PE can be in at most {} teams at once "
             "besides the world; -DSYMM_MAX_TEAMS=N for the whole build changes that). Destroy teams that are "
             "no longer needed. Teams of each PE:{}",
             w.my_pe(), what, list_pes(pes), max_teams, max_teams, table);
}

//! Collective over `parent`: the team of parent PEs start, start + stride, ..., start + (size - 1) * stride.
inline std::shared_ptr<team_state> split_strided(team_state& parent, int start, int stride, int size) {
  world_state& w = parent.world();
  const std::string what = fmt::format("team::split_strided(start = {}, stride = {}, size = {})", start, stride, size);
  parent.require_member(what);
  std::vector<collective_request> asked;
  w.agree(collective_request{0, collective_kind::split_strided, {start, stride, size}, w.team_channels()},
          parent.group(), what, &asked);

  const int n = parent.pes().size;
  std::string problem;
  if (stride < 1) problem = "stride must be at least 1";
  else if (size < 1 || size > n) problem = fmt::format("size must be in [1, {}], the parent team's n_pes", n);
  else if (start < 0 || start >= n) problem = fmt::format("start must be a PE of the parent team, in [0, {})", n);
  else if (std::int64_t{start} + std::int64_t{size - 1} * stride >= n) {
    problem = fmt::format("its last PE, start + (size - 1) * stride = {}, is not in the parent team, whose PEs are "
                          "0 to {}",
                          std::int64_t{start} + std::int64_t{size - 1} * stride, n - 1);
  }
  if (!problem.empty()) {
    SYMM_THROW(errc::invalid_argument, "PE {}: {} of {}: {}", w.my_pe(), what, parent.name(), problem);
  }

  const strided_pes in_parent{start, size == 1 ? 1 : stride, size};
  const strided_pes pes{parent.pes().pe(start), parent.pes().stride * in_parent.stride, size};
  channel_set used;
  for (int i = 0; i < size; ++i)
    used |= asked[static_cast<std::size_t>(in_parent.pe(i))].channels;
  const int channel = used.first_free_team_channel();
  if (channel < 0) throw_no_channel(w, what, pes, asked, in_parent);
  auto child = std::make_shared<team_state>(
      parent.world_ptr(), pes, channel,
      fmt::format("the team split_strided(start = {}, stride = {}, size = {}) of a team of {} PEs (world PEs {})",
                  start, stride, size, n, list_pes(pes)),
      parent.world_rma());
  if (child->member()) w.claim_team_channel(channel);
  if (parent.world_rma()) { // NVSHMEM's split is collective over the parent: every parent PE makes it
    child->set_nvshmem_team(
        parent.nvshmem_team() == no_nvshmem_team
            ? no_nvshmem_parent(parent)
            : nvshmem_split_strided(parent.nvshmem_team(), start, in_parent.stride, size, child->member(), pes.start,
                                    pes.stride));
  }
  return child;
}

//! Collective over `parent`: its PEs as a grid of rows of x_range PEs (the last row may be shorter). Returns this PE's
//! row (the x-team: parent PEs with the same number / x_range) and column (the y-team: the same number % x_range).
//! An x_range above the parent's size is taken as its size (OpenSHMEM).
inline std::pair<std::shared_ptr<team_state>, std::shared_ptr<team_state>> split_2d(team_state& parent, int x_range) {
  world_state& w = parent.world();
  const std::string what = fmt::format("team::split_2d(x_range = {})", x_range);
  parent.require_member(what);
  std::vector<collective_request> asked;
  w.agree(collective_request{0, collective_kind::split_2d, {x_range, 0, 0}, w.team_channels()}, parent.group(), what,
          &asked);
  const int n = parent.pes().size;
  if (x_range < 1) {
    SYMM_THROW(errc::invalid_argument, "PE {}: {} of {}: x_range must be at least 1", w.my_pe(), what, parent.name());
  }
  const int xr = x_range < n ? x_range : n;
  auto x_team = [&](int row) { return strided_pes{row * xr, 1, std::min(xr, n - row * xr)}; };
  auto y_team = [&](int column) { return strided_pes{column, xr, (n - column + xr - 1) / xr}; };
  auto in_world = [&](strided_pes in_parent) {
    return strided_pes{parent.pes().pe(in_parent.start), parent.pes().stride * in_parent.stride, in_parent.size};
  };

  // Every PE computes every team's channel, so that all agree: rows first, then columns, which must also avoid the
  // channels of their PEs' rows.
  const int rows = (n + xr - 1) / xr;
  std::vector<int> row_channel(static_cast<std::size_t>(rows));
  for (int row = 0; row < rows; ++row) {
    channel_set used;
    for (int i = 0; i < x_team(row).size; ++i)
      used |= asked[static_cast<std::size_t>(x_team(row).pe(i))].channels;
    row_channel[static_cast<std::size_t>(row)] = used.first_free_team_channel();
    if (row_channel[static_cast<std::size_t>(row)] < 0) {
      throw_no_channel(w, what, in_world(x_team(row)), asked, x_team(row));
    }
  }
  std::vector<int> column_channel(static_cast<std::size_t>(xr));
  for (int column = 0; column < xr; ++column) {
    channel_set used;
    for (int i = 0; i < y_team(column).size; ++i) {
      int q = y_team(column).pe(i);
      used |= asked[static_cast<std::size_t>(q)].channels;
      used.insert(row_channel[static_cast<std::size_t>(q / xr)]);
    }
    column_channel[static_cast<std::size_t>(column)] = used.first_free_team_channel();
    if (column_channel[static_cast<std::size_t>(column)] < 0) {
      throw_no_channel(w, what, in_world(y_team(column)), asked, y_team(column));
    }
  }

  const int me = parent.my_index(), row = me / xr, column = me % xr;
  const strided_pes x = in_world(x_team(row)), y = in_world(y_team(column));
  auto x_state = std::make_shared<team_state>(
      parent.world_ptr(), x, row_channel[static_cast<std::size_t>(row)],
      fmt::format("the x-team {} of split_2d(x_range = {}) of a team of {} PEs (world PEs {})", row, x_range, n,
                  list_pes(x)),
      parent.world_rma());
  auto y_state = std::make_shared<team_state>(
      parent.world_ptr(), y, column_channel[static_cast<std::size_t>(column)],
      fmt::format("the y-team {} of split_2d(x_range = {}) of a team of {} PEs (world PEs {})", column, x_range, n,
                  list_pes(y)),
      parent.world_rma());
  w.claim_team_channel(x_state->channel());
  w.claim_team_channel(y_state->channel());
  if (parent.world_rma()) { // collective over the parent, like symm's split; x_range clamped as symm takes it
    if (parent.nvshmem_team() == no_nvshmem_team) {
      x_state->set_nvshmem_team(no_nvshmem_parent(parent));
      y_state->set_nvshmem_team(no_nvshmem_parent(parent));
    } else {
      auto [nx, ny] = nvshmem_split_2d(parent.nvshmem_team(), xr, x.start, x.stride, x.size, y.start, y.stride, y.size);
      x_state->set_nvshmem_team(std::move(nx));
      y_state->set_nvshmem_team(std::move(ny));
    }
  }
  return {std::move(x_state), std::move(y_state)};
}

} // namespace detail
SYMM_END_NAMESPACE
