// World life cycle, launchers' variables, barriers.
#include <symm/symm.hpp>

#include <cstdlib>
#include <optional>
#include <string>

#include "../pe_check.hpp"
#include "catch.hpp"

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

TEST_CASE("a world without launcher variables says which ones it looked for", "[world][errors]") {
  scoped_env clean(
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
  REQUIRE_THROWS_WITH(symm::world{},
                      symm_test::contains_substring("no launcher found") && symm_test::contains_substring("symmrun") &&
                          symm_test::contains_substring("OMPI_COMM_WORLD_RANK"));
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
  REQUIRE_THROWS_WITH(symm::barrier_all(), symm_test::contains_substring("no symm::world alive"));
  REQUIRE_THROWS_WITH(symm::quiet(), symm_test::contains_substring("no symm::world alive"));
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
