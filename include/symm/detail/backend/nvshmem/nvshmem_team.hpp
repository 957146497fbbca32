// symm/detail/backend/nvshmem/nvshmem_team.hpp: the NVSHMEM teams behind symm's teams, host side. Collectives on a team
// with a PE reached through NVSHMEM RMA are NVSHMEM's (detail/backend/nvshmem/collectives.hpp), which take an
// nvshmem_team_t: the world team's is NVSHMEM_TEAM_WORLD (symm's PE numbers are NVSHMEM's), and symm's splits make
// the matching NVSHMEM team alongside (detail/team_state.hpp) when the world has a PE reached through RMA. NVSHMEM has
// a limit on live teams (NVSHMEM_MAX_TEAMS, 32 by default): a split that NVSHMEM refuses leaves the symm team without
// one, and only its collectives over RMA then fail, saying why.
#pragma once

#include <symm/detail/backend/nvshmem/nvshmem_api.hpp>
#include <symm/detail/config.hpp>

#include <fmt/core.h>

#include <cstdint>
#include <string>

SYMM_BEGIN_NAMESPACE
namespace detail {

//! No NVSHMEM team (NVSHMEM_TEAM_INVALID): a team made where none is needed, or one NVSHMEM refused.
inline constexpr std::int32_t no_nvshmem_team = -1;
//! NVSHMEM_TEAM_WORLD, for the world team.
inline constexpr std::int32_t nvshmem_world_team = 0;

//! The NVSHMEM team of one of symm's splits on this PE: the handle (no_nvshmem_team outside the team, or when NVSHMEM
//! made none), and why there is none where the PE is a member.
struct nvshmem_team_result {
  std::int32_t team = no_nvshmem_team;
  std::string problem;
};

#if SYMM_NVSHMEM_BACKEND()
static_assert(NVSHMEM_TEAM_INVALID == no_nvshmem_team && NVSHMEM_TEAM_WORLD == nvshmem_world_team,
              "symm's copies of NVSHMEM's team constants");

//! nvshmem_team_n_pes and nvshmem_team_translate_pe from host code: what a translation unit without device code sees
//! of them (NVSHMEM_HOSTLIB_ONLY) is always_inline without a body, so call the library's function through a pointer
//! (as host_nvshmem_ptr does).
inline int host_nvshmem_team_n_pes(std::int32_t team) {
  int (*volatile entry)(nvshmem_team_t) = &nvshmem_team_n_pes;
  return entry(team);
}
inline int host_nvshmem_team_translate_pe(std::int32_t from, int pe, std::int32_t to) {
  int (*volatile entry)(nvshmem_team_t, int, nvshmem_team_t) = &nvshmem_team_translate_pe;
  return entry(from, pe, to);
}

//! Checks that NVSHMEM's team has symm's PEs (world PEs start, start + stride, ..., size of them); destroys it and says
//! why otherwise, so that no collective runs over a team that differs from the symm team.
inline nvshmem_team_result verify_nvshmem_team(std::int32_t team, int start, int stride, int size, const char* call) {
  if (team == no_nvshmem_team) return {};
  const int n = host_nvshmem_team_n_pes(team);
  bool same = n == size;
  for (int i = 0; same && i < size; ++i)
    same = host_nvshmem_team_translate_pe(team, i, nvshmem_world_team) == start + i * stride;
  if (same) return {team, {}};
  nvshmem_team_destroy(team);
  return {no_nvshmem_team,
          fmt::format("{} made a team of {} PEs that are not symm's (world PEs {}, stride {}, {} of them)", call, n,
                      start, stride, size)};
}

//! Collective over the parent's NVSHMEM team (every PE of the parent calls it): NVSHMEM's split_strided with symm's
//! arguments (numbers in the parent team, as NVSHMEM's are). `world_start`, `world_stride`: the new team in world PEs.
inline nvshmem_team_result nvshmem_split_strided(std::int32_t parent, int start, int stride, int size, bool member,
                                                 int world_start, int world_stride) {
  nvshmem_team_t made = NVSHMEM_TEAM_INVALID;
  const int rc = nvshmem_team_split_strided(parent, start, stride, size, nullptr, 0, &made);
  if (rc != 0 || (member && made == NVSHMEM_TEAM_INVALID)) {
    return {no_nvshmem_team,
            fmt::format("nvshmem_team_split_strided(start = {}, stride = {}, size = {}) returned {} (NVSHMEM has at "
                        "most "
                        "NVSHMEM_MAX_TEAMS teams at once, 32 unless set; destroy teams no longer needed or raise it)",
                        start, stride, size, rc)};
  }
  if (!member) return {};
  return verify_nvshmem_team(made, world_start, world_stride, size, "nvshmem_team_split_strided");
}

//! Collective over the parent's NVSHMEM team: NVSHMEM's split_2d with x_range (at most the parent's size, as symm
//! takes it). NVSHMEM's x-team is this PE's row (parent PEs with the same number / x_range), its y-team the column.
struct nvshmem_split_2d_result {
  nvshmem_team_result x, y;
};
inline nvshmem_split_2d_result nvshmem_split_2d(std::int32_t parent, int x_range, int x_start, int x_stride, int x_size,
                                                int y_start, int y_stride, int y_size) {
  nvshmem_team_t x = NVSHMEM_TEAM_INVALID, y = NVSHMEM_TEAM_INVALID;
  const int rc = nvshmem_team_split_2d(parent, x_range, nullptr, 0, &x, nullptr, 0, &y);
  if (rc != 0 || x == NVSHMEM_TEAM_INVALID || y == NVSHMEM_TEAM_INVALID) {
    // A split_2d that fails part-way may have made one of the two.
    if (x != NVSHMEM_TEAM_INVALID) nvshmem_team_destroy(x);
    if (y != NVSHMEM_TEAM_INVALID) nvshmem_team_destroy(y);
    const std::string problem = fmt::format(
        "nvshmem_team_split_2d(x_range = {}) returned {} (NVSHMEM has at most NVSHMEM_MAX_TEAMS teams at once, 32 "
        "unless set; destroy teams no longer needed or raise it)",
        x_range, rc);
    return {{no_nvshmem_team, problem}, {no_nvshmem_team, problem}};
  }
  return {verify_nvshmem_team(x, x_start, x_stride, x_size, "nvshmem_team_split_2d (x-team)"),
          verify_nvshmem_team(y, y_start, y_stride, y_size, "nvshmem_team_split_2d (y-team)")};
}

//! Collective over the team's PEs.
inline void nvshmem_destroy_team(std::int32_t team) {
  if (team != no_nvshmem_team && team != nvshmem_world_team) nvshmem_team_destroy(team);
}
#else
inline nvshmem_team_result nvshmem_split_strided(std::int32_t, int, int, int, bool, int, int) {
  return {};
}
struct nvshmem_split_2d_result {
  nvshmem_team_result x, y;
};
inline nvshmem_split_2d_result nvshmem_split_2d(std::int32_t, int, int, int, int, int, int, int) {
  return {};
}
inline void nvshmem_destroy_team(std::int32_t) {}
#endif

} // namespace detail
SYMM_END_NAMESPACE
