// World life cycle, launchers' variables, barriers.
#include <symm/detail/device_choice.hpp>
#include <symm/detail/job_layout.hpp>
#include <symm/symm.hpp>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "../pe_check.hpp"
#include "catch.hpp"
#include "fake_topology.hpp"

using symm_test::on_pes;
using symm_test::scoped_env;

TEST_CASE("every PE learns its number and the job size", "[world]") {
  for (int n : {1, 2, 3, 4, 8}) {
    CAPTURE(n);
    REQUIRE_NOTHROW(on_pes(n, [n](symm::world& world) {
      PE_REQUIRE_EQ(world.n_pes(), n);
      PE_REQUIRE(world.my_pe() >= 0 && world.my_pe() < n);
      PE_REQUIRE(world.backend() == symm::backend::host);
      // Every PE's number appears exactly once: each PE writes its number into PE 0's slot for it.
      symm::array<int> seen(world, static_cast<std::size_t>(n));
      symm::remote(seen, 0)[static_cast<std::size_t>(world.my_pe())] = world.my_pe() + 100;
      world.barrier();
      if (world.my_pe() == 0) {
        for (int p = 0; p < n; ++p)
          PE_REQUIRE_EQ(seen.local()[static_cast<std::size_t>(p)], p + 100);
      }
    }));
  }
}

namespace {
//! None of the launchers' rank and size variables set, for the scope of the returned guard.
scoped_env without_launchers() {
  return scoped_env(
      {{"SYMM_PE", nullptr},
       {"SYMM_N_PES", nullptr},
       {"OMPI_COMM_WORLD_RANK", nullptr},
       {"OMPI_COMM_WORLD_SIZE", nullptr},
       {"PMI_RANK", nullptr},
       {"PMI_SIZE", nullptr},
       {"SLURM_PROCID", nullptr},
       {"SLURM_NTASKS", nullptr},
       {"RANK", nullptr},
       {"WORLD_SIZE", nullptr}});
}
} // namespace

TEST_CASE("a program started without a launcher is a job of one PE, as an MPI singleton", "[world]") {
  const scoped_env clean = without_launchers();
  symm::world world{{.backend = symm::backend::host}};
  REQUIRE(world.my_pe() == 0);
  REQUIRE(world.n_pes() == 1);
  symm::array<int> x(world, 8), y(world, 8);
  const std::vector<int> values{1, 2, 3, 4, 5, 6, 7, 8};
  symm::remote(x, 0) = values;
  symm::alltoall(world.team(), y, x);
  world.barrier();
  REQUIRE(std::vector<int>(symm::remote(y, 0)) == values);
  REQUIRE_THROWS_WITH((void) symm::remote(x, 1), symm_test::contains_substring("PE 1"));
}

TEST_CASE("a rank variable set to garbage is named with its value", "[world][errors]") {
  scoped_env garbage({{"SYMM_PE", "two"}, {"SYMM_N_PES", "4"}, {"SYMM_JOB_DIR", "/tmp/nowhere"}});
  REQUIRE_THROWS_WITH(symm::world{}, symm_test::contains_substring("SYMM_PE='two'"));
  scoped_env too_big({{"SYMM_PE", "5"}, {"SYMM_N_PES", "4"}});
  REQUIRE_THROWS_WITH(symm::world{}, symm_test::contains_substring("rank 5 is not below the job size 4"));
  scoped_env half({{"SYMM_PE", nullptr}, {"SYMM_N_PES", nullptr}, {"PMI_RANK", "1"}, {"PMI_SIZE", nullptr}});
  REQUIRE_THROWS_WITH(symm::world{}, symm_test::contains_substring("PMI_RANK is set but PMI_SIZE is not"));
}

TEST_CASE("a single PE runs from launcher variables alone", "[world]") {
  scoped_env one(
      {{"SYMM_PE", nullptr},
       {"SYMM_N_PES", nullptr},
       {"OMPI_COMM_WORLD_RANK", "0"},
       {"OMPI_COMM_WORLD_SIZE", "1"},
       {"SYMM_BACKEND", "host"}});
  symm::world world;
  REQUIRE(world.my_pe() == 0);
  REQUIRE(world.n_pes() == 1);
  symm::array<double> a(world, 10);
  symm::remote(a, 0)[3] = 2.5;
  REQUIRE(a.local()[3] == 2.5);
}

TEST_CASE("the nvshmem backend in a program built without it is refused, saying how to build it", "[world][errors]") {
  scoped_env one(
      {{"SYMM_PE", nullptr},
       {"SYMM_N_PES", nullptr},
       {"OMPI_COMM_WORLD_RANK", "0"},
       {"OMPI_COMM_WORLD_SIZE", "1"},
       {"SYMM_BACKEND", "nvshmem"}});
#if SYMM_CUDA_BACKEND()
  REQUIRE_THROWS_WITH(
      symm::world{},
      symm_test::contains_substring("PE 0: the nvshmem backend was asked for") &&
          symm_test::contains_substring("SYMM_ENABLE_NVSHMEM=0") && symm_test::contains_substring("symm_nvshmem_dep"));
#else
  REQUIRE_THROWS_WITH(symm::world{}, symm_test::contains_substring("built without CUDA"));
#endif
  scoped_env bad({{"SYMM_BACKEND", "shmem"}});
  REQUIRE_THROWS_WITH(symm::world{}, symm_test::contains_substring("SYMM_BACKEND='shmem' is not a backend") &&
                                         symm_test::contains_substring("'nvshmem'"));
}

TEST_CASE("tagged peer addresses (the nvshmem backend's RMA peers) keep the local address and the PE", "[world]") {
  alignas(16) static double heap[64];
  for (int pe : {0, 1, 7, 4095, symm::detail::rma_max_pes - 1}) {
    double* tagged = symm::detail::make_rma_address(heap + 5, pe);
    REQUIRE(symm::detail::rma_local(tagged) == heap + 5);
    REQUIRE(symm::detail::rma_pe(tagged) == pe);
    REQUIRE(symm::detail::rma_local(tagged + 3) == heap + 8); // element arithmetic keeps the tag
    REQUIRE(symm::detail::rma_pe(tagged + 3) == pe);
    // Only the NVSHMEM backend looks for the tag; without it the test is constant false and compiles away.
    REQUIRE(symm::detail::is_rma_address(tagged) == SYMM_NVSHMEM_BACKEND());
  }
  STATIC_REQUIRE(!symm::detail::is_rma_address(heap));
}

TEST_CASE("operations without a world are refused", "[world][errors]") {
  REQUIRE_THROWS_WITH(symm::barrier_all(), symm_test::contains_substring("no symm::world alive in this process"));
  REQUIRE_THROWS_WITH(symm::quiet(), symm_test::contains_substring("no symm::world alive in this process"));
}

namespace {
//! Four std::threads of each PE (threads that made no world) put into the right neighbour (p for one half, put_nbi for
//! the other), count themselves there with an atomic, and wait on their own PE's count: every operation a PE's other
//! threads may call (docs/api.md, Threads). `one_world_per_process`: the PEs are processes, so the free functions
//! without a world argument (quiet) find the process's world; as threads of one process (symm::launch's threads mode)
//! they cannot tell which PE calls, and say so.
void threads_of_a_pe(symm::world& world, bool one_world_per_process) {
  constexpr int threads = 4, per_thread = 64, half = per_thread / 2;
  const int me = world.my_pe(), n = world.n_pes(), right = (me + 1) % n, left = (me + n - 1) % n;
  auto value = [](int pe, int t, int i) { return std::uint64_t(pe) << 32 | std::uint64_t(t) << 16 | std::uint64_t(i); };
  symm::array<std::uint64_t> slots(world, threads * per_thread, {.zeroed = true});
  symm::scalar<std::uint64_t> arrived(world, {.zeroed = true});
  std::vector<std::string> errors(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      try {
        auto there = symm::remote(slots, right).subspan(std::size_t(t) * per_thread, per_thread);
        for (int i = 0; i < half; ++i)
          there[std::size_t(i)] = value(me, t, i);
        std::vector<std::uint64_t> rest(half);
        for (int i = 0; i < half; ++i)
          rest[std::size_t(i)] = value(me, t, half + i);
        auto pending = symm::put_nbi(there.subspan(half), rest);
        if (one_world_per_process) {
          symm::quiet(); // the process's world: completes this thread's put_nbi with the rest
        } else {
          pending.wait();
          PE_REQUIRE_ERROR(symm::quiet(), symm::errc::not_initialized, "from a thread that made no symm::world",
                           "while symm::launch runs PEs as threads");
        }
        symm::remote(arrived, right).fetch_add(1);
        PE_REQUIRE_EQ(symm::wait_until(arrived, symm::cmp::eq, threads), std::uint64_t{threads});
        PE_REQUIRE(symm::test(arrived, symm::cmp::eq, threads));
      } catch (const std::exception& e) {
        errors[std::size_t(t)] = e.what();
      }
    });
  }
  for (auto& thread : pool)
    thread.join();
  for (const auto& error : errors)
    if (!error.empty()) throw std::runtime_error(error);
  // Every thread of the left PE counted itself in `arrived` after its puts were complete.
  std::vector<std::uint64_t> got(slots.size());
  std::copy(slots.local().begin(), slots.local().end(), got.begin());
  for (int t = 0; t < threads; ++t)
    for (int i = 0; i < per_thread; ++i)
      PE_REQUIRE_EQ(got[std::size_t(t * per_thread + i)], value(left, t, i));
  world.barrier();
}
} // namespace

TEST_CASE("threads of a PE put, update atomics, wait and quiet through their process's world", "[world][threads]") {
  const symm::world_options options{.backend = symm::backend::host, .heap_size = std::size_t{16} << 20};
  REQUIRE_NOTHROW(symm::launch(2, [](symm::world& world) { threads_of_a_pe(world, true); },
                               {.mode = symm::launch_mode::processes, .world = options}));
  REQUIRE_NOTHROW(symm::launch(2, [](symm::world& world) { threads_of_a_pe(world, false); },
                               {.mode = symm::launch_mode::threads, .world = options}));
}

TEST_CASE("barrier_scope: writes made before the scope ends are visible on every PE after it", "[world][barrier]") {
  REQUIRE_NOTHROW(on_pes(4, [](symm::world& world) {
    int me = world.my_pe(), n = world.n_pes();
    symm::array<std::uint64_t> box(world, static_cast<std::size_t>(n));
    for (int round = 1; round <= 50; ++round) {
      {
        symm::barrier_scope sync(world);
        // Every PE writes its stamp into slot `me` of every PE.
        for (int p = 0; p < n; ++p)
          symm::remote(box, p)[static_cast<std::size_t>(me)] = std::uint64_t(round) * 1000 + me;
      }
      for (int p = 0; p < n; ++p)
        PE_REQUIRE_EQ(box.local()[static_cast<std::size_t>(p)], std::uint64_t(round) * 1000 + p);
      symm::barrier_all(); // nobody overwrites before everyone has checked
    }
    symm::sync_all();
  }));
}

TEST_CASE("several worlds one after another in one process", "[world]") {
  for (int i = 0; i < 3; ++i) {
    REQUIRE_NOTHROW(symm::launch(
        2,
        [](symm::world& world) {
          symm::scalar<int> s(world);
          symm::remote(s, 1 - world.my_pe()) = world.my_pe();
          world.barrier();
          PE_REQUIRE_EQ(s.local(), 1 - world.my_pe());
        },
        {.mode = symm::launch_mode::threads, .world = {.backend = symm::backend::host, .heap_size = 1 << 20}}));
  }
}

TEST_CASE("launch reports which PE failed and how", "[launch][errors]") {
  auto failing = [](symm::world& world) {
    if (world.my_pe() == 2) throw std::runtime_error("boom on purpose");
    world.barrier(); // the others wait here and must not hang
  };
  symm::world_options host{.backend = symm::backend::host, .heap_size = 1 << 20};
  REQUIRE_THROWS_WITH(symm::launch(4, failing, {.mode = symm::launch_mode::processes, .world = host}),
                      symm_test::contains_substring("PE 2") && symm_test::contains_substring("exited with status 1"));
  REQUIRE_THROWS_WITH(symm::launch(4, failing, {.mode = symm::launch_mode::threads, .world = host}),
                      symm_test::contains_substring("boom on purpose"));
  REQUIRE_THROWS_WITH(symm::launch(0, failing), symm_test::contains_substring("n_pes = 0"));
}

TEST_CASE("symm::global_exit under launch: the other PEs are stopped and launch throws the PE and the code",
          "[launch][errors]") {
  symm::world_options host{.backend = symm::backend::host, .heap_size = 1 << 20};
  for (int code : {7, 0}) {
    const auto started = std::chrono::steady_clock::now();
    bool thrown = false;
    try {
      symm::launch(4,
                   [code](symm::world& world) {
                     if (world.my_pe() == 1) symm::global_exit(code);
                     // Busy elsewhere, not in a wait: stopped by launch, not waited for.
                     if (world.my_pe() == 2) std::this_thread::sleep_for(std::chrono::seconds(30));
                     world.barrier();
                   },
                   {.mode = symm::launch_mode::processes, .world = host});
    } catch (const symm::global_exit_error& e) {
      thrown = true;
      CHECK(e.pe() == 1);
      CHECK(e.exit_code() == code);
      CHECK(e.code() == symm::errc::peer_failed);
      CHECK_THAT(e.what(), symm_test::contains_substring(fmt::format("PE 1 called symm::global_exit({})", code)));
    }
    CHECK(thrown);
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(10));
  }
}

TEST_CASE("the meeting place comes from the launcher's job identity, never a fallback", "[world][identity]") {
  using symm::detail::derived_job_dir;
  using symm::detail::launcher_job_identity;
  scoped_env clean(
      {{"SYMM_JOB_ID", nullptr},
       {"MASTER_ADDR", "10.0.0.1"},
       {"MASTER_PORT", "29500"},
       {"TORCHELASTIC_RUN_ID", "none"}, // torchrun's default: the same for every job
       {"TORCHELASTIC_RESTART_COUNT", nullptr}});
  const std::string first = launcher_job_identity("torchrun");
  REQUIRE(first == "torchrun: MASTER_ADDR=10.0.0.1 MASTER_PORT=29500 TORCHELASTIC_RUN_ID=none");
  {
    scoped_env other_port({{"MASTER_PORT", "29501"}});
    REQUIRE(derived_job_dir(launcher_job_identity("torchrun")) != derived_job_dir(first));
  }
  {
    scoped_env restarted({{"TORCHELASTIC_RESTART_COUNT", "1"}}); // a restarted job is a new world
    REQUIRE(launcher_job_identity("torchrun") != first);
  }
  {
    scoped_env no_port({{"MASTER_PORT", nullptr}});
    REQUIRE(launcher_job_identity("torchrun").empty());
    scoped_env chosen({{"SYMM_JOB_ID", "run-42"}}); // the way out, under any launcher
    REQUIRE(launcher_job_identity("torchrun") == "SYMM_JOB_ID=run-42");
  }
  // The PEs of one job compute one place; the directory name is a digest (a namespace like "prterun-a@1" has
  // characters a file name should not).
  scoped_env slurm({{"SLURM_JOB_ID", "812"}, {"SLURM_STEP_ID", "3"}, {"SLURM_CLUSTER_NAME", nullptr}});
  REQUIRE(launcher_job_identity("Slurm") == "Slurm: SLURM_JOB_ID=812 SLURM_STEP_ID=3");
  REQUIRE(derived_job_dir(launcher_job_identity("Slurm")) ==
          derived_job_dir("Slurm: SLURM_JOB_ID=812 "
                          "SLURM_STEP_ID=3"));
  REQUIRE(derived_job_dir("a").find_first_not_of("/tmp-symjob0123456789abcdef") == std::string::npos);
  {
    scoped_env other_step({{"SLURM_STEP_ID", "4"}});
    REQUIRE(launcher_job_identity("Slurm") != "Slurm: SLURM_JOB_ID=812 SLURM_STEP_ID=3");
  }
  // A job of several PEs whose launcher tells it from no other is refused, saying what to export.
  scoped_env two_pes(
      {{"SYMM_PE", nullptr},
       {"SYMM_N_PES", nullptr},
       {"OMPI_COMM_WORLD_RANK", nullptr},
       {"OMPI_COMM_WORLD_SIZE", nullptr},
       {"PMI_RANK", nullptr},
       {"PMI_SIZE", nullptr},
       {"SLURM_PROCID", nullptr},
       {"SLURM_NTASKS", nullptr},
       {"RANK", "1"},
       {"WORLD_SIZE", "2"},
       {"MASTER_PORT", nullptr}});
  REQUIRE_THROWS_WITH(symm::detail::job_from_environment(),
                      symm_test::contains_substring("torchrun: the launcher's variables give this job no identity") &&
                          symm_test::contains_substring("MASTER_ADDR and MASTER_PORT not set") &&
                          symm_test::contains_substring("SYMM_JOB_ID=$(uuidgen)"));
}

TEST_CASE("torchrun: a job of one node meets through a Unix socket, one across nodes over TCP", "[world][identity]") {
  const scoped_env clean = without_launchers();
  scoped_env torchrun(
      {{"RANK", "1"},
       {"WORLD_SIZE", "4"},
       {"LOCAL_RANK", "1"},
       {"LOCAL_WORLD_SIZE", "4"},
       {"MASTER_ADDR", "10.0.0.1"},
       {"MASTER_PORT", "29500"},
       {"TORCHELASTIC_RUN_ID", "r1"},
       {"SYMM_BOOTSTRAP_ADDR", nullptr},
       {"SYMM_JOB_ID", nullptr}});
  // --standalone or --nnodes 1: every PE is on this node. No TCP, so no token; the directory is the job's own.
  auto job = symm::detail::job_from_environment();
  CHECK(job.source == "torchrun");
  CHECK(job.bootstrap_addr.empty());
  CHECK(job.local_n_pes_given);
  CHECK(job.job_dir == symm::detail::derived_job_dir(job.identity));
  CHECK(job.identity == "torchrun: MASTER_ADDR=10.0.0.1 MASTER_PORT=29500 TORCHELASTIC_RUN_ID=r1");
  {
    scoped_env two_nodes({{"LOCAL_WORLD_SIZE", "2"}}); // --nnodes 2 --nproc-per-node 2
    CHECK(symm::detail::job_from_environment().bootstrap_addr == "10.0.0.1:29501");
  }
  {
    scoped_env no_local_size({{"LOCAL_WORLD_SIZE", nullptr}}); // not torchrun's own: nothing says one node
    CHECK(symm::detail::job_from_environment().bootstrap_addr == "10.0.0.1:29501");
  }
  {
    scoped_env chosen({{"SYMM_BOOTSTRAP_ADDR", "10.0.0.9:4000"}}); // the user's choice stands
    CHECK(symm::detail::job_from_environment().bootstrap_addr == "10.0.0.9:4000");
  }
}

TEST_CASE("process facts from /proc: name, state, parent, and a named ancestor", "[world][identity]") {
  using symm::detail::read_process_stat;
  const auto me = read_process_stat(::getpid());
  CHECK(me.state == 'R');
  CHECK(me.parent == ::getppid());
  CHECK(!me.name.empty());
  CHECK(me.name.size() <= 15); // the kernel keeps 15 characters of a command name
  CHECK(read_process_stat(::getppid()).name == read_process_stat(me.parent).name);
  CHECK(symm::detail::ancestor_named(read_process_stat(::getppid()).name) == ::getppid());
  CHECK(symm::detail::ancestor_named("no such process") == 0);
  CHECK(read_process_stat(-1).state == '\0');
}

TEST_CASE("the world says which launcher started it and where its PEs met", "[world][identity]") {
  REQUIRE_NOTHROW(on_pes(2, [](symm::world& world) {
    const symm::launcher_info how = world.launcher();
    PE_REQUIRE(how.name == "symm::launch");
    PE_REQUIRE(how.rendezvous.rfind("Unix socket /", 0) == 0);
    PE_REQUIRE(how.rendezvous.find("boot.sock") != std::string::npos);
  }));
  const scoped_env clean = without_launchers();
  symm::world alone{{.backend = symm::backend::host}};
  CHECK(alone.launcher().name == symm::detail::no_launcher);
  CHECK(alone.launcher().rendezvous == "nothing (a job of one PE meets nobody)");
}

// ---- Which GPU a PE uses, and who shares it: detail::choose_device and judge_gpu_sharing over tables, no GPU needed
// --

namespace {
symm::detail::device_facts gpus(int count, int local_pe, int local_n_pes) {
  symm::detail::device_facts f;
  f.pe = 7;
  f.local_pe = local_pe;
  f.local_n_pes = local_n_pes;
  f.launcher = "Open MPI";
  f.device_count = count;
  return f;
}
} // namespace

TEST_CASE("device choice: the options, then SYMM_DEVICE, then the local PE modulo the visible GPUs",
          "[world]["
          "device]") {
  using symm::detail::choose_device;
  auto f = gpus(4, 5, 8);
  auto by_rank = choose_device(f);
  CHECK(by_rank.device == 1);
  CHECK(by_rank.reason == "local PE 5 of 8 (Open MPI) on GPU 5 % 4");

  f.symm_device = "3";
  auto by_env = choose_device(f);
  CHECK(by_env.device == 3);
  CHECK(by_env.reason == "SYMM_DEVICE=3");

  f.option_device = 2;
  auto by_option = choose_device(f);
  CHECK(by_option.device == 2);
  CHECK(by_option.reason == "world_options::device = 2");

  f.option_device = -1;
  f.symm_device = ""; // set but empty: as unset
  CHECK(choose_device(f).device == 1);

  // The host backend has no GPU.
  REQUIRE_NOTHROW(on_pes(2, [](symm::world& world) {
    PE_REQUIRE_EQ(world.device().number, -1);
    PE_REQUIRE(world.device().pci_bus_id.empty());
  }));
}

TEST_CASE("device choice: the launchers' local ranks pick the GPU", "[world][device]") {
  const scoped_env clean = without_launchers();
  const scoped_env job_id({{"SYMM_JOB_ID", "device-choice-test"}});
  // With 2 visible GPUs: the launcher's local rank decides. `given`: whether the launcher said it (else the world
  // numbers the PEs of each node itself, index_on_node).
  const auto check = [](std::initializer_list<std::pair<const char*, const char*>> vars, const char* launcher,
                        int local_pe, bool given, int local_n_pes, int device) {
    CAPTURE(launcher);
    scoped_env env(vars);
    const auto job = symm::detail::job_from_environment();
    CHECK(job.source == launcher);
    CHECK(job.local_pe == local_pe);
    CHECK(job.local_pe_given == given);
    CHECK(job.local_n_pes == local_n_pes);
    auto f = symm::detail::device_facts_of(job);
    f.device_count = 2;
    const auto choice = symm::detail::choose_device(f);
    CHECK(choice.device == device);
    CHECK(choice.reason.find(fmt::format("({})", launcher)) != std::string::npos);
  };
  check({{"SYMM_PE", "5"},
         {"SYMM_N_PES", "8"},
         {"SYMM_LOCAL_PE", "3"},
         {"SYMM_LOCAL_N_PES", "4"},
         {"SYMM_JOB_DIR", "/tmp/nowhere"}},
        "symmrun", 3, true, 4, 1);
  check({{"OMPI_COMM_WORLD_RANK", "6"},
         {"OMPI_COMM_WORLD_SIZE", "8"},
         {"OMPI_COMM_WORLD_LOCAL_RANK", "2"},
         {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}},
        "Open MPI", 2, true, 4, 0);
  check({{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}, {"MPI_LOCALRANKID", "1"}, {"MPI_LOCALNRANKS", "2"}}, "PMI", 1, true, 2,
        1);
  // Slurm gives no node size: the job size stands in until the world counts the PEs of each node (pes_on_node).
  check({{"SLURM_PROCID", "9"}, {"SLURM_NTASKS", "16"}, {"SLURM_LOCALID", "5"}}, "Slurm", 5, true, 16, 1);
  check({{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "3"}, {"LOCAL_WORLD_SIZE", "4"}}, "torchrun", 3, true, 4,
        1);
  // PMI without MPI_LOCALRANKID: the global rank stands in, marked as not given.
  check({{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}, {"MPI_LOCALRANKID", nullptr}, {"MPI_LOCALNRANKS", nullptr}}, "PMI", 1,
        false, 2, 1);
}

TEST_CASE("device choice: the world counts and numbers the PEs of each node", "[world][device]") {
  symm::detail::job_layout layout;
  layout.nodes = {"a", "b", "a", "a", "b"};
  CHECK(symm::detail::pes_on_node(layout, 0) == 3);
  CHECK(symm::detail::pes_on_node(layout, 4) == 2);
  CHECK(symm::detail::index_on_node(layout, 0) == 0);
  CHECK(symm::detail::index_on_node(layout, 2) == 1);
  CHECK(symm::detail::index_on_node(layout, 3) == 2);
  CHECK(symm::detail::index_on_node(layout, 1) == 0);
  CHECK(symm::detail::index_on_node(layout, 4) == 1);
}

TEST_CASE("device choice: bad requests name the PE and the values", "[world][device][errors]") {
  using symm::detail::choose_device;
  using symm_test::contains_substring;
  auto f = gpus(2, 0, 2);
  f.symm_device = "one";
  REQUIRE_THROWS_WITH(choose_device(f), contains_substring("PE 7: SYMM_DEVICE='one' is not a device number (0 to 1)"));
  f.symm_device = "-1";
  REQUIRE_THROWS_WITH(choose_device(f), contains_substring("SYMM_DEVICE='-1'"));
  f.symm_device = "2";
  f.visible = "3,5";
  REQUIRE_THROWS_WITH(choose_device(f), contains_substring("PE 7: GPU 2 was asked for (SYMM_DEVICE=2), but only 2 "
                                                           "GPUs are visible (CUDA_VISIBLE_DEVICES=3,5)"));
  f.symm_device.reset();
  f.option_device = 1;
  f.device_count = 1;
  f.visible.reset();
  REQUIRE_THROWS_WITH(choose_device(f), contains_substring("GPU 1 was asked for (world_options::device = 1), but only "
                                                           "1 GPU is visible"));
  f.device_count = 0;
  f.visible = "";
  try {
    (void) choose_device(f);
    FAIL("no GPU: choose_device must throw");
  } catch (const symm::error& e) {
    CHECK(e.code() == symm::errc::unsupported);
    CHECK_THAT(e.what(), contains_substring("the cuda backend needs a GPU, but CUDA reports none "
                                            "(CUDA_VISIBLE_DEVICES=)") &&
                             contains_substring("SYMM_BACKEND=host"));
  }
}

TEST_CASE("device choice: processes that share a GPU need MPS, threads of one process do not", "[world][device]") {
  using symm::detail::gpu_user;
  using symm::detail::judge_gpu_sharing;
  using symm_test::contains_substring;
  // {pe, node, bus id, pid, exclusive, mps}
  const auto user = [](int pe, const char* node, const char* bus, std::uint32_t pid, bool exclusive = false,
                       bool mps = false) { return gpu_user{pe, node, bus, pid, exclusive, mps}; };

  // Threads of one process (symm::launch) on one GPU share its context: nothing to say, even in exclusive mode.
  const std::vector<gpu_user> threads{user(0, "a", "0000:18:00.0", 100, true), user(1, "a", "0000:18:00.0", 100, true)};
  for (int me : {0, 1}) {
    auto v = judge_gpu_sharing(threads, me);
    CHECK(v.warning.empty());
    CHECK(v.error.empty());
  }

  // Every PE sees its own GPU as device 0 (CUDA_VISIBLE_DEVICES per PE): different bus ids, nothing shared.
  const std::vector<gpu_user> own{user(0, "a", "0000:18:00.0", 100, true), user(1, "a", "0000:3b:00.0", 101, true),
                                  user(2, "a", "0000:86:00.0", 102, true)};
  CHECK(judge_gpu_sharing(own, 1).error.empty());
  CHECK(judge_gpu_sharing(own, 1).warning.empty());

  // Two processes on GPU 18 of node a (PEs 0 and 2), one on GPU 3b; the same bus id on node b is another GPU.
  std::vector<gpu_user> shared{user(0, "a", "0000:18:00.0", 100), user(1, "a", "0000:3b:00.0", 101),
                               user(2, "a", "0000:18:00.0", 102), user(3, "b", "0000:18:00.0", 200)};
  auto first = judge_gpu_sharing(shared, 0);
  CHECK(first.error.empty());
  CHECK_THAT(first.warning, contains_substring("PEs 0, 2 (2 processes) share GPU 0000:18:00.0 of node a and no MPS "
                                               "daemon answers") &&
                                contains_substring("nvidia-cuda-mps-control -d"));
  for (int me : {1, 2, 3}) { // said once per GPU, by its lowest PE
    CAPTURE(me);
    CHECK(judge_gpu_sharing(shared, me).warning.empty());
  }
  for (auto& u : shared)
    u.mps = true;
  CHECK(judge_gpu_sharing(shared, 0).warning.empty());

  // Exclusive-process mode admits one process: every PE gets the same error, naming the PEs and the GPU.
  for (auto& u : shared)
    u.mps = false;
  shared[2].exclusive = true;
  const auto on0 = judge_gpu_sharing(shared, 0), on3 = judge_gpu_sharing(shared, 3);
  CHECK_THAT(on0.error, contains_substring("PEs 0, 2 (2 processes) use GPU 0000:18:00.0 of node a, which is in "
                                           "exclusive-process compute mode"));
  CHECK(on3.error == on0.error);
}

TEST_CASE("peer access: every pair of GPUs of a node needs peer access and native atomics", "[world][device]") {
  using symm::detail::classify_peer;
  using symm::detail::gpu_user;
  using symm::detail::judge_peer_access;
  using symm::detail::peer_path;
  using symm::detail::peer_problem;
  using symm_test::contains_substring;

  // What the driver answers, as a path: nothing can be asked about a GPU this process does not see.
  CHECK(classify_peer(true, true, true) == peer_path::usable);
  CHECK(classify_peer(true, false, false) == peer_path::no_peer_access);
  CHECK(classify_peer(true, true, false) == peer_path::no_native_atomics);
  CHECK(classify_peer(false, false, false) == peer_path::not_visible);

  // Four PEs on two GPUs of node a (two per GPU), one PE on node b.
  const std::vector<gpu_user> users{
      {0, "a", "0000:18:00.0", 100},
      {1, "a", "0000:18:00.0", 101},
      {2, "a", "0000:3b:00.0", 102},
      {3, "a", "0000:3b:00.0", 103},
      {4, "b", "0000:18:00.0", 200}};
  std::vector<peer_problem> problems(users.size());
  CHECK(judge_peer_access(users, problems).empty()); // every pair usable (NVLink)
  problems[1] = {2, peer_path::not_visible};         // PE 1 sees only its own GPU: its mapping will tell
  CHECK(judge_peer_access(users, problems).empty());

  // PCIe without peer-to-peer between the GPUs: the first problem in PE order, both PEs, both GPUs, the way out; the
  // same text on every PE (each throws it).
  problems[3] = {0, peer_path::no_peer_access};
  problems[2] = {1, peer_path::no_native_atomics};
  const std::string error = judge_peer_access(users, problems);
  CHECK_THAT(error, contains_substring("PE 2 (GPU 0000:3b:00.0 of node a) and PE 1 (GPU 0000:18:00.0)") &&
                        contains_substring("no native atomics") &&
                        contains_substring("cudaDevP2PAttrNativeAtomicSupported is 0") &&
                        contains_substring("SYMM_BACKEND=nvshmem") && contains_substring("nvidia-smi topo -p2p"));
  problems[2] = {1, peer_path::query_failed};
  CHECK_THAT(judge_peer_access(users, problems),
             contains_substring("the driver could not say whether these GPUs have peer access") &&
                 contains_substring("failed on PE 2"));
  problems[2] = {};
  CHECK_THAT(judge_peer_access(users, problems),
             contains_substring("PE 3 (GPU 0000:3b:00.0 of node a) and PE 0 (GPU 0000:18:00.0): the driver reports no "
                                "peer access between these GPUs (cudaDeviceCanAccessPeer is 0)"));
}

TEST_CASE("topology: the class of every link from what the PEs gathered, on machines of 1 to 8 GPUs",
          "[world][device]["
          "topology]") {
  using symm::detail::link_class;
  using symm_test::pe_range;

  // Two GPUs, NVLink peers: one PE each.
  const auto two = symm_test::all_nvlink(2);
  CHECK(two.n_pes() == 2);
  CHECK(two.link(0, 1) == link_class::nvlink);
  CHECK(two.link(1, 0) == link_class::nvlink);
  CHECK(two.link(1, 1) == link_class::same_gpu);
  CHECK_FALSE(two.shares_gpu(0, 1));
  CHECK(two.shares_gpu(1, 1));
  CHECK(two.weakest_link() == link_class::nvlink);
  CHECK(two.gpu_count() == 2);
  CHECK(two.performance_rank(0, 1) == 0);
  CHECK(two.users()[1].bus_id == "0000:19:00.0");
  CHECK(two.describe(0) == "PE 0: GPU 0000:18:00.0 of node a; NVLink: 1 (rank 0)");

  // Four GPUs, all NVLink (an NVSwitch machine).
  const auto four = symm_test::all_nvlink(4);
  CHECK(four.weakest_link() == link_class::nvlink);
  CHECK(four.all_pairs_at_least(link_class::nvlink, pe_range(0, 4)));
  CHECK_FALSE(four.all_pairs_at_least(link_class::same_gpu, pe_range(0, 4)));
  CHECK(four.gpu_count() == 4);
  CHECK(four.describe(2) == "PE 2: GPU 0000:1a:00.0 of node a; NVLink: 0, 1, 3 (rank 0)");

  // Eight GPUs as two NVLink islands of four linked by PCIe: each island is NVLink-class, the world is PCIe.
  const auto eight = symm_test::two_islands();
  CHECK(eight.link(0, 3) == link_class::nvlink);
  CHECK(eight.link(0, 4) == link_class::pcie);
  CHECK(eight.link(7, 3) == link_class::pcie);
  CHECK(eight.link(5, 6) == link_class::nvlink);
  CHECK(eight.weakest_link(pe_range(0, 4)) == link_class::nvlink);
  CHECK(eight.weakest_link(pe_range(4, 4)) == link_class::nvlink);
  CHECK(eight.weakest_link(std::vector<int>{3, 4}) == link_class::pcie);
  CHECK(eight.weakest_link() == link_class::pcie);
  CHECK(eight.links_of(pe_range(0, 4)).weakest == link_class::nvlink);
  CHECK(eight.links_of(pe_range(0, 8)).weakest == link_class::pcie);
  CHECK(eight.all_pairs_at_least(link_class::pcie, pe_range(0, 8)));
  CHECK_FALSE(eight.all_pairs_at_least(link_class::nvlink, pe_range(0, 8)));
  CHECK(eight.gpu_count() == 8);
  CHECK(eight.gpu_count(pe_range(2, 4)) == 4);
  CHECK(eight.performance_rank(0, 5) == 1);
  CHECK(eight.describe(0) == "PE 0: GPU 0000:18:00.0 of node a; NVLink: 1-3 (rank 0); PCIe: 4-7 (rank 1)");
  CHECK(eight.describe(5) == "PE 5: GPU 0000:1d:00.0 of node a; NVLink: 4, 6, 7 (rank 0); PCIe: 0-3 (rank 1)");

  // Two PEs per GPU (processes under MPS) on two NVLink GPUs: PEs 0, 1 share GPU 0, PEs 2, 3 share GPU 1.
  const auto mps = symm_test::all_nvlink(2, 2);
  CHECK(mps.n_pes() == 4);
  CHECK(mps.shares_gpu(0, 1));
  CHECK(mps.shares_gpu(3, 2));
  CHECK_FALSE(mps.shares_gpu(1, 2));
  CHECK(mps.link(0, 1) == link_class::same_gpu);
  CHECK(mps.link(1, 2) == link_class::nvlink);
  CHECK(mps.links_of(std::vector<int>{2, 3}).one_gpu());
  CHECK_FALSE(mps.links_of(pe_range(0, 4)).one_gpu());
  CHECK(mps.gpu_count() == 2);
  CHECK(mps.gpu_count(std::vector<int>{0, 1}) == 1);
  CHECK(mps.describe(1) == "PE 1: GPU 0000:18:00.0 of node a; same GPU: 0; NVLink: 2, 3 (rank 0)");
  // Four PEs on one GPU: nothing but same_gpu.
  const auto one = symm_test::all_nvlink(1, 4);
  CHECK(one.weakest_link() == link_class::same_gpu);
  CHECK(one.links_of(pe_range(0, 4)).one_gpu());
  CHECK(one.gpu_count() == 1);
  CHECK(one.describe(3) == "PE 3: GPU 0000:18:00.0 of node a; same GPU: 0-2");

  // Four NVLink GPUs but one pair without peer access (GPUs 1 and 2): that pair is `none`, the world's weakest link.
  const auto gap = symm_test::fake_topology(4, 1, [](int g, int h) {
    return (g == 1 && h == 2) || (g == 2 && h == 1) ? symm_test::no_access_pair : symm_test::nvlink_pair;
  });
  CHECK(gap.link(1, 2) == link_class::none);
  CHECK(gap.link(2, 1) == link_class::none);
  CHECK(gap.link(0, 2) == link_class::nvlink);
  CHECK(gap.weakest_link() == link_class::none);
  CHECK(gap.weakest_link(std::vector<int>{0, 1, 3}) == link_class::nvlink);
  CHECK(gap.describe(1) == "PE 1: GPU 0000:19:00.0 of node a; NVLink: 0, 3 (rank 0); none: 2");

  // A GPU that one side could not ask about (CUDA_VISIBLE_DEVICES): the other side's answer holds for the pair;
  // neither side asked: unknown, which ranks above PCIe and below NVLink.
  const auto hidden = symm_test::fake_topology(3, 1, [](int g, int h) {
    if (g == 0) return symm_test::hidden_pair;                                 // GPU 0's process sees only GPU 0
    if (h == 0) return g == 1 ? symm_test::pcie_pair : symm_test::hidden_pair; // GPU 1 sees GPU 0; GPU 2 does not
    return symm_test::nvlink_pair;
  });
  CHECK(hidden.link(0, 1) == link_class::pcie);
  CHECK(hidden.link(1, 0) == link_class::pcie);
  CHECK(hidden.link(0, 2) == link_class::unknown);
  CHECK(hidden.link(2, 0) == link_class::unknown);
  CHECK(hidden.link(1, 2) == link_class::nvlink);
  CHECK(hidden.weakest_link(std::vector<int>{0, 2}) == link_class::unknown);
  CHECK(hidden.weakest_link() == link_class::pcie);
  CHECK(hidden.performance_rank(0, 2) == -1);

  // PEs on two nodes (the nvshmem backend): another node is `none`, whatever the facts say.
  const std::vector<symm::detail::gpu_user> nodes{{0, "a", "0000:18:00.0", 1}, {1, "b", "0000:18:00.0", 2}};
  const std::vector<symm::detail::pair_facts> nvlink_facts(4, symm_test::nvlink_pair);
  const auto across = symm::detail::make_topology(nodes, nvlink_facts);
  CHECK(across.link(0, 1) == link_class::none);
  CHECK_FALSE(across.shares_gpu(0, 1)); // the same bus id on another node is another GPU
  CHECK(across.gpu_count() == 2);
  CHECK(across.describe(1) == "PE 1: GPU 0000:18:00.0 of node b; none: 0");
  CHECK_THROWS_AS(symm::detail::make_topology(nodes, std::vector<symm::detail::pair_facts>(3)), symm::error);

  // What travels at start-up: each PE's row over the PEs of its node (as cuda_heap gathers it), expanded to n x n.
  // Node a holds PEs 0, 1, 3 (interleaved with node b's PE 2), each on its own GPU.
  const std::vector<symm::detail::gpu_user> mixed{
      {0, "a", "0000:18:00.0", 1},
      {1, "a", "0000:19:00.0", 2},
      {2, "b", "0000:18:00.0", 3},
      {3, "a", "0000:1a:00.0", 4}};
  const auto by_node = symm::detail::pes_by_node(mixed);
  CHECK(by_node[0] == std::vector<int>{0, 1, 3});
  CHECK(by_node[3] == std::vector<int>{0, 1, 3});
  CHECK(by_node[2] == std::vector<int>{2});
  const std::size_t width = symm::detail::node_row_width(by_node);
  CHECK(width == 3);
  using symm_test::hidden_pair;
  using symm_test::nvlink_pair;
  using symm_test::pcie_pair;
  const std::vector<symm::detail::pair_facts> rows{
      hidden_pair, nvlink_pair, pcie_pair,   // PE 0 of PEs 0, 1, 3
      nvlink_pair, hidden_pair, nvlink_pair, // PE 1
      hidden_pair, hidden_pair, hidden_pair, // PE 2 (alone on node b), padded
      pcie_pair,   nvlink_pair, hidden_pair};
  const auto gathered = symm::detail::make_topology(mixed, symm::detail::facts_from_node_rows(by_node, rows, width));
  CHECK(gathered.link(0, 1) == link_class::nvlink);
  CHECK(gathered.link(0, 3) == link_class::pcie);
  CHECK(gathered.link(3, 0) == link_class::pcie);
  CHECK(gathered.link(1, 3) == link_class::nvlink);
  CHECK(gathered.link(0, 2) == link_class::none);
  CHECK(gathered.link(2, 3) == link_class::none);
  CHECK(gathered.performance_rank(3, 0) == 1);
  CHECK(gathered.describe(0) == "PE 0: GPU 0000:18:00.0 of node a; NVLink: 1 (rank 0); PCIe: 3 (rank 1); none: 2");

  // The host backend: every link `host`, no GPU.
  const auto host = symm::detail::topology::host(3);
  CHECK(host.is_host());
  CHECK(host.n_pes() == 3);
  CHECK(host.link(0, 2) == link_class::host);
  CHECK_FALSE(host.shares_gpu(0, 1));
  CHECK(host.weakest_link() == link_class::host);
  CHECK(host.gpu_count() == 0);
  CHECK(host.describe(1) == "PE 1: host backend, every PE's heap is shared memory of this node (3 PEs)");
}

TEST_CASE("topology: a world on the host backend knows its PEs share host memory", "[world][topology]") {
  REQUIRE_NOTHROW(on_pes(3, [](symm::world& world) {
    const symm::detail::topology& t = world.state()->topology();
    PE_REQUIRE(t.is_host());
    PE_REQUIRE(t.n_pes() == 3);
    PE_REQUIRE(t.link(0, 2) == symm::detail::link_class::host);
    PE_REQUIRE(world.team().state()->links().weakest == symm::detail::link_class::host);
  }));
}

TEST_CASE("MPS: a daemon answers only where its control socket accepts a connection", "[world][device]") {
  char dir_template[] = "/tmp/symm-mps-test.XXXXXX";
  const char* dir = ::mkdtemp(dir_template);
  REQUIRE(dir != nullptr);
  const std::string control = std::string(dir) + "/control";
  const scoped_env pipe_directory({{"CUDA_MPS_PIPE_DIRECTORY", dir}});
  using symm::detail::mps_daemon_reachable;
  CHECK_FALSE(mps_daemon_reachable()); // no socket

  const int listener = ::socket(AF_UNIX, SOCK_SEQPACKET, 0); // as the MPS control daemon's
  REQUIRE(listener >= 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, control.c_str(), control.size() + 1);
  REQUIRE(::bind(listener, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0);
  REQUIRE(::listen(listener, 4) == 0);
  CHECK(mps_daemon_reachable()); // a daemon listens

  ::close(listener); // what `echo quit | nvidia-cuda-mps-control` leaves: the socket file, no daemon
  struct stat info {};
  REQUIRE(::stat(control.c_str(), &info) == 0);
  CHECK_FALSE(mps_daemon_reachable());

  ::unlink(control.c_str());
  const int stream_listener = ::socket(AF_UNIX, SOCK_STREAM, 0); // a listener of another type still answers
  REQUIRE(stream_listener >= 0);
  REQUIRE(::bind(stream_listener, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0);
  REQUIRE(::listen(stream_listener, 4) == 0);
  errno = 0;
  CHECK(mps_daemon_reachable());
  CHECK(errno == 0); // left as it was
  ::close(stream_listener);
  ::unlink(control.c_str());

  std::FILE* plain = std::fopen(control.c_str(), "w"); // a plain file of that name is no socket
  REQUIRE(plain != nullptr);
  std::fclose(plain);
  CHECK_FALSE(mps_daemon_reachable());
  ::unlink(control.c_str());
  ::rmdir(dir);
}

TEST_CASE("the environment: symm reads it in one thread while another sets variables", "[world][env]") {
  // PEs as threads: one PE's thread sets CUDA's variables before CUDA starts while another's reads its launcher's.
  // setenv may move the table that getenv walks; symm's get_env and set_env_default share one lock, so that neither
  // crashes (as a PE did in getenv) nor reads a torn value.
  constexpr int added = 2000;
  const auto name_of = [](int i) { return "SYMM_TEST_ENV_" + std::to_string(i); };
  const std::optional<std::string> path = symm::detail::get_env("PATH");
  REQUIRE(path.has_value());
  std::atomic<bool> started{false}, done{false};
  int reads = 0, wrong = 0;
  std::thread reader([&] {
    started = true;
    while (!done.load()) {
      if (symm::detail::get_env("PATH") != path) ++wrong;
      ++reads;
    }
  });
  while (!started.load()) // so that the reads overlap the writes (without the lock this crashes only by chance)
    std::this_thread::yield();
  for (int i = 0; i < added; ++i)
    symm::detail::set_env_default(name_of(i).c_str(), std::to_string(i).c_str());
  symm::detail::set_env_default(name_of(0).c_str(), "changed"); // a value already set stays
  done = true;
  reader.join();
  CHECK(reads > 0);
  CHECK(wrong == 0);
  for (int i = 0; i < added; ++i) {
    CHECK(symm::detail::get_env(name_of(i).c_str()) == std::to_string(i));
    ::unsetenv(name_of(i).c_str());
  }
}
