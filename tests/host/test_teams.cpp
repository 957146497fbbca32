// Teams on the host backend: splits and PE translation against a model computed here, invalid teams, argument and
// agreement errors, team barriers (concurrent, disjoint and overlapping teams), channel reuse after destruction.
#include <symm/symm.hpp>

#include <fmt/ranges.h> // fmt::join

#include <chrono>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "../pe_check.hpp"
#include "catch.hpp"

using symm_test::on_pes;

namespace {

//! The world PEs of a strided team, listed the slow way: every world PE that some k in [0, size) reaches.
std::vector<int> model_members(int world_n, int start, int stride, int size) {
  std::vector<int> out;
  for (int p = 0; p < world_n; ++p) {
    for (int k = 0; k < size; ++k) {
      if (start + k * stride == p) out.push_back(p);
    }
  }
  return out;
}

int index_in(const std::vector<int>& members, int world_pe) {
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (members[i] == world_pe) return static_cast<int>(i);
  }
  return -1;
}

//! Checks every query of `t` against the member list `expected` (world PEs, team order), on PE `me` of `world`.
void check_team(symm::world& world, const symm::team& t, const std::vector<int>& expected, const std::string& label) {
  const int me = world.my_pe(), n = world.n_pes();
  const int my_index = index_in(expected, me);
  auto where = [&] { return fmt::format("{} on PE {} of {}", label, me, n); };
  if (my_index < 0) {
    if (t.valid()) throw std::runtime_error(where() + ": valid() but this PE is not a member");
    PE_REQUIRE_ERROR((void) t.my_pe(), symm::errc::invalid_argument, fmt::format("PE {}", me), "not a member");
    return;
  }
  if (!t.valid()) throw std::runtime_error(where() + ": not valid() on a member");
  PE_REQUIRE_EQ(t.my_pe(), my_index);
  PE_REQUIRE_EQ(t.n_pes(), static_cast<int>(expected.size()));
  auto listed = t.world_pes();
  if (std::vector<int>(listed.begin(), listed.end()) != expected) {
    throw std::runtime_error(fmt::format(
        "{}: world_pes() = {} but the model says {}", where(), fmt::join(listed, ","), fmt::join(expected, ",")));
  }
  auto whole = world.team();
  for (int i = 0; i < t.n_pes(); ++i) {
    PE_REQUIRE_EQ(t.world_pe(i), expected[static_cast<std::size_t>(i)]);
    PE_REQUIRE_EQ(t.translate_pe(i, whole), expected[static_cast<std::size_t>(i)]);
    PE_REQUIRE_EQ(symm::translate_pe(t, i, whole), expected[static_cast<std::size_t>(i)]);
  }
  for (int p = 0; p < n; ++p)
    PE_REQUIRE_EQ(whole.translate_pe(p, t), index_in(expected, p));
  PE_REQUIRE_ERROR((void) t.world_pe(t.n_pes()), symm::errc::invalid_pe, fmt::format("names team PE {}", t.n_pes()));
  PE_REQUIRE_ERROR((void) t.translate_pe(-1, whole), symm::errc::invalid_pe, "names team PE -1");
  // The device view says the same.
  symm::team_ref r = t;
  PE_REQUIRE_EQ(r.my_pe(), my_index);
  PE_REQUIRE_EQ(r.n_pes(), t.n_pes());
  PE_REQUIRE_EQ(r.world_my_pe(), me);
  PE_REQUIRE_EQ(r.world_n_pes(), n);
  for (int i = 0; i < t.n_pes(); ++i)
    PE_REQUIRE_EQ(r.world_pe(i), expected[static_cast<std::size_t>(i)]);
  for (int p = 0; p < n; ++p)
    PE_REQUIRE_EQ(r.team_pe(p), index_in(expected, p));
}

//! Each PE of `t` writes a stamp into its slot on every team PE, then a team barrier, then each checks all slots.
void team_round(const symm::team& t, symm::array<std::uint64_t>& slots, std::uint64_t round, int me) {
  const auto mine = static_cast<std::size_t>(t.my_pe());
  for (int q : t.world_pes())
    symm::remote(slots, q)[mine] = round * 1000 + static_cast<std::uint64_t>(me);
  t.barrier();
  for (int i = 0; i < t.n_pes(); ++i) {
    const std::uint64_t want = round * 1000 + static_cast<std::uint64_t>(t.world_pe(i));
    const std::uint64_t got = slots.local()[static_cast<std::size_t>(i)];
    if (got != want) {
      throw std::runtime_error(
          fmt::format("PE {}: round {}: slot of team PE {} holds {}, want {}", me, round, i, got, want));
    }
  }
  t.sync(); // nobody writes the next round before every team PE checked this one
}

} // namespace

TEST_CASE("the world team is every PE in world order", "[teams]") {
  REQUIRE_NOTHROW(on_pes(3, [](symm::world& world) {
    auto t = world.team();
    check_team(world, t, {0, 1, 2}, "world.team()");
    t.barrier();
    t.sync();
    t.destroy(); // nothing for the world team: the world still works
    PE_REQUIRE(!t.valid());
    PE_REQUIRE(world.team().valid());
    world.barrier();
  }));
}

TEST_CASE("split_strided and translate_pe match the model for every split of 1 to 8 PEs", "[teams]") {
  for (int n = 1; n <= 8; ++n) {
    CAPTURE(n);
    REQUIRE_NOTHROW(on_pes(n, [](symm::world& world) {
      const int n = world.n_pes(), me = world.my_pe();
      auto whole = world.team();
      int splits = 0;
      for (int stride = 1; stride <= n; ++stride) {
        for (int start = 0; start < n; ++start) {
          for (int size = 1; start + (size - 1) * stride < n; ++size) {
            const auto label = fmt::format("split_strided({}, {}, {})", start, stride, size);
            const auto expected = model_members(n, start, stride, size);
            symm::team t = whole.split_strided(start, stride, size);
            check_team(world, t, expected, label);
            ++splits;
            if (!t.valid()) continue;
            // A split of the split (collective over its PEs only): its even-numbered PEs.
            const int half = (t.n_pes() + 1) / 2;
            symm::team evens = t.split_strided(0, 2, half);
            std::vector<int> expected_evens;
            for (int k = 0; k < half; ++k)
              expected_evens.push_back(expected[static_cast<std::size_t>(2 * k)]);
            check_team(world, evens, expected_evens, label + ".split_strided(0, 2, half)");
            for (int i = 0; i < t.n_pes(); ++i) {
              PE_REQUIRE_EQ(t.translate_pe(i, t), i);
              if (evens.valid()) PE_REQUIRE_EQ(t.translate_pe(i, evens), i % 2 == 0 ? i / 2 : -1);
            }
            if (evens.valid()) {
              for (int j = 0; j < evens.n_pes(); ++j)
                PE_REQUIRE_EQ(symm::translate_pe(evens, j, t), 2 * j);
            }
            t.barrier();
          }
        }
      }
      PE_REQUIRE(splits > 0);
      PE_REQUIRE_EQ(world.team().translate_pe(me, world.team()), me);
      world.barrier();
    }));
  }
}

TEST_CASE("split_2d gives rows and columns as OpenSHMEM defines them", "[teams]") {
  for (int n : {1, 2, 3, 4, 6, 7, 8}) {
    CAPTURE(n);
    REQUIRE_NOTHROW(on_pes(n, [](symm::world& world) {
      const int n = world.n_pes(), me = world.my_pe();
      // One array per team kind: a column mate may write its next stamps while this PE still checks its row's.
      symm::array<std::uint64_t> row_slots(world, static_cast<std::size_t>(n));
      symm::array<std::uint64_t> column_slots(world, static_cast<std::size_t>(n));
      for (int x_range : {1, 2, 3, 4, n, n + 3}) {
        const auto label = fmt::format("split_2d({})", x_range);
        auto [row, column] = world.team().split_2d(x_range);
        // The model: a grid of min(x_range, n) columns filled row by row.
        const int columns = std::min(x_range, n);
        std::vector<int> row_pes, column_pes;
        for (int p = 0; p < n; ++p) {
          if (p / columns == me / columns) row_pes.push_back(p);
          if (p % columns == me % columns) column_pes.push_back(p);
        }
        check_team(world, row, row_pes, label + ".x");
        check_team(world, column, column_pes, label + ".y");
        // Row and column share PEs (this one) and sometimes their first PE: their barriers must not mix.
        for (std::uint64_t round = 1; round <= 20; ++round) {
          team_round(row, row_slots, round, me);
          team_round(column, column_slots, round, me);
        }
        world.barrier();
      }
      // A split of a split: the rows of the even PEs.
      auto evens = world.team().split_strided(0, 2, (n + 1) / 2);
      if (evens.valid()) {
        auto [row, column] = evens.split_2d(2);
        std::vector<int> row_pes, column_pes;
        for (int p = 0; p < n; p += 2) {
          if ((p / 2) / 2 == (me / 2) / 2) row_pes.push_back(p);
          if ((p / 2) % 2 == (me / 2) % 2) column_pes.push_back(p);
        }
        check_team(world, row, row_pes, "evens.split_2d(2).x");
        check_team(world, column, column_pes, "evens.split_2d(2).y");
        PE_REQUIRE_EQ(evens.translate_pe(evens.my_pe(), row), row.my_pe());
      }
      world.barrier();
    }));
  }
}

TEST_CASE("a PE outside a team gets an invalid team, and using it is an error naming the PE and the team",
          "[teams]["
          "errors]") {
  REQUIRE_NOTHROW(on_pes(4, [](symm::world& world) {
    const int me = world.my_pe();
    auto evens = world.team().split_strided(0, 2, 2);
    PE_REQUIRE_EQ(evens.valid(), me % 2 == 0);
    if (!evens.valid()) {
      const auto pe = fmt::format("PE {}", me);
      const std::string params = "split_strided(start = 0, stride = 2, size = 2)";
      PE_REQUIRE_ERROR((void) evens.my_pe(), symm::errc::invalid_argument, pe, params, "not a member", "world PEs 0, 2",
                       "valid() == false");
      PE_REQUIRE_ERROR((void) evens.n_pes(), symm::errc::invalid_argument, pe, params);
      PE_REQUIRE_ERROR((void) evens.world_pe(0), symm::errc::invalid_argument, pe, params);
      PE_REQUIRE_ERROR((void) evens.world_pes(), symm::errc::invalid_argument, pe, params);
      PE_REQUIRE_ERROR(evens.barrier(), symm::errc::invalid_argument, "team::barrier()", pe, params);
      PE_REQUIRE_ERROR(evens.sync(), symm::errc::invalid_argument, "team::sync()", pe, params);
      PE_REQUIRE_ERROR((void) evens.split_strided(0, 1, 1), symm::errc::invalid_argument, "team::split_strided", pe);
      PE_REQUIRE_ERROR((void) evens.split_2d(1), symm::errc::invalid_argument, "team::split_2d", pe);
      PE_REQUIRE_ERROR((void) world.team().translate_pe(0, evens), symm::errc::invalid_argument, pe, params);
      PE_REQUIRE_ERROR((void) evens.translate_pe(0, world.team()), symm::errc::invalid_argument, pe, params);
      PE_REQUIRE_ERROR((void) symm::team_ref(evens), symm::errc::invalid_argument, "team::ref()", pe, params);
    } else {
      evens.barrier();
    }
    // Empty, moved-from and destroyed handles are invalid too.
    symm::team empty;
    PE_REQUIRE(!empty.valid());
    PE_REQUIRE_ERROR((void) empty.n_pes(), symm::errc::invalid_argument, "handle is empty");
    auto odds = world.team().split_strided(1, 2, 2);
    symm::team moved = std::move(odds);
    PE_REQUIRE(!odds.valid()); // NOLINT(bugprone-use-after-move): checking the moved-from state on purpose
    PE_REQUIRE_EQ(moved.valid(), me % 2 == 1);
    moved.destroy();
    PE_REQUIRE(!moved.valid());
    PE_REQUIRE_ERROR(moved.barrier(), symm::errc::invalid_argument, "handle is empty");
    world.barrier();
  }));
}

TEST_CASE("a team that outlives its world reports that, and its destruction does nothing", "[teams][errors]") {
  REQUIRE_NOTHROW(symm::launch(2, [] {
    std::optional<symm::team> survivor;
    {
      symm::world world({.backend = symm::backend::host, .heap_size = 1 << 20});
      survivor.emplace(world.team().split_strided(0, 1, 2));
      survivor->barrier();
    }
    PE_REQUIRE_ERROR(survivor->barrier(), symm::errc::finalized, "after its world was finalized");
  }));
}

TEST_CASE("split arguments out of range are refused with their values", "[teams][errors]") {
  REQUIRE_NOTHROW(on_pes(4, [](symm::world& world) {
    auto whole = world.team();
    using symm::errc;
    PE_REQUIRE_ERROR((void) whole.split_strided(0, 0, 2), errc::invalid_argument, "stride = 0",
                     "stride must be at least 1");
    PE_REQUIRE_ERROR((void) whole.split_strided(0, -1, 2), errc::invalid_argument, "stride = -1");
    PE_REQUIRE_ERROR((void) whole.split_strided(0, 1, 0), errc::invalid_argument, "size = 0", "size must be in [1, 4]");
    PE_REQUIRE_ERROR((void) whole.split_strided(0, 1, 5), errc::invalid_argument, "size = 5", "size must be in [1, 4]");
    PE_REQUIRE_ERROR((void) whole.split_strided(-1, 1, 2), errc::invalid_argument, "start = -1", "in [0, 4)");
    PE_REQUIRE_ERROR((void) whole.split_strided(4, 1, 1), errc::invalid_argument, "start = 4", "in [0, 4)");
    PE_REQUIRE_ERROR((void) whole.split_strided(1, 2, 3), errc::invalid_argument, "start + (size - 1) * stride = 5",
                     "PEs are 0 to 3");
    PE_REQUIRE_ERROR((void) whole.split_2d(0), errc::invalid_argument, "x_range = 0", "at least 1");
    // On a sub-team the bounds are the sub-team's.
    auto evens = whole.split_strided(0, 2, 2);
    if (evens.valid()) {
      PE_REQUIRE_ERROR((void) evens.split_strided(0, 1, 3), errc::invalid_argument, "size = 3", "[1, 2]",
                       "world PEs 0, 2");
    }
    // Every PE refused alike, so the teams still agree afterwards.
    auto pair = whole.split_strided(1, 2, 2);
    PE_REQUIRE_EQ(pair.valid(), world.my_pe() % 2 == 1);
    world.barrier();
  }));
}

TEST_CASE("PEs that split with different arguments get a listing of each PE's call", "[teams][errors]") {
  REQUIRE_NOTHROW(on_pes(3, [](symm::world& world) {
    const int me = world.my_pe();
    auto whole = world.team();
    PE_REQUIRE_ERROR((void) whole.split_strided(0, me == 1 ? 2 : 1, 2), symm::errc::allocation_mismatch,
                     "did not ask for the same collective operation", "the world",
                     "PE 0: collective operation #1: split_strided(start = 0, stride = 1, size = 2)",
                     "PE 1: collective operation #1: split_strided(start = 0, stride = 2, size = 2)",
                     "PE 2: collective operation #1: split_strided(start = 0, stride = 1, size = 2)");
    PE_REQUIRE_ERROR((void) whole.split_2d(me == 2 ? 3 : 2), symm::errc::allocation_mismatch,
                     "PE 0: collective operation #2: split_2d(x_range = 2)",
                     "PE 2: collective operation #2: split_2d(x_range = 3)");
    // A split against an allocation: both are collective operations of the world team.
    if (me == 0) {
      PE_REQUIRE_ERROR(symm::array<int>(world, 10), symm::errc::allocation_mismatch,
                       "PE 0: collective heap operation #3: allocate bytes 40",
                       "PE 1: collective operation #3: split_strided(start = 0, stride = 1, size = 3)");
    } else {
      PE_REQUIRE_ERROR((void) whole.split_strided(0, 1, 3), symm::errc::allocation_mismatch,
                       "PE 0: collective heap operation #3: allocate bytes 40",
                       "PE 2: collective operation #3: split_strided(start = 0, stride = 1, size = 3)");
    }
    // On a sub-team, the listing names the team and each PE's number in it.
    auto upper = whole.split_strided(1, 1, 2);
    if (upper.valid()) {
      PE_REQUIRE_ERROR((void) upper.split_strided(me == 1 ? 0 : 1, 1, 1), symm::errc::allocation_mismatch,
                       "world PEs 1, 2", "PE 1 (team PE 0): collective operation #1: split_strided(start = 0",
                       "PE 2 (team PE 1): collective operation #1: split_strided(start = 1");
      auto fine = upper.split_strided(0, 1, 2); // agreement still holds after the error
      PE_REQUIRE(fine.valid());
      fine.barrier();
    }
    // The heap and the world team still work.
    symm::array<int> a(world, 4);
    auto again = whole.split_strided(0, 1, 3);
    check_team(world, again, {0, 1, 2}, "after the errors");
    world.barrier();
  }));
}

TEST_CASE("barriers of two disjoint teams run at once without interfering", "[teams][barrier]") {
  for (int n : {2, 4, 5, 8}) {
    CAPTURE(n);
    REQUIRE_NOTHROW(on_pes(n, [](symm::world& world) {
      const int me = world.my_pe(), n = world.n_pes();
      symm::array<std::uint64_t> slots(world, static_cast<std::size_t>(n));
      auto evens = world.team().split_strided(0, 2, (n + 1) / 2);
      auto odds = world.team().split_strided(1, 2, n / 2);
      const symm::team& mine = me % 2 == 0 ? evens : odds;
      PE_REQUIRE(mine.valid());
      std::mt19937 jitter(static_cast<unsigned>(symm_test::seed() + static_cast<std::uint64_t>(me)));
      for (std::uint64_t round = 1; round <= 200; ++round) {
        // The odd team runs slower, and every PE arrives at its own moment.
        if (me % 2 == 1) std::this_thread::sleep_for(std::chrono::microseconds(100));
        if (jitter() % 4 == 0) std::this_thread::sleep_for(std::chrono::microseconds(jitter() % 50));
        team_round(mine, slots, round, me);
      }
      world.barrier();
    }));
  }
}

TEST_CASE("overlapping teams rooted at the same PE get different channels", "[teams][barrier]") {
  REQUIRE_NOTHROW(on_pes(4, [](symm::world& world) {
    auto [row, column] = world.team().split_2d(2); // rows {0, 1}, {2, 3}; columns {0, 2}, {1, 3}
    PE_REQUIRE(row.state()->channel() != column.state()->channel());
    PE_REQUIRE(row.state()->channel() != 0);
    PE_REQUIRE(column.state()->channel() != 0);
    symm::array<std::uint64_t> row_slots(world, 4), column_slots(world, 4);
    for (std::uint64_t round = 1; round <= 100; ++round) {
      team_round(row, row_slots, round, world.my_pe());
      team_round(column, column_slots, round, world.my_pe());
    }
    world.barrier();
  }));
}

TEST_CASE("team channels: a set over words of 64, and one SYMM_MAX_TEAMS per job", "[teams]") {
  using symm::detail::channel_set;
  constexpr auto full_but = [](int left_out) {
    channel_set set = symm::detail::world_channel_only();
    for (int c = 1; c <= symm::max_teams; ++c)
      if (c != left_out) set.insert(c);
    return set;
  };
  STATIC_REQUIRE(full_but(-1).first_free_team_channel() == -1);
  STATIC_REQUIRE(full_but(-1).size() == symm::max_teams + 1);
  STATIC_REQUIRE(channel_set{}.first_free_team_channel() == 1); // never channel 0, the world's
  for (int c : {1, 63, 64, 65, 127, symm::max_teams}) {
    if (c > symm::max_teams) continue;
    CAPTURE(c);
    CHECK(full_but(c).first_free_team_channel() == c);
    channel_set set;
    set.insert(c);
    CHECK((set.contains(c) && !set.contains(c - 1) && set.size() == 1));
    set |= full_but(c);
    CHECK(set.first_free_team_channel() == -1);
    set.erase(c);
    CHECK(set.first_free_team_channel() == c);
  }
  // Every PE gathers every PE's value; any difference is an error on every PE, naming both values.
  using symm::detail::max_teams_mismatch;
  CHECK(max_teams_mismatch({128, 128, 128}, 1, 128).empty());
  CHECK_THAT(max_teams_mismatch({128, 128, 256}, 0, 128),
             symm_test::contains_substring("PE 0: this PE's program was built with SYMM_MAX_TEAMS = 128 and PE 2's "
                                           "with 256"));
  CHECK_THAT(max_teams_mismatch({128, 128, 256}, 2, 256),
             symm_test::contains_substring("SYMM_MAX_TEAMS = 256 and PE "
                                           "0's with 128"));
}

TEST_CASE("destroying a team frees its channel; symm::max_teams teams at once are the limit", "[teams]") {
  REQUIRE_NOTHROW(on_pes(2, [](symm::world& world) {
    auto whole = world.team();
    for (int i = 0; i < 200; ++i) {
      auto t = whole.split_strided(i % 2, 1, 1 + (i + 1) % 2); // {0, 1} or {1}: the teams differ from round to round
      if (t.valid()) t.barrier();
    }
    std::vector<symm::team> held;
    for (int i = 0; i < symm::max_teams; ++i)
      held.push_back(whole.split_strided(0, 1, 2));
    for (auto& t : held)
      t.barrier();
    const std::string full = fmt::format("{} teams", symm::max_teams);
    PE_REQUIRE_ERROR((void) whole.split_strided(0, 1, 2), symm::errc::unsupported, "no host barrier channel is free",
                     "PE 0: " + full, "PE 1: " + full, "SYMM_MAX_TEAMS");
    held.pop_back(); // collective destruction frees one channel
    held.push_back(whole.split_strided(0, 1, 2));
    held.back().barrier();
    // Every channel is free again once the teams are gone.
    held.clear();
    for (int i = 0; i < 200; ++i) {
      auto t = whole.split_strided(0, 1, 2);
      t.sync();
    }
    world.barrier();
  }));
}
