// The pieces of a world across nodes, on one machine: the TCP rendezvous (SYMM_BOOTSTRAP_ADDR), node detection
// (SYMM_NODE_NAME simulates nodes), the network mesh of coordination, and the backends that cannot span nodes.
#include <symm/symm.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "../pe_check.hpp"
#include "catch.hpp"

namespace {
using symm_test::scoped_env;

//! "127.0.0.1:PORT" with a port nobody listens on right now (the kernel's pick for an ephemeral bind).
std::string free_loopback_address() {
  symm::detail::unique_fd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(s.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  socklen_t length = sizeof(addr);
  REQUIRE(::getsockname(s.get(), reinterpret_cast<sockaddr*>(&addr), &length) == 0);
  return fmt::format("127.0.0.1:{}", ntohs(addr.sin_port));
}

constexpr std::chrono::milliseconds boot_timeout{10000};

//! This PE's job as symm::launch set it, meeting at `address` over TCP.
symm::detail::job_info tcp_job(const std::string& address) {
  symm::detail::job_info job = *symm::detail::launched_job;
  job.bootstrap_addr = address;
  return job;
}

// The TCP tests below run the bootstrap itself, without a world: no backend on this machine can share its heap
// across a TCP rendezvous (only the nvshmem one can, on GPUs).
} // namespace

TEST_CASE("a TCP rendezvous joins the PEs, exchanges bytes and refuses to pass descriptors", "[multinode][bootstrap]") {
  const std::string address = free_loopback_address();
  REQUIRE_NOTHROW(symm::launch(4, [&] {
    symm::detail::bootstrap boot(tcp_job(address), boot_timeout);
    PE_REQUIRE(boot.over_tcp());
    const int me = boot.pe();
    auto all = boot.allgather_value(std::uint64_t(me) * 1000 + 7);
    PE_REQUIRE_EQ(all.size(), std::size_t{4});
    for (int p = 0; p < 4; ++p)
      PE_REQUIRE_EQ(all[static_cast<std::size_t>(p)], std::uint64_t(p) * 1000 + 7);
    boot.barrier();
    auto again = boot.allgather_value(-me);
    PE_REQUIRE_EQ(again[3], -3);
    // PEs that met over TCP coordinate over the network even on one node, through a mesh on the rendezvous interface.
    auto layout = symm::detail::detect_layout(boot);
    PE_REQUIRE(layout.mode == symm::detail::coordination::network);
    symm::detail::net_coordination mesh(boot, std::move(layout), boot_timeout);
    const std::vector<int> everyone{0, 1, 2, 3};
    mesh.barrier(everyone, 0, "a barrier over TCP");
    symm::detail::collective_request mine{1, symm::detail::collective_kind::free, {me + 40, 0, 0}, 0};
    auto table = mesh.exchange(everyone, 0, mine, "an agreement over TCP").table;
    PE_REQUIRE_EQ(table[3].args[0], 43);
    PE_REQUIRE_ERROR(
        (void) boot.allgather_fd(0), symm::errc::unsupported,
        fmt::format("PE {}: file descriptors cannot be passed over the TCP rendezvous (TCP address {})", me, address),
        "SYMM_BACKEND=nvshmem");
  }));
}

TEST_CASE("a TCP rendezvous refuses a wrong token, and refuses to start without one", "[multinode][security]") {
  const std::string address = free_loopback_address();
  std::string pe0_error, pe1_error;
  auto run_pe = [&](int pe, std::string token, std::string& error_text) {
    symm::detail::job_info job{pe, 2, pe, 2, "/nonexistent", std::move(token), "test", address};
    try {
      symm::detail::bootstrap boot(job, std::chrono::milliseconds(1500));
    } catch (const symm::error& e) {
      error_text = e.what();
    }
  };
  std::thread pe0(run_pe, 0, "0123456789abcdef0123456789abcdef", std::ref(pe0_error));
  std::thread pe1(run_pe, 1, "ffffffffffffffffffffffffffffffff", std::ref(pe1_error));
  pe0.join();
  pe1.join();
  CHECK_THAT(pe1_error, symm_test::contains_substring("PE 1 was refused by the job at TCP address " + address) &&
                            symm_test::contains_substring("wrong job token"));
  CHECK_THAT(pe0_error, symm_test::contains_substring("PE 0 waited 1500 ms at TCP address " + address) &&
                            symm_test::contains_substring("these never came: PE 1"));

  symm::detail::job_info no_token{1, 2, 1, 2, "/nonexistent", "", "test", address};
  REQUIRE_THROWS_WITH(symm::detail::bootstrap(no_token, boot_timeout),
                      symm_test::contains_substring("PE 1: a TCP rendezvous (at " + address + ") needs a job token") &&
                          symm_test::contains_substring("export SYMM_JOB_TOKEN=$(openssl rand -hex 16)") &&
                          symm_test::contains_substring("-x SYMM_JOB_TOKEN"));
  symm::detail::job_info bad_address{0, 2, 0, 2, "/nonexistent", "secret", "test", "node001"};
  REQUIRE_THROWS_WITH(symm::detail::bootstrap(bad_address, boot_timeout),
                      symm_test::contains_substring("SYMM_BOOTSTRAP_ADDR='node001' is not host:port"));
}

TEST_CASE("node detection: SYMM_NODE_NAME=pe%d makes every PE a node, and network coordination is chosen",
          "[multinode][coordination]") {
  SECTION("one node per PE: the network") {
    scoped_env nodes({{"SYMM_NODE_NAME", "pe%d"}, {"SYMM_COORDINATION", nullptr}});
    REQUIRE_NOTHROW(symm::launch(3, [] {
      symm::detail::bootstrap boot(*symm::detail::launched_job, boot_timeout);
      auto layout = symm::detail::detect_layout(boot);
      PE_REQUIRE_EQ(layout.n_nodes, 3);
      PE_REQUIRE(layout.mode == symm::detail::coordination::network);
      PE_REQUIRE_EQ(layout.nodes[2], std::string("pe2"));
      PE_REQUIRE_EQ(symm::detail::describe_nodes(layout), std::string("3 nodes: pe0 (PEs 0), pe1 (PEs 1), pe2 (PEs "
                                                                      "2)"));
    }));
  }
  SECTION("one node: shared memory, unless the network is forced") {
    scoped_env nodes({{"SYMM_NODE_NAME", "box"}, {"SYMM_COORDINATION", nullptr}});
    REQUIRE_NOTHROW(symm::launch(3, [] {
      symm::detail::bootstrap boot(*symm::detail::launched_job, boot_timeout);
      auto layout = symm::detail::detect_layout(boot);
      PE_REQUIRE_EQ(layout.n_nodes, 1);
      PE_REQUIRE(layout.mode == symm::detail::coordination::shared);
    }));
    scoped_env forced({{"SYMM_COORDINATION", "network"}});
    REQUIRE_NOTHROW(symm::launch(2, [] {
      symm::detail::bootstrap boot(*symm::detail::launched_job, boot_timeout);
      PE_REQUIRE(symm::detail::detect_layout(boot).mode == symm::detail::coordination::network);
    }));
  }
  SECTION("shared memory across nodes is refused on every PE") {
    scoped_env nodes({{"SYMM_NODE_NAME", "pe%d"}, {"SYMM_COORDINATION", "shared"}});
    REQUIRE_NOTHROW(symm::launch(2, [] {
      symm::detail::bootstrap boot(*symm::detail::launched_job, boot_timeout);
      PE_REQUIRE_ERROR((void) symm::detail::detect_layout(boot), symm::errc::unsupported,
                       "SYMM_COORDINATION=shared, but the PEs cannot share memory pages: 2 nodes: pe0 (PEs 0), pe1 "
                       "(PEs 1)");
    }));
    scoped_env garbage({{"SYMM_COORDINATION", "smoke signals"}});
    REQUIRE_THROWS_WITH(symm::detail::requested_coordination(),
                        symm_test::contains_substring("SYMM_COORDINATION='smoke signals' is not a coordination mode"));
  }
}

TEST_CASE("the mesh of network coordination: barriers, agreement tables and a failed peer", "[multinode][mesh]") {
  scoped_env nodes({{"SYMM_NODE_NAME", "pe%d"}, {"SYMM_COORDINATION", nullptr}});
  REQUIRE_NOTHROW(symm::launch(4, [] {
    symm::detail::bootstrap boot(*symm::detail::launched_job, boot_timeout);
    symm::detail::net_coordination mesh(boot, symm::detail::detect_layout(boot), boot_timeout);
    const int me = boot.pe();
    const std::vector<int> world{0, 1, 2, 3}, odd{1, 3};
    for (int round = 0; round < 20; ++round) {
      mesh.barrier(world, 0, "a test barrier");
      symm::detail::collective_request mine{
          std::uint64_t(round), symm::detail::collective_kind::allocate, {me * 10, round, 0}, 0};
      auto table = mesh.exchange(world, 0, mine, "a test agreement").table;
      PE_REQUIRE_EQ(table.size(), std::size_t{4});
      for (int p = 0; p < 4; ++p)
        PE_REQUIRE_EQ(table[static_cast<std::size_t>(p)].args[0], p * 10);
      // A team of the odd PEs on channel 5, rooted at PE 1, while the even PEs run ahead into the next round.
      if (me % 2 == 1) {
        auto team = mesh.exchange(odd, 5, mine, "a team agreement").table;
        PE_REQUIRE_EQ(team[1].args[0], 30);
        mesh.barrier(odd, 5, "a team barrier");
      }
    }
    mesh.barrier(world, 0, "the last barrier");
    if (me == 2) {
      mesh.mark_failed("PE 2 failed on purpose");
      std::_Exit(0);
    }
    PE_REQUIRE_ERROR(mesh.barrier(world, 0, "a barrier after PE 2 failed"), symm::errc::peer_failed,
                     fmt::format("PE {} waited in a barrier after PE 2 failed but PE 2 (pid", me),
                     "node pe2) failed: PE 2 failed on purpose");
    // Stay a moment: a survivor that left at once could be reported as gone before PE 2's message reached the others.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }));
}

TEST_CASE("a world forced onto the network coordinates over the mesh", "[multinode][coordination]") {
  scoped_env forced({{"SYMM_COORDINATION", "network"}});
  REQUIRE_NOTHROW(symm_test::on_pes(3, [](symm::world& world) {
    PE_REQUIRE(symm::detail::current_world->network_coordination());
    symm::array<int> a(world, 8);
    symm::remote(a, (world.my_pe() + 1) % 3)[0] = world.my_pe() + 1;
    world.barrier();
    PE_REQUIRE_EQ(a.local()[0], (world.my_pe() + 2) % 3 + 1);
  }));
  scoped_env automatic({{"SYMM_COORDINATION", nullptr}, {"SYMM_NODE_NAME", "one-node"}});
  REQUIRE_NOTHROW(symm_test::on_pes(2, [](symm::world&) {
    PE_REQUIRE(!symm::detail::current_world->network_coordination()); // one node: the shared pages, as before
  }));
}

TEST_CASE("the host and cuda backends refuse a world across nodes, naming the nvshmem backend", "[multinode][errors]") {
  const symm::world_options host{.backend = symm::backend::host, .heap_size = 1 << 20};
  const symm::world_options cuda{.backend = symm::backend::cuda, .heap_size = 1 << 20};
  {
    // One world per launch: a PE that failed its world early must not meet the next world's rendezvous late.
    scoped_env nodes({{"SYMM_NODE_NAME", "pe%d"}});
    for (auto mode : {symm::launch_mode::processes, symm::launch_mode::threads}) {
      REQUIRE_NOTHROW(symm::launch(
          2,
          [&] {
            const int me = symm::detail::launched_job->pe;
            PE_REQUIRE_ERROR(symm::world{host}, symm::errc::unsupported,
                             fmt::format("PE {}: the host backend cannot make a world across nodes (2 nodes: pe0 (PEs "
                                         "0), pe1 (PEs 1))",
                                         me),
                             "Use SYMM_BACKEND=nvshmem");
          },
          {.mode = mode}));
    }
    REQUIRE_NOTHROW(symm::launch(2, [&] {
      PE_REQUIRE_ERROR(symm::world{cuda}, symm::errc::unsupported, "the cuda backend cannot make a world across nodes",
                       "Use SYMM_BACKEND=nvshmem");
    }));
  }
  const std::string address = free_loopback_address();
  scoped_env tcp({{"SYMM_BOOTSTRAP_ADDR", address.c_str()}});
  REQUIRE_NOTHROW(symm::launch(2, [&] {
    PE_REQUIRE_ERROR(symm::world{host}, symm::errc::unsupported, "the host backend cannot make a world across nodes",
                     "met over TCP address " + address, "Use SYMM_BACKEND=nvshmem");
  }));
}
