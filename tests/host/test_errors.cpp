// Bad input on the host backend: each error names the PE and the values, and nothing hangs.
#include <symm/symm.hpp>

#include <sys/stat.h>

#include <array>
#include <chrono>
#include <csignal>
#include <functional>
#include <thread>
#include <vector>

#include "../pe_check.hpp"
#include "catch.hpp"

using symm_test::on_pes;

TEST_CASE("a PE out of range is refused with the PE and the range", "[errors]") {
  REQUIRE_NOTHROW(on_pes(3, [](symm::world& world) {
    symm::array<int> a(world, 4);
    PE_REQUIRE_ERROR((void) symm::remote(a, 3), symm::errc::invalid_pe, "remote(obj, 3)", "PEs 0 to 2");
    PE_REQUIRE_ERROR((void) symm::remote(a, -1), symm::errc::invalid_pe, "names PE -1", "n_pes = 3");
    world.barrier();
  }));
}

TEST_CASE("extents that differ are refused with both sizes", "[errors]") {
  REQUIRE_NOTHROW(on_pes(2, [](symm::world& world) {
    symm::array<int> a(world, 8);
    std::vector<int> seven(7);
    PE_REQUIRE_ERROR(symm::remote(a, 0) = seven, symm::errc::extent_mismatch, "8 elements", "has 7");
    PE_REQUIRE_ERROR(symm::remote(a, 1).get(seven), symm::errc::extent_mismatch, "PE 1", "8 elements");
    PE_REQUIRE_ERROR((void) symm::remote(a, 0)[8], symm::errc::invalid_argument, "[8]", "8 elements");
    PE_REQUIRE_ERROR((void) symm::remote(a, 0).subspan(5, 4), symm::errc::invalid_argument, "[5, 9)");
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
    PE_REQUIRE_ERROR((void) survivor->local(), symm::errc::finalized, "after its world was finalized");
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

TEST_CASE("a PE killed by SIGKILL ends the job within 2 s, naming the PE and the signal", "[errors][faults]") {
  auto body = [](symm::world& world) {
    symm::array<int> a(world, 4);
    world.barrier();
    if (world.my_pe() == 2) ::raise(SIGKILL);
    world.barrier(); // the others wait here for a PE that is gone
  };
  auto start = std::chrono::steady_clock::now();
  REQUIRE_THROWS_WITH(symm::launch(4, body, {.world = {.backend = symm::backend::host, .heap_size = 1 << 20}}),
                      symm_test::contains_substring("PE 2") && symm_test::contains_substring("killed by signal 9"));
  REQUIRE(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
}

TEST_CASE("a PE that finalizes while the others still wait ends their wait with an error", "[errors][faults]") {
  auto body = [](symm::world& world) {
    if (world.my_pe() == 0) return; // leaves without the barrier the others call
    world.barrier();
  };
  symm::world_options host{.backend = symm::backend::host, .heap_size = 1 << 20};
  auto start = std::chrono::steady_clock::now();
  // PE 0's finalize barrier pairs with the others' barrier (a barrier is a barrier); then PE 0 is gone and the
  // others finish too. What must not happen is a hang: the job ends, one way or the other, quickly.
  try {
    symm::launch(3, body, {.mode = symm::launch_mode::processes, .world = host});
  } catch (const symm::error& e) {
    REQUIRE(e.code() == symm::errc::peer_failed);
  }
  REQUIRE(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
}

TEST_CASE("a process with the wrong job token is refused, and PE 0 names the PE that never came",
          "[errors]["
          "security]") {
  std::string dir = fmt::format("/tmp/symm-{}/token-test-{}", ::getuid(), ::getpid());
  symm::detail::ensure_private_dir(fmt::format("/tmp/symm-{}", ::getuid()));
  std::string pe0_error, pe1_error;
  auto run_pe = [&](int pe, std::string token, std::string& error_text) {
    symm::detail::launched_job = symm::detail::job_info{pe, 2, pe, 2, dir, std::move(token), "test"};
    try {
      symm::world world(
          {.backend = symm::backend::host, .heap_size = 1 << 20, .bootstrap_timeout = std::chrono::milliseconds(1500)});
    } catch (const symm::error& e) {
      error_text = e.what();
    }
    symm::detail::launched_job.reset();
  };
  std::thread pe0(run_pe, 0, "0123456789abcdef0123456789abcdef", std::ref(pe0_error));
  std::thread pe1(run_pe, 1, "ffffffffffffffffffffffffffffffff", std::ref(pe1_error));
  pe0.join();
  pe1.join();
  ::rmdir(dir.c_str());
  CHECK_THAT(pe1_error, symm_test::contains_substring("PE 1 was refused") && symm_test::contains_substring("wrong job "
                                                                                                           "token"));
  CHECK_THAT(pe0_error, symm_test::contains_substring("these never came: PE 1"));
  struct stat st {};
  REQUIRE(::stat(fmt::format("/tmp/symm-{}", ::getuid()).c_str(), &st) == 0);
  REQUIRE((st.st_mode & 077) == 0); // the rendezvous directory is private to the user
}
