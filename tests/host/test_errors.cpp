// Bad input on the host backend: each error names the PE and the values, and nothing hangs.
#include "../pe_check.hpp"
#include "catch.hpp"

#include <symm/symm.hpp>

#include <array>
#include <vector>

using symm_test::on_pes;

TEST_CASE("a PE out of range is refused with the PE and the range", "[errors]") {
  REQUIRE_NOTHROW(on_pes(3, [](symm::world& world) {
    symm::array<int> a(world, 4);
    PE_REQUIRE_ERROR((void)symm::remote(a, 3), symm::errc::invalid_pe, "remote(obj, 3)", "PEs 0 to 2");
    PE_REQUIRE_ERROR((void)symm::remote(a, -1), symm::errc::invalid_pe, "names PE -1", "n_pes = 3");
    world.barrier();
  }));
}

TEST_CASE("extents that differ are refused with both sizes", "[errors]") {
  REQUIRE_NOTHROW(on_pes(2, [](symm::world& world) {
    symm::array<int> a(world, 8);
    std::vector<int> seven(7);
    PE_REQUIRE_ERROR(symm::remote(a, 0) = seven, symm::errc::extent_mismatch, "8 elements", "has 7");
    PE_REQUIRE_ERROR(symm::remote(a, 1).get(seven), symm::errc::extent_mismatch, "PE 1", "8 elements");
    PE_REQUIRE_ERROR((void)symm::remote(a, 0)[8], symm::errc::invalid_argument, "[8]", "8 elements");
    PE_REQUIRE_ERROR((void)symm::remote(a, 0).subspan(5, 4), symm::errc::invalid_argument, "[5, 9)");
    world.barrier();
  }));
}

TEST_CASE("a collective allocation with different sizes lists each PE's size", "[errors][heap]") {
  REQUIRE_NOTHROW(on_pes(3, [](symm::world& world) {
    std::size_t count = world.my_pe() == 1 ? 200 : 100;
    PE_REQUIRE_ERROR(symm::array<int>(world, count), symm::errc::allocation_mismatch, "PE 0: collective heap operation",
                     "allocate bytes 400", "PE 1: collective heap operation #1: allocate bytes 800");
    // The heap is still usable afterwards, on every PE alike.
    symm::array<int> fine(world, 10);
    symm::remote(fine, 0)[static_cast<std::size_t>(world.my_pe())] = 1;
    world.barrier();
  }));
}

TEST_CASE("heap exhaustion says what was asked, what is free and the total", "[errors][heap]") {
  REQUIRE_NOTHROW(on_pes(2, [](symm::world& world) {
    symm::array<char> most(world, 12 << 20);
    PE_REQUIRE_ERROR(symm::array<double>(world, 1 << 20), symm::errc::heap_exhausted, "needs 8388608 bytes",
                     "largest free block is", "of 16777216 bytes in use", "SYMM_HEAP_SIZE");
    world.barrier();
  }));
}

TEST_CASE("use after the world is finalized is an error, not a crash", "[errors]") {
  REQUIRE_NOTHROW(symm::launch(2, [] {
    std::optional<symm::array<int>> survivor;
    {
      symm::world world({.backend = symm::backend::host, .heap_size = 1 << 20});
      survivor.emplace(world, 16);
    }
    PE_REQUIRE_ERROR((void)survivor->local(), symm::errc::finalized, "after its world was finalized");
  }));
}

TEST_CASE("a PE that throws while others wait in a barrier ends the job with its name", "[errors][faults]") {
  auto body = [](symm::world& world) {
    symm::array<int> a(world, 4);
    if (world.my_pe() == 1) throw std::runtime_error("PE 1 gives up");
    world.barrier();
  };
  symm::world_options host{.backend = symm::backend::host, .heap_size = 1 << 20};
  auto start = std::chrono::steady_clock::now();
  // Threads: the others see PE 1 marked failed and raise peer_failed; launch rethrows PE 1's own error first.
  REQUIRE_THROWS_WITH(symm::launch(3, body, {.mode = symm::launch_mode::threads, .world = host}),
                      symm_test::contains_substring("PE 1 gives up"));
  REQUIRE_THROWS_WITH(symm::launch(3, body, {.mode = symm::launch_mode::processes, .world = host}),
                      symm_test::contains_substring("PE 1 (pid"));
  REQUIRE(std::chrono::steady_clock::now() - start < std::chrono::seconds(4));
}
