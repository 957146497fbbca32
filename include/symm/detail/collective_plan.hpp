// symm/detail/collective_plan.hpp: how a collective on a stream runs — its algorithm and its kernel's shape — chosen in
// one place, as a pure function of the call (kind, sizes, in place), of what the world knows of its GPUs (how many
// blocks every PE can keep resident at once, the weakest link between the team's GPUs: detail/topology.hpp) and of the
// environment's overrides, so that every PE chooses alike and the choice is tested on the CPU
// (tests/host/test_collectives.cpp).
#pragma once

#include <symm/detail/collective_common.hpp>
#include <symm/detail/collective_tuning.hpp>
#include <symm/detail/config.hpp>
#include <symm/detail/topology.hpp>

#include <fmt/core.h>

#include <algorithm>
#include <cstddef>
#include <string>

SYMM_BEGIN_NAMESPACE
namespace detail {

//! Threads per block of the stream collectives' kernel.
inline constexpr unsigned collective_stream_threads = 512;
//! Bytes of dst plus src per block of the stream kernel, before the caps, and the most blocks it takes by default.
//! Measured on an H100 (2 PEs under MPS, fcollect, alltoall and allreduce of 64 KiB to 256 MiB against bench_raw's
//! best; docs/benchmarks-h100): at most 16 blocks of 256 KiB each were 1.01-1.59x raw's time; 32 blocks 0.90-1.23x;
//! 64 blocks 0.88-1.21x and the best from 4 MiB up, while 32 did 2-9 % better at 64 KiB, 512 KiB and 2 MiB. 4 KiB per
//! block gives 24 (fcollect) to 32 (alltoall, allreduce) blocks at 64 KiB of dst and 64 from 256 KiB of dst + src up.
inline constexpr std::size_t collective_bytes_per_block = std::size_t{4} << 10;
inline constexpr unsigned collective_default_max_blocks = 64;

struct collective_plan {
  bool two_shot = false; //!< the two-shot algorithm (allreduce, broadcast, reduce), else one-shot or direct
  unsigned blocks = 1;   //!< blocks of the stream kernel: one channel of symm's collective flags each
  unsigned threads = collective_stream_threads;

  friend constexpr bool operator==(const collective_plan&, const collective_plan&) = default;
};

//! Whether the kind has a two-shot algorithm at all.
constexpr bool has_two_shot(collective_id c) noexcept {
  return c == collective_id::allreduce || c == collective_id::broadcast || c == collective_id::reduce;
}

//! The most bytes of dst per PE that take the one-shot algorithm on a team whose weakest link is `links.weakest`.
//! Provisional until measured on a multi-GPU machine (only one GPU has been lent so far): on one GPU, over NVLink and
//! where the link is unknown, collective_one_shot_max_bytes, as measured on one GPU; with a PCIe pair (or `none`,
//! which no team reaching this kernel has: such peers are not mapped), half of it, since PCIe peer-to-peer moves
//! several times less than NVLink, so the one-shot algorithm's n_pes-fold reads cost bandwidth sooner than the
//! two-shot's extra round trip costs latency.
constexpr std::size_t one_shot_max_bytes(team_links links) noexcept {
  const bool bandwidth_bound = links.weakest == link_class::pcie || links.weakest == link_class::none;
  return bandwidth_bound ? collective_one_shot_max_bytes / 2 : collective_one_shot_max_bytes;
}

//! The plan of a stream collective whose dst holds `dst_bytes` and src `src_bytes` (`in_place`: the same array), when
//! every PE can keep `resident_blocks` blocks of the kernel running at once (detail::collective_block_limit) and the
//! team's PEs reach each other by `links` (topology::links_of). Every block of a PE waits for the same block of its
//! peers, so no PE may launch more than can be resident beside the other PEs on its GPU; within that, one block per
//! 4 KiB, at most collective_default_max_blocks unless SYMM_COLLECTIVE_BLOCKS says otherwise. The algorithm: two-shot
//! above one_shot_max_bytes(links) per PE (and always for an allreduce in place, whose one-shot form would overwrite
//! data that peers still read), unless SYMM_COLLECTIVE_ALGORITHM says otherwise where that is safe. Every PE has the
//! same topology, so every PE of the team plans alike.
constexpr collective_plan plan_stream_collective(
    collective_id c, std::size_t dst_bytes, std::size_t src_bytes, bool in_place, unsigned resident_blocks,
    team_links links, const collective_tuning& tuning = {}) noexcept {
  collective_plan plan;
  plan.two_shot = use_two_shot(c, dst_bytes, in_place) || (has_two_shot(c) && dst_bytes > one_shot_max_bytes(links));
  const bool must_two_shot = in_place && c == collective_id::allreduce;
  if (tuning.algorithm == algorithm_choice::one_shot && !must_two_shot) plan.two_shot = false;
  if (tuning.algorithm == algorithm_choice::two_shot && has_two_shot(c)) plan.two_shot = true;

  const std::size_t by_size = (dst_bytes + src_bytes + collective_bytes_per_block - 1) / collective_bytes_per_block;
  const std::size_t asked =
      tuning.blocks != 0 ? tuning.blocks : std::min<std::size_t>(by_size, collective_default_max_blocks);
  const unsigned limit = std::clamp(resident_blocks, 1u, max_collective_blocks);
  plan.blocks = static_cast<unsigned>(std::clamp<std::size_t>(asked, 1, limit));
  return plan;
}

//! The plan in words, for SYMM_DEBUG, with the team's weakest link.
inline std::string describe_plan(collective_id c, const collective_plan& plan, std::size_t dst_bytes, int n_pes,
                                 team_links links) {
  const bool two_shot_kind = has_two_shot(c);
  return fmt::format(
      "{} on a stream, {} bytes of dst on {} PEs ({}): {}{} blocks x {} threads", collective_name(c), dst_bytes, n_pes,
      links.one_gpu() ? "one GPU" : fmt::format("weakest link {}", to_string(links.weakest)),
      two_shot_kind ? (plan.two_shot ? "two-shot, " : "one-shot, ") : "", plan.blocks, plan.threads);
}

} // namespace detail
SYMM_END_NAMESPACE
