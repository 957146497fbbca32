// Bad input on the host backend: each error names the PE and the values, and nothing hangs.
#include <symm/detail/failure_monitor.hpp>
#include <symm/detail/wait_trap_record.hpp>
#include <symm/symm.hpp>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
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
    PE_REQUIRE_ERROR(symm::remote(a, 1) = seven, symm::errc::extent_mismatch,
                     "(extents: remote dynamic, local dynamic)");
    // symm/format.hpp on views of a live world: the same text on every PE, the heap offset included.
    PE_REQUIRE_EQ(fmt::format("{}", a), fmt::format("array<dynamic>{{8 elements, heap offset {}}}", a.offset()));
    PE_REQUIRE_EQ(fmt::format("{}", a.ref()),
                  fmt::format("array_ref<dynamic>{{8 elements, heap offset {}}}", a.offset()));
    PE_REQUIRE_EQ(fmt::format("{}", symm::remote(a, 1)), std::string("pe_span<dynamic>{PE 1, 8 elements}"));
    world.barrier();
  }));
}

// Messages that name an extent spell a dynamic one `dynamic` (detail::extent_name), never 18446744073709551615. The
// views are made by hand: each check throws before the (absent) world is used.
TEST_CASE("a dynamic extent is named `dynamic` in error messages", "[errors][format]") {
  const auto message_of = [](auto&& body, symm::errc code) -> std::string {
    try {
      body();
    } catch (const symm::error& e) {
      CHECK(e.code() == code);
      CHECK(std::string(e.what()).find("18446744073709551615") == std::string::npos);
      return e.message();
    }
    return "nothing thrown";
  };
  int elements[8] = {};
  const symm::pe_span<int> dynamic_remote(elements, 8, 1, nullptr);
  const symm::pe_span<int, 8> static_remote(elements, 8, 1, nullptr);
  std::vector<int> seven(7);
  std::array<int, 7> seven_static{};
  const auto mismatch = symm::errc::extent_mismatch;
  CHECK(message_of([&] { dynamic_remote = seven; }, mismatch) ==
        "put: the remote side on PE 1 has 8 elements but the "
        "local side has 7 (extents: remote dynamic, local "
        "dynamic)");
  CHECK(message_of([&] { static_remote = seven; }, mismatch) ==
        "put: the remote side on PE 1 has 8 elements but the "
        "local side has 7 (extents: remote 8, local dynamic)");
  CHECK(message_of([&] { dynamic_remote.get(seven_static); }, mismatch) ==
        "get: the remote side on PE 1 has 8 elements but the local side has 7 (extents: remote dynamic, local 7)");
  CHECK(message_of([&] { (void) symm::put_nbi(dynamic_remote, seven_static); }, mismatch) ==
        "put_nbi: the remote side on PE 1 has 8 elements but the local side has 7 (extents: remote dynamic, local 7)");

  // A count of dynamic_extent: subspan's "to the end" (checked as such), out of range anywhere else.
  const auto bad = symm::errc::invalid_argument;
  CHECK(dynamic_remote.subspan(3).size() == 5);
  CHECK(dynamic_remote.subspan(8).size() == 0);
  CHECK(message_of([&] { (void) dynamic_remote.subspan(9); }, bad) ==
        "remote(obj, 1).subspan: offset 9, count "
        "dynamic: outside the 8 elements");
  CHECK(message_of([&] { (void) static_remote.last(symm::dynamic_extent); }, bad) ==
        "remote(obj, 1).last: offset 0, count dynamic: outside the 8 elements");
  alignas(16) std::byte heap[64] = {};
  std::byte* peers[1] = {heap};
  const symm::array_ref<int> whole(nullptr, peers, peers, 0, 8, 0, 1);
  CHECK(message_of([&] { (void) whole.subarray(2, symm::dynamic_extent); }, bad) ==
        "PE 0: subarray(2, dynamic): the count is symm::dynamic_extent, not a number of elements; the symmetric array "
        "has 8 elements");
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

TEST_CASE("array_options: a bad alignment names the PE and the value; PEs that disagree get each one's request",
          "[errors][heap][options]") {
  REQUIRE_NOTHROW(on_pes(3, [](symm::world& world) {
    const int me = world.my_pe();
    const std::string pe = fmt::format("PE {}:", me);
    PE_REQUIRE_ERROR(symm::array<int>(world, 10, {.alignment = 0}), symm::errc::invalid_argument, pe,
                     "array_options::alignment = 0 is not a power of two");
    PE_REQUIRE_ERROR(symm::array<int>(world, 10, {.alignment = 384}), symm::errc::invalid_argument, pe,
                     "alignment = 384 is not a power of two");
    PE_REQUIRE_ERROR(symm::scalar<int>(world, {.alignment = 3}), symm::errc::invalid_argument, pe, "alignment = 3");
    PE_REQUIRE_ERROR((symm::array<int, 4>(world, {.alignment = std::size_t{1} << 62})), symm::errc::invalid_argument,
                     pe, "alignment = 4611686018427387904", "base is aligned to");
    // Those were refused before the agreement; the first collective allocation follows.
    PE_REQUIRE_ERROR(symm::array<int>(world, 10, {.alignment = me == 1 ? std::size_t{4096} : std::size_t{256}}),
                     symm::errc::allocation_mismatch, "the PEs did not ask for the same collective allocation",
                     "PE 0: collective heap operation #1: allocate bytes 40, alignment 256\n",
                     "PE 1: collective heap operation #1: allocate bytes 40, alignment 4096\n",
                     "PE 2: collective heap operation #1: allocate bytes 40, alignment 256");
    PE_REQUIRE_ERROR(symm::array<int>(world, 10, {.zeroed = me == 2}), symm::errc::allocation_mismatch,
                     "PE 1: collective heap operation #2: allocate bytes 40, alignment 256\n",
                     "PE 2: collective heap operation #2: allocate bytes 40, alignment 256, zero-filled");
    // The heap is still usable afterwards, on every PE alike.
    symm::array<int> fine(world, 10, {.zeroed = true, .alignment = 1024});
    PE_REQUIRE_EQ(fine.offset() % 1024, 0u);
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

TEST_CASE("sizes that would wrap are refused before anything is allocated, naming the value", "[errors][heap][sizes]") {
  REQUIRE_NOTHROW(on_pes(2, [](symm::world& world) {
    const std::size_t in_use = world.state()->allocator().bytes_in_use();
    // The case a user meets: a count computed as an int that came out negative.
    int count = world.n_pes() - 3;
    PE_REQUIRE_ERROR(symm::array<double>(world, count), symm::errc::invalid_argument, "-1 elements",
                     "cannot be negative", "18446744073709551615 elements");
    PE_REQUIRE_ERROR(symm::array<int>(world, std::int64_t{-5}), symm::errc::invalid_argument, "-5 elements");
    PE_REQUIRE_ERROR(symm::signal_array(world, -2), symm::errc::invalid_argument, "-2 elements");
    // count * sizeof(T) beyond 2^64: 2^61 + 1 doubles would have been 8 bytes.
    PE_REQUIRE_ERROR(symm::array<double>(world, (std::size_t{1} << 61) + 1), symm::errc::heap_exhausted,
                     "2305843009213693953 elements of 8 bytes", "at most 2305843009213693951 elements");
    // SIZE_MAX bytes: fits a size_t, but the allocator's round-up would have wrapped it to 0.
    PE_REQUIRE_ERROR(symm::array<char>(world, SIZE_MAX), symm::errc::heap_exhausted, "needs 18446744073709551615 bytes",
                     "largest free block");
    PE_REQUIRE_ERROR(symm::array<char>(world, (std::size_t{16} << 20) + 1), symm::errc::heap_exhausted,
                     "needs 16777217 bytes");
    PE_REQUIRE_EQ(world.state()->allocator().bytes_in_use(), in_use); // nothing was allocated by any of them
    // The heap is untouched: two arrays get different offsets, and a write to one never lands in the other.
    symm::array<double> x(world, 4), y(world, 4);
    PE_REQUIRE(x.offset() != y.offset());
    std::ranges::fill(y.local(), 7.0);
    world.barrier();
    symm::remote(x, 1 - world.my_pe())[0] = 1.0;
    world.barrier();
    PE_REQUIRE_EQ(x.local()[0], 1.0);
    PE_REQUIRE_EQ(y.local()[0], 7.0);
    world.barrier();
  }));
}

TEST_CASE("a PE number of a wider type is checked as given, never cut to another PE", "[errors][sizes]") {
  REQUIRE_NOTHROW(on_pes(2, [](symm::world& world) {
    symm::array<int> a(world, 4);
    symm::scalar<int> s(world);
    symm::signal sig(world);
    const std::size_t wide = (std::size_t{1} << 32) + 1; // as an int: 1, a valid PE
    PE_REQUIRE_ERROR((void) symm::remote(a, wide), symm::errc::invalid_pe, "remote(obj, 4294967297)",
                     "names PE 4294967297", "PEs 0 to 1");
    PE_REQUIRE_ERROR((void) symm::remote(s, wide), symm::errc::invalid_pe, "names PE 4294967297");
    PE_REQUIRE_ERROR((void) symm::remote(sig, wide), symm::errc::invalid_pe, "names PE 4294967297");
    PE_REQUIRE_ERROR((void) symm::remote(a, std::int64_t{-4294967295}), symm::errc::invalid_pe, "names PE -4294967295");
    PE_REQUIRE_ERROR((void) world.team().world_pe(wide), symm::errc::invalid_pe, "team PE 4294967297");
    PE_REQUIRE_ERROR((void) symm::translate_pe(world.team(), wide, world.team()), symm::errc::invalid_pe, "4294967297");
    // In range, any integer type names the same PE as the int would.
    const std::size_t other = static_cast<std::size_t>(1 - world.my_pe());
    symm::remote(a, other)[0] = 40 + world.my_pe();
    symm::remote(a, static_cast<unsigned char>(other))[1] = 50 + world.my_pe();
    PE_REQUIRE_EQ(world.team().world_pe(std::uint64_t{1}), 1);
    world.barrier();
    PE_REQUIRE_EQ(a.local()[0], 40 + static_cast<int>(other));
    PE_REQUIRE_EQ(a.local()[1], 50 + static_cast<int>(other));
    world.barrier();
  }));
}

TEST_CASE("heap sizes and timeouts from the environment that do not fit are named, not wrapped", "[errors][sizes]") {
  using symm_test::scoped_env;
  {
    scoped_env huge({{"SYMM_HEAP_SIZE", "99999999999999G"}});
    REQUIRE_THROWS_WITH(symm::detail::heap_size_from_env(1),
                        symm_test::contains_substring("SYMM_HEAP_SIZE='"
                                                      "99999999999999G' is more "
                                                      "than the largest heap"));
  }
  {
    scoped_env huge({{"SYMM_HEAP_SIZE", "99999999999999999999999"}});
    REQUIRE_THROWS_WITH(symm::detail::heap_size_from_env(1), symm_test::contains_substring("is more than the largest"));
  }
  {
    scoped_env fine({{"SYMM_HEAP_SIZE", "64G"}});
    REQUIRE(symm::detail::heap_size_from_env(1) == std::size_t{64} << 30);
  }
  {
    scoped_env garbage({{"SYMM_HEAP_SIZE", "12Q"}});
    REQUIRE_THROWS_WITH(symm::detail::heap_size_from_env(1), symm_test::contains_substring("is not a size"));
  }
  {
    scoped_env long_wait({{"SYMM_BOOTSTRAP_TIMEOUT_MS", "99999999999"}}); // 3.2 years: too long to be useful, but a
                                                                          // time
    REQUIRE(symm::detail::bootstrap_timeout_from_env() == std::chrono::milliseconds(99999999999));
    scoped_env too_long({{"SYMM_BOOTSTRAP_TIMEOUT_MS", "99999999999999999999"}});
    REQUIRE_THROWS_WITH(symm::detail::bootstrap_timeout_from_env(),
                        symm_test::contains_substring("SYMM_BOOTSTRAP_TIMEOUT_MS='99999999999999999999' is too large"));
    scoped_env past_clock({{"SYMM_BOOTSTRAP_TIMEOUT_MS", "9000000000000000"}});
    REQUIRE_THROWS_WITH(symm::detail::bootstrap_timeout_from_env(), symm_test::contains_substring("at most"));
  }
  {
    scoped_env wide_rank({{"SYMM_N_PES", "99999999999"}});
    REQUIRE_THROWS_WITH(symm::detail::env_int("SYMM_N_PES"),
                        symm_test::contains_substring("SYMM_N_PES='99999999999' is too large: at most 2147483647"));
  }
  REQUIRE_THROWS_WITH(
      symm::launch(1, [](symm::world&) {},
                   {.mode = symm::launch_mode::threads,
                    .world = {.backend = symm::backend::host, .heap_size = std::size_t{1} << 50}}),
      symm_test::contains_substring("heap_size = 1125899906842624 bytes is more than the largest heap"));
}

TEST_CASE("a PE that throws and catches inside a scope of symmetric objects stays in step with the others",
          "[errors][unwinding]") {
  for (int n : {2, 4}) {
    CAPTURE(n);
    REQUIRE_NOTHROW(on_pes(n, [](symm::world& world) {
      const int me = world.my_pe(), n_pes = world.n_pes();
      for (int round = 0; round < 2 * n_pes + 1; ++round) {
        // Rounds 0..n-1: one PE throws; n..2n-1: all throw; the last: none.
        const bool throws = round < n_pes ? me == round : round < 2 * n_pes;
        bool caught = false;
        try {
          symm::array<int> a(world, 16);
          symm::scalar<double> s(world);
          symm::signal sig(world);
          symm::team row = world.team().split_strided(0, 1, n_pes);
          symm::barrier_scope sync(world);
          symm::remote(a, (me + 1) % n_pes)[0] = me;
          if (throws) (void) symm::remote(a, n_pes + 7); // errc::invalid_pe, thrown through all five
        } catch (const symm::error& e) {
          PE_REQUIRE(e.code() == symm::errc::invalid_pe);
          caught = true;
        }
        PE_REQUIRE_EQ(caught, throws);
        // The job goes on: collective allocations and data still agree on every PE.
        symm::array<int> b(world, 4);
        symm::remote(b, (me + 1) % n_pes)[1] = round * 100 + me;
        world.barrier();
        PE_REQUIRE_EQ(b.local()[1], round * 100 + (me + n_pes - 1) % n_pes);
        world.barrier();
      }
      PE_REQUIRE_EQ(world.heap_in_use(), world.state()->allocator().bytes_in_use()); // nothing leaked: the same
    }));
  }
}

namespace {
//! Stops PE `pe`'s process for `pause` (SIGSTOP, as a debugger or ^Z does), from a thread of PE 0, then resumes it.
void pause_pe_from_pe0(symm::world& world, int pe, std::chrono::milliseconds pause) {
  if (world.my_pe() != 0) return;
  const pid_t pid = static_cast<pid_t>(world.state()->control(pe).pid);
  std::thread([pid, pause] {
    ::kill(pid, SIGSTOP);
    std::this_thread::sleep_for(pause);
    ::kill(pid, SIGCONT);
  }).detach();
}
} // namespace

TEST_CASE("a PE paused for 3 s in allocations and barriers is waited for: slow is not wrong", "[errors][slow]") {
  auto start = std::chrono::steady_clock::now();
  REQUIRE_NOTHROW(symm::launch(
      4,
      [](symm::world& world) {
        const int me = world.my_pe(), n = world.n_pes();
        for (int round = 0; round < 600; ++round) {
          if (round == 100) pause_pe_from_pe0(world, 3, std::chrono::milliseconds(3000)); // in the middle of a loop
          if (round == 400) pause_pe_from_pe0(world, 2, std::chrono::milliseconds(1000));
          symm::array<std::int64_t> a(world, 512); // 4096 bytes, allocated and freed each round
          symm::remote(a, (me + 1) % n)[7] = round * 10 + me;
          world.barrier();
          PE_REQUIRE_EQ(a.local()[7], round * 10 + (me + n - 1) % n);
          world.barrier();
        }
      },
      {.mode = symm::launch_mode::processes, .world = {.backend = symm::backend::host, .heap_size = 1 << 20}}));
  REQUIRE(std::chrono::steady_clock::now() - start > std::chrono::seconds(4)); // the pauses did happen
}

TEST_CASE("a PE that waits for data while the others allocate is named past the bound, with where it waits",
          "[errors]["
          "slow]") {
  symm_test::scoped_env bound({{"SYMM_COLLECTIVE_TIMEOUT_MS", "1000"}});
  const char* coordination = std::getenv("SYMM_COORDINATION");
  const bool network = coordination != nullptr && std::string_view(coordination) == "network";
  // The late PE is a member (PE 2) or the world's root (PE 0), whose silence the members must report by themselves.
  for (int waiting : {2, 0}) {
    CAPTURE(waiting);
    auto start = std::chrono::steady_clock::now();
    std::string failure;
    try {
      symm::launch(
          3,
          [&](symm::world& world) {
            const int me = world.my_pe();
            symm::scalar<int> flag(world);
            flag.local() = 0;
            world.barrier();
            if (me == waiting) { // never set: the wait ends when a PE that timed out fails
              symm::wait_until(flag, symm::cmp::eq, 1);
              return;
            }
            try {
              symm::array<int> more(world, 64);
            } catch (const symm::error& e) {
              const std::string text = e.what();
              PE_REQUIRE(e.code() == symm::errc::timeout);
              PE_REQUIRE(text.find(fmt::format("PE {} (pid ", waiting)) != std::string::npos);
              PE_REQUIRE(text.find("in a host wait for data") != std::string::npos);
              PE_REQUIRE(text.find("allocate bytes 256") != std::string::npos);
              PE_REQUIRE(text.find("this is no mismatch") != std::string::npos);
              if (network && waiting == 2 && me == 1) { // the root's report reached the member that came
                PE_REQUIRE(text.find("(as PE 0, the team's root, found)") != std::string::npos);
              }
              if (network && waiting == 0) PE_REQUIRE(text.find("it has not answered") != std::string::npos);
              throw;
            }
          },
          {.mode = symm::launch_mode::processes, .world = {.backend = symm::backend::host, .heap_size = 1 << 20}});
    } catch (const symm::error& e) {
      failure = e.what();
    }
    CHECK_THAT(failure, symm_test::contains_substring("exited with status 1"));
    // The bound, plus the members' grace over the network when the root is the one that does not come.
    REQUIRE(std::chrono::steady_clock::now() - start < std::chrono::seconds(8));
  }
}

TEST_CASE("symm::launch's timeout stops the job and tells a paused PE from a waiting one", "[errors][slow]") {
  const auto start = std::chrono::steady_clock::now();
  std::optional<symm::error> failure;
  try {
    symm::launch(2,
                 [](symm::world& world) {
                   if (world.my_pe() == 1) ::raise(SIGSTOP); // as ^Z or a debugger; nobody resumes it
                   world.barrier();
                 },
                 {.mode = symm::launch_mode::processes,
                  .world = {.backend = symm::backend::host, .heap_size = 1 << 20},
                  .timeout = std::chrono::milliseconds(1000)});
  } catch (const symm::error& e) {
    failure = e;
  }
  const auto took = std::chrono::steady_clock::now() - start;
  REQUIRE(failure.has_value());
  CHECK(failure->code() == symm::errc::timeout);
  CHECK_THAT(failure->what(),
             symm_test::contains_substring("longer than its timeout of 1000 ms") &&
                 symm_test::contains_substring("PE 1 (pid ") &&
                 symm_test::contains_substring("stopped (SIGSTOP or ^Z), not hung") &&
                 symm_test::contains_substring("PE 0 (pid "));
  REQUIRE(took >= std::chrono::milliseconds(1000));
  REQUIRE(took < std::chrono::seconds(4)); // the stopped PE ended too (SIGTERM reaches it with SIGCONT)
  REQUIRE_THROWS_WITH(symm::launch(2, [](symm::world&) {},
                                   {.mode = symm::launch_mode::threads, .timeout = std::chrono::milliseconds(10)}),
                      symm_test::contains_substring("needs launch_mode::processes"));
}

TEST_CASE("a PE paused past the collective bound is named, as paused, not as a mismatch", "[errors][slow]") {
  symm_test::scoped_env bound({{"SYMM_COLLECTIVE_TIMEOUT_MS", "1000"}});
  auto start = std::chrono::steady_clock::now();
  std::string failure;
  try {
    symm::launch(
        2,
        [](symm::world& world) {
          symm::array<int> first(world, 4);
          if (world.my_pe() == 1) ::raise(SIGSTOP); // PE 0's thread below resumes it after 2.5 s
          if (world.my_pe() == 0) {
            const pid_t pid = static_cast<pid_t>(world.state()->control(1).pid);
            std::thread([pid] {
              std::this_thread::sleep_for(std::chrono::milliseconds(2500));
              ::kill(pid, SIGCONT);
            }).detach();
            try {
              symm::array<int> second(world, 1024);
            } catch (const symm::error& e) {
              PE_REQUIRE(e.code() == symm::errc::timeout);
              PE_REQUIRE(std::string(e.what()).find("PE 1 (pid ") != std::string::npos);
              PE_REQUIRE(std::string(e.what()).find("stopped (SIGSTOP") != std::string::npos);
              PE_REQUIRE(std::string(e.what()).find("allocate bytes 4096") != std::string::npos);
              PE_REQUIRE(std::string(e.what()).find("this is no mismatch") != std::string::npos);
              PE_REQUIRE(std::string(e.what()).find("SYMM_COLLECTIVE_TIMEOUT_MS") != std::string::npos);
              throw;
            }
          } else {
            symm::array<int> second(world, 1024); // resumed: finds PE 0 gone, and says so
          }
        },
        {.mode = symm::launch_mode::processes, .world = {.backend = symm::backend::host, .heap_size = 1 << 20}});
  } catch (const symm::error& e) {
    failure = e.what();
  }
  CHECK_THAT(failure, symm_test::contains_substring("PE 0 (pid") && symm_test::contains_substring("exited with "
                                                                                                  "status"));
  REQUIRE(std::chrono::steady_clock::now() - start < std::chrono::seconds(6));
}

// ---- the failure monitor: a peer's failure made visible to this PE's kernels (detail/failure_monitor.hpp) ---------

namespace {
//! Polls `done` every millisecond for at most `bound`; true when it held.
template <class Done>
bool eventually(Done&& done, std::chrono::milliseconds bound) {
  const auto until = std::chrono::steady_clock::now() + bound;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}
} // namespace

TEST_CASE("the failure monitor writes the failed PE's number + 1 within a few periods, then stops",
          "[errors][faults]["
          "monitor]") {
  std::atomic<int> failed{-1}; // the fake liveness source: which PE "failed"
  std::atomic<int> asked{0}, published{0};
  std::atomic<std::uint32_t> word{0}; // the fake failure word
  symm::detail::failure_monitor monitor(
      std::chrono::milliseconds(5),
      [&] {
        ++asked;
        return failed.load();
      },
      [&](int pe) {
        ++published;
        word.store(symm::detail::failure_code(pe));
      });
  REQUIRE(eventually([&] { return asked.load() >= 3; }, std::chrono::seconds(5)));
  CHECK(word.load() == 0u);
  CHECK(monitor.running());
  const auto start = std::chrono::steady_clock::now();
  failed = 3;
  REQUIRE(eventually([&] { return word.load() != 0; }, std::chrono::seconds(5)));
  // One period (5 ms) plus scheduling: a loaded CI machine gets slack, a monitor that waited for the 20 s device
  // bound or never looked again does not.
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::milliseconds(500));
  CHECK(word.load() == 4u);
  REQUIRE(eventually([&] { return !monitor.running(); }, std::chrono::seconds(5)));
  CHECK(monitor.published() == 3);
  const int asked_then = asked.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  CHECK(asked.load() == asked_then); // it stopped asking
  CHECK(published.load() == 1);
}

TEST_CASE("the failure monitor leaves the word untouched while no PE fails, and a throwing source does not end it",
          "[errors][faults][monitor]") {
  std::atomic<int> asked{0};
  std::atomic<std::uint32_t> word{0};
  symm::detail::failure_monitor monitor(
      std::chrono::milliseconds(2),
      [&]() -> int {
        if (++asked % 2 == 0) throw std::runtime_error("the liveness source failed this time");
        return -1;
      },
      [&](int pe) { word.store(symm::detail::failure_code(pe)); });
  REQUIRE(eventually([&] { return asked.load() >= 10; }, std::chrono::seconds(5)));
  CHECK(word.load() == 0u);
  CHECK(monitor.running());
  CHECK(monitor.published() == -1);
}

TEST_CASE("the failure monitor's stop joins at once, whatever its period, and asks nothing after",
          "[errors][faults]["
          "monitor]") {
  std::atomic<int> asked{0};
  std::atomic<std::uint32_t> word{0};
  const auto start = std::chrono::steady_clock::now();
  {
    symm::detail::failure_monitor monitor(
        std::chrono::hours(1),
        [&] {
          ++asked;
          return 0;
        },
        [&](int pe) { word.store(symm::detail::failure_code(pe)); });
    CHECK(monitor.running());
    monitor.stop();
    CHECK_FALSE(monitor.running());
    monitor.stop(); // idempotent; the destructor stops once more
  }
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
  CHECK(asked.load() == 0);
  CHECK(word.load() == 0u);
}

TEST_CASE("the failure monitor's each_period runs every period, before and after a publish, until stop",
          "[errors][faults][monitor]") {
  std::atomic<int> failed{-1}, ticks{0}, published{0};
  symm::detail::failure_monitor monitor(
      std::chrono::milliseconds(2), [&] { return failed.load(); }, [&](int) { ++published; },
      [&] {
        if (++ticks % 3 == 0) throw std::runtime_error("a report failed this time"); // swallowed, not fatal
      });
  REQUIRE(eventually([&] { return ticks.load() >= 5; }, std::chrono::seconds(5)));
  failed = 1;
  REQUIRE(eventually([&] { return !monitor.running(); }, std::chrono::seconds(5))); // it stopped asking...
  CHECK(monitor.published() == 1);
  const int ticks_then = ticks.load();
  REQUIRE(eventually([&] { return ticks.load() >= ticks_then + 5; }, std::chrono::seconds(5))); // ...not ticking
  CHECK(published.load() == 1);
  monitor.stop();
  const int ticks_stopped = ticks.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(ticks.load() == ticks_stopped);
}

namespace {
//! A trap record as a device wait leaves it (detail::record_wait_trap), for the host side's report.
symm::detail::wait_trap_record written_trap_record(symm::detail::wait_trap_reason reason, const char* what) {
  symm::detail::wait_trap_record record{};
  record.reason = static_cast<std::uint32_t>(reason);
  record.pe = 2;
  record.peer = 5;
  record.block = 7;
  record.thread = 33;
  record.seen = 11;
  record.wanted = 12;
  record.timeout_ms = 20000;
  std::strncpy(record.what, what, sizeof(record.what) - 1);
  record.state = static_cast<std::uint32_t>(symm::detail::wait_trap_state::written);
  return record;
}

//! What report_wait_trap printed, through a temporary file.
std::string reported(symm::detail::wait_trap_record& record, bool& printed) {
  std::FILE* out = std::tmpfile();
  REQUIRE(out != nullptr);
  printed = symm::detail::report_wait_trap(record, out);
  std::rewind(out);
  std::string text;
  for (int c; (c = std::fgetc(out)) != EOF;)
    text.push_back(static_cast<char>(c));
  std::fclose(out);
  return text;
}
} // namespace

TEST_CASE("report_wait_trap prints a device wait's trap record once, in words that name the PEs and the wait",
          "[errors][faults][monitor]") {
  using symm::detail::wait_trap_reason;
  bool printed = false;
  SECTION("a deadlock on a counter") {
    auto record = written_trap_record(wait_trap_reason::count_deadlock, "symm::sync_all");
    CHECK(reported(record, printed) ==
          "symm: PE 2 waited 20000 ms in symm::sync_all for PE 5 (block 7, thread 33; count 11, waiting for 12): "
          "probable deadlock; the kernel trapped\n");
    CHECK(printed);
    CHECK(reported(record, printed).empty()); // once
    CHECK_FALSE(printed);
  }
  SECTION("a deadlock") {
    auto record = written_trap_record(wait_trap_reason::deadlock, "symm::signal_wait_until");
    CHECK(reported(record, printed) == "symm: PE 2 waited 20000 ms in symm::signal_wait_until for PE 5 (block 7, "
                                       "thread 33): probable deadlock; the kernel trapped\n");
  }
  SECTION("a deadlock in a wait for no PE in particular (this PE's signal)") {
    auto record = written_trap_record(wait_trap_reason::deadlock, "symm::signal_wait_until");
    record.peer = -1;
    CHECK(reported(record, printed) == "symm: PE 2 waited 20000 ms in symm::signal_wait_until (block 7, thread 33): "
                                       "probable deadlock; the kernel trapped\n");
  }
  SECTION("a failed peer") {
    auto record = written_trap_record(wait_trap_reason::peer_failed, "symm::wait_until");
    CHECK(reported(record, printed) == "symm: PE 2 waited in symm::wait_until: PE 5 failed (block 7, thread 33); the "
                                       "kernel trapped\n");
  }
  SECTION("a record that no wait wrote yet prints nothing") {
    auto record = written_trap_record(wait_trap_reason::deadlock, "symm::sync_all");
    record.state = static_cast<std::uint32_t>(symm::detail::wait_trap_state::free); // the fields come first
    CHECK(reported(record, printed).empty());
    CHECK_FALSE(printed);
    record.state = static_cast<std::uint32_t>(symm::detail::wait_trap_state::written); // then it prints
    CHECK_FALSE(reported(record, printed).empty());
  }
  SECTION("a name without its terminating 0 is cut, not overrun") {
    auto record = written_trap_record(wait_trap_reason::peer_failed, "");
    std::memset(record.what, 'x', sizeof(record.what));
    const std::string text = reported(record, printed);
    CHECK(text.find(std::string(symm::detail::wait_trap_what_bytes - 1, 'x') + ":") != std::string::npos);
  }
}

TEST_CASE("liveness::failed_peer names a failed, finalized or vanished PE without throwing",
          "[errors][faults]["
          "monitor]") {
  using symm::detail::pe_control;
  using symm::detail::pe_state;
  std::vector<std::unique_ptr<pe_control>> storage;
  std::vector<pe_control*> pages;
  for (int p = 0; p < 4; ++p) {
    storage.push_back(std::make_unique<pe_control>());
    pages.push_back(storage.back().get());
    pages.back()->pid = static_cast<std::uint32_t>(::getpid());
    pages.back()->state = static_cast<std::uint32_t>(pe_state::running);
  }
  const symm::detail::liveness live(pages, 0);
  CHECK(live.failed_peer() == -1);
  pages[0]->state = static_cast<std::uint32_t>(pe_state::failed); // this PE itself is not a peer
  CHECK(live.failed_peer() == -1);
  pages[2]->state = static_cast<std::uint32_t>(pe_state::finalized);
  CHECK(live.failed_peer() == 2);
  pages[2]->state = static_cast<std::uint32_t>(pe_state::running);
  pages[3]->state = static_cast<std::uint32_t>(pe_state::failed);
  CHECK(live.failed_peer() == 3);
  CHECK_THROWS_AS(live.check("a test"), symm::error); // what check() throws for, failed_peer names
  pages[3]->state = static_cast<std::uint32_t>(pe_state::running);
  // A PE whose process is gone: a child that has exited and been reaped.
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  REQUIRE(child > 0);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  pages[1]->pid = static_cast<std::uint32_t>(child);
  CHECK(live.failed_peer() == 1);

  // The monitor over the real check: the word says PE 1.
  std::atomic<std::uint32_t> word{0};
  symm::detail::failure_monitor monitor(
      std::chrono::milliseconds(1), [&] { return live.failed_peer(); },
      [&](int pe) { word.store(symm::detail::failure_code(pe)); });
  REQUIRE(eventually([&] { return word.load() != 0; }, std::chrono::seconds(5)));
  CHECK(word.load() == 2u);
}

TEST_CASE("a host-backend world runs no failure monitor: its waits are host waits, which throw errc::peer_failed",
          "[errors][faults][monitor]") {
  REQUIRE_NOTHROW(on_pes(2, [](symm::world& world) { PE_REQUIRE(world.state()->monitor() == nullptr); }));
}
