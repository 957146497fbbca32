// symm/detail/collective_tuning.hpp: what the environment asks of the stream collectives' plan
// (detail/collective_plan.hpp), read once when a world starts and checked to be the same on every PE, since every PE
// must launch the same kernel shape.
#pragma once

#include <symm/detail/config.hpp>
#include <symm/detail/env.hpp>
#include <symm/error.hpp>

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

SYMM_BEGIN_NAMESPACE
namespace detail {

//! Blocks a stream collective's kernel may have: one channel of symm's collective flags each.
inline constexpr unsigned max_collective_blocks = 128;

//! How many blocks of the stream kernel every PE can keep resident at once: one per SM of the smallest GPU (the
//! kernel's 512 threads may use up to 128 registers each, a whole SM's register file), shared among the most PEs that
//! share one GPU. The same on every PE (both numbers are gathered from all of them).
constexpr unsigned collective_block_limit(unsigned min_sm_count, unsigned max_pes_per_gpu) noexcept {
  if (max_pes_per_gpu < 1) max_pes_per_gpu = 1;
  const unsigned blocks = min_sm_count / max_pes_per_gpu;
  return blocks < 1 ? 1 : blocks > max_collective_blocks ? max_collective_blocks : blocks;
}

enum class algorithm_choice : std::uint8_t { automatic = 0, one_shot = 1, two_shot = 2 };

//! SYMM_COLLECTIVE_ALGORITHM=auto|one_shot|two_shot, SYMM_COLLECTIVE_BLOCKS=N (1 to max_collective_blocks; unset or
//! 0: chosen), SYMM_DEBUG=1 (the team's first PE prints each plan the first time the world uses it).
struct collective_tuning {
  algorithm_choice algorithm = algorithm_choice::automatic;
  std::uint32_t blocks = 0;
  bool debug = false;

  //! What every PE must agree on (not `debug`): the kernel shape follows from it.
  [[nodiscard]] constexpr std::uint32_t agreed() const noexcept {
    return static_cast<std::uint32_t>(algorithm) << 16 | blocks;
  }
};

//! Parses the variables; a refused value leaves its message in `problem` (naming PE `pe`) rather than throwing, so
//! that world creation can tell every PE before any of them leaves (one PE throwing alone would leave the others
//! waiting for it).
inline collective_tuning collective_tuning_from_env(int pe, std::string& problem) {
  collective_tuning tuning;
  if (auto text = get_env("SYMM_COLLECTIVE_ALGORITHM"); text && !text->empty()) {
    if (*text == "auto") tuning.algorithm = algorithm_choice::automatic;
    else if (*text == "one_shot") tuning.algorithm = algorithm_choice::one_shot;
    else if (*text == "two_shot") tuning.algorithm = algorithm_choice::two_shot;
    else problem = fmt::format("PE {}: SYMM_COLLECTIVE_ALGORITHM={} is not auto, one_shot or two_shot", pe, *text);
  }
  if (auto text = get_env("SYMM_COLLECTIVE_BLOCKS"); text && !text->empty()) {
    unsigned blocks = 0;
    const auto [end, error] = std::from_chars(text->data(), text->data() + text->size(), blocks);
    if (error != std::errc{} || end != text->data() + text->size() || blocks > max_collective_blocks) {
      problem = fmt::format("PE {}: SYMM_COLLECTIVE_BLOCKS={} is not a block count from 0 (chosen) to {}", pe, *text,
                            max_collective_blocks);
    } else {
      tuning.blocks = blocks;
    }
  }
  if (auto text = get_env("SYMM_DEBUG"); text && !text->empty() && *text != "0") tuning.debug = true;
  return tuning;
}

//! Told by every PE for an unreadable variable instead of its agreed() value.
inline constexpr std::uint32_t refused_tuning = 0xffffffffu;

//! The error of PE `me` when the PEs' tunings (`agreed()` of each, or refused_tuning) differ, else empty.
inline std::string collective_tuning_mismatch(const std::vector<std::uint32_t>& all, int me) {
  for (std::size_t pe = 0; pe < all.size(); ++pe) {
    if (all[pe] == refused_tuning && static_cast<int>(pe) != me) {
      return fmt::format("PE {}: PE {} refused its SYMM_COLLECTIVE_ALGORITHM or SYMM_COLLECTIVE_BLOCKS (its own error "
                         "says which); every PE stops",
                         me, pe);
    }
  }
  for (std::size_t pe = 0; pe < all.size(); ++pe) {
    if (all[pe] != all[static_cast<std::size_t>(me)]) {
      return fmt::format("PE {}: SYMM_COLLECTIVE_ALGORITHM / SYMM_COLLECTIVE_BLOCKS differ between this PE and PE {}: "
                         "every PE launches the same collective kernels, so set them alike on every PE (or not at all)",
                         me, pe);
    }
  }
  return {};
}

} // namespace detail
SYMM_END_NAMESPACE
