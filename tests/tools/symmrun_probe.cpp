// symmrun_probe: a PE for the symmrun tests. It records what a PE sees, then does what it is told.
//
//   symmrun_probe OUTDIR [--exit K:CODE] [--raise K:SIGNAL] [--sleep SECONDS] [--ignore-term] [--child]
//                        [--lines COUNT] [--partial TEXT] [--symm OPERATION [--fault K:HOW]]
//
// Every PE first writes OUTDIR/pe-<SYMM_PE>.txt (atomically, via rename) with KEY=VALUE lines: its pid
// and process group, the SYMM_* and CUDA_MPS_* variables, the mode and owner of SYMM_JOB_DIR, and with
// --child the pid of a child it started. Then:
//   --exit K:CODE     PE K exits with CODE once every PE has written its file;
//   --raise K:SIGNAL  PE K kills itself with signal number SIGNAL once every PE has written its file;
//   --sleep SECONDS   the other PEs sleep this long, then exit 0;
//   --ignore-term     SIGTERM is ignored (to see symmrun escalate to SIGKILL);
//   --child           a child process that sleeps 60 s is started first (to see it taken down too);
//   --lines COUNT     COUNT lines go to stdout and to stderr, each in three write() calls with pauses,
//                     so that a relay that is not line-buffered would mix lines of different PEs;
//   --partial TEXT    TEXT is written to stdout last, without a newline.
//   --symm OPERATION  then every PE joins a symm world (host backend) and, after a first barrier, calls
//                     OPERATION: barrier (world.barrier()), allreduce (symm::allreduce on the world team) or
//                     wait (symm::wait_until on a flag nobody sets); with no --fault the flag is set and
//                     every PE finishes. A symm::error is printed and ends the PE with status 3.
//   --fault K:HOW     PE K, instead of OPERATION, waits until the others are in it, writes
//                     OUTDIR/fault.txt (CLOCK_MONOTONIC seconds) and ends by HOW: exit (_exit(5)), exit0
//                     (_exit(0): its world is never finalized), abort, kill (SIGKILL), global_exit
//                     (symm::global_exit(7)) or global_exit0 (symm::global_exit(0)).
#include <symm/symm.hpp>

#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

[[noreturn]] void die(const std::string& message) {
  std::fprintf(stderr, "symmrun_probe: %s\n", message.c_str());
  std::exit(99);
}

std::string env_or(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : fallback;
}

int int_or(const std::string& text, int fallback) {
  try {
    return std::stoi(text);
  } catch (const std::exception&) {
    return fallback;
  }
}

// "K:VALUE" -> {K, VALUE}
std::pair<int, int> pe_and_value(std::string_view text) {
  const auto colon = text.find(':');
  if (colon == std::string_view::npos) {
    die("expected K:VALUE, got " + std::string(text));
  }
  return {std::stoi(std::string(text.substr(0, colon))), std::stoi(std::string(text.substr(colon + 1)))};
}

void write_fragment(int fd, const std::string& text) {
  if (::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    die("short write");
  }
}

double monotonic_seconds() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now); // what Python's time.monotonic() reads
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

// OPERATION, by a PE that does not fault.
void run_operation(symm::world& world, const std::string& operation, symm::array<std::int64_t>& src,
                   symm::array<std::int64_t>& dst, symm::scalar<std::int32_t>& flag, int fault_pe) {
  if (operation == "barrier") {
    world.barrier();
  } else if (operation == "job_mark") {
    // Each PE writes its job's mark (PROBE_JOB_MARK) into its slot on every PE: a world that mixed the PEs of two
    // jobs shows a foreign mark somewhere.
    const std::int64_t mark = std::stoll(env_or("PROBE_JOB_MARK", "0"));
    const auto me = static_cast<std::size_t>(world.my_pe());
    for (int p = 0; p < world.n_pes(); ++p) {
      symm::remote(dst, p)[me] = mark;
    }
    world.barrier();
    for (int p = 0; p < world.n_pes(); ++p) {
      if (dst.local()[static_cast<std::size_t>(p)] != mark) {
        die("mixed worlds: PE " + std::to_string(p) + " of this world has job mark " +
            std::to_string(dst.local()[static_cast<std::size_t>(p)]) + ", this PE's job has " + std::to_string(mark));
      }
    }
  } else if (operation == "allreduce") {
    symm::allreduce(world.team(), dst, src, symm::plus{});
    const std::int64_t n = world.n_pes();
    if (dst.local()[0] != n * (n + 1) / 2) {
      die("allreduce gave " + std::to_string(dst.local()[0]));
    }
  } else {
    if (fault_pe < 0) {
      symm::remote(flag, (world.my_pe() + 1) % world.n_pes()).store(1);
    }
    symm::wait_until(flag, symm::cmp::eq, 1);
  }
}

// --symm: one world, a first barrier, then OPERATION; PE `fault_pe` ends by `fault_how` while the others are in it.
int run_symm(const fs::path& outdir, const std::string& operation, int fault_pe, const std::string& fault_how) {
  if (operation == "mismatched_free") {
    // Each PE prints (stdout is a pipe: fully buffered), then frees two arrays in the other PEs' opposite order. The
    // agreement check fails in a destructor, which ends the PE; what it printed must still come out.
    symm::world world({.backend = symm::backend::host, .heap_size = std::size_t{1} << 20});
    std::optional<symm::array<int>> x(std::in_place, world, 4), y(std::in_place, world, 4);
    std::printf("PE %d printed this before the fatal error\n", world.my_pe());
    if (world.my_pe() == 0) {
      x.reset();
    } else {
      y.reset();
    }
    return 0;
  }
  if (operation == "extra_barrier") {
    // PE 0's extra barrier pairs with the others' finalize barrier; PE 0's own finalize then finds them gone.
    try {
      symm::world world({.backend = symm::backend::host, .heap_size = std::size_t{1} << 20});
      if (world.my_pe() == 0) {
        world.barrier();
      }
    } catch (const symm::error& e) {
      std::fprintf(stderr, "symmrun_probe: %s\n", e.what());
      return 3;
    }
    return 0;
  }
  bool printed = false;
  try {
    symm::world world({.backend = symm::backend::host, .heap_size = std::size_t{1} << 20});
    const int me = world.my_pe();
    symm::array<std::int64_t> src(world, 8);
    symm::array<std::int64_t> dst(world, 8);
    symm::scalar<std::int32_t> flag(world);
    flag.local() = 0;
    for (auto& v : src.local()) {
      v = me + 1;
    }
    world.barrier();
    if (me == fault_pe) {
      // The others are past the first barrier; give them a moment to be asleep inside OPERATION.
      std::this_thread::sleep_for(200ms);
      std::ofstream(outdir / "fault.tmp") << std::to_string(monotonic_seconds()) << "\n";
      fs::rename(outdir / "fault.tmp", outdir / "fault.txt");
      // _exit: no atexit handlers, which under LeakSanitizer would change the status.
      if (fault_how == "exit") {
        std::_Exit(5);
      } else if (fault_how == "exit0") {
        std::_Exit(0);
      } else if (fault_how == "global_exit") {
        symm::global_exit(7);
      } else if (fault_how == "global_exit0") {
        symm::global_exit(0);
      } else if (fault_how == "abort") {
        const rlimit no_core{0, 0}; // a core dump would only slow the test down
        ::setrlimit(RLIMIT_CORE, &no_core);
        std::abort();
      } else {
        ::kill(::getpid(), SIGKILL);
      }
      std::this_thread::sleep_for(10s); // not reached
    }
    try { // print before the world's destructor marks this PE failed, which may end the others first
      run_operation(world, operation, src, dst, flag, fault_pe);
    } catch (const symm::error& e) {
      std::fprintf(stderr, "symmrun_probe: %s\n", e.what());
      printed = true;
      throw;
    }
    world.barrier();
  } catch (const symm::error& e) {
    if (!printed) {
      std::fprintf(stderr, "symmrun_probe: %s\n", e.what());
    }
    return 3;
  }
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    die("usage: symmrun_probe OUTDIR [options]");
  }
  const fs::path outdir = argv[1];
  // Garbage in these (tests of symm's own checks run the probe without symmrun) reads as "none".
  const int pe = int_or(env_or("SYMM_PE", "-1"), -1);
  const int npes = int_or(env_or("SYMM_N_PES", "0"), 0);
  std::pair<int, int> exit_with{-1, 0};
  std::pair<int, int> raise_signal{-1, 0};
  double sleep_seconds = 0;
  bool child = false;
  int lines = 0;
  std::string partial;
  std::string operation;
  int fault_pe = -1;
  std::string fault_how;
  for (int i = 2; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const auto value = [&] {
      if (i + 1 >= argc) {
        die(std::string(arg) + " needs a value");
      }
      return std::string(argv[++i]);
    };
    if (arg == "--exit") {
      exit_with = pe_and_value(value());
    } else if (arg == "--raise") {
      raise_signal = pe_and_value(value());
    } else if (arg == "--sleep") {
      sleep_seconds = std::stod(value());
    } else if (arg == "--ignore-term") {
      std::signal(SIGTERM, SIG_IGN);
    } else if (arg == "--child") {
      child = true;
    } else if (arg == "--lines") {
      lines = std::stoi(value());
    } else if (arg == "--partial") {
      partial = value();
    } else if (arg == "--symm") {
      operation = value();
      if (operation != "barrier" && operation != "allreduce" && operation != "wait" && operation != "job_mark" &&
          operation != "extra_barrier" && operation != "mismatched_free") {
        die("unknown --symm operation " + operation);
      }
    } else if (arg == "--fault") {
      const std::string text = value();
      const auto colon = text.find(':');
      if (colon == std::string::npos) {
        die("expected --fault K:HOW, got " + text);
      }
      fault_pe = std::stoi(text.substr(0, colon));
      fault_how = text.substr(colon + 1);
      if (fault_how != "exit" && fault_how != "exit0" && fault_how != "abort" && fault_how != "kill" &&
          fault_how != "global_exit" && fault_how != "global_exit0") {
        die("unknown --fault kind " + fault_how);
      }
    } else {
      die("unknown option " + std::string(arg));
    }
  }

  pid_t child_pid = 0;
  if (child) {
    child_pid = ::fork();
    if (child_pid == 0) {
      std::this_thread::sleep_for(60s);
      std::_Exit(0);
    }
  }

  std::string report;
  const auto add = [&](std::string_view key, const std::string& value) {
    report += std::string(key) + "=" + value + "\n";
  };
  add("pid", std::to_string(::getpid()));
  add("pgid", std::to_string(::getpgrp()));
  if (child) {
    add("child", std::to_string(child_pid));
  }
  for (const char* name : {"SYMM_PE", "SYMM_N_PES", "SYMM_LOCAL_PE", "SYMM_LOCAL_N_PES", "SYMM_JOB_DIR",
                           "SYMM_JOB_TOKEN", "SYMM_DEVICE", "CUDA_MPS_PIPE_DIRECTORY", "CUDA_MPS_LOG_DIRECTORY"}) {
    if (const char* value = std::getenv(name)) {
      add(name, value);
    }
  }
  struct stat job_dir {};
  if (::lstat(env_or("SYMM_JOB_DIR", "").c_str(), &job_dir) == 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(job_dir.st_mode & 07777));
    add("job_dir_mode", mode);
    add("job_dir_uid", std::to_string(job_dir.st_uid));
    add("job_dir_is_dir", S_ISDIR(job_dir.st_mode) ? "1" : "0");
  }
  // Started without symmrun (several processes with no SYMM_PE): one report per process.
  const std::string name = pe >= 0 ? "pe-" + std::to_string(pe) : "process-" + std::to_string(::getpid());
  const fs::path file = outdir / (name + ".txt");
  const fs::path temporary = outdir / (name + ".tmp");
  std::ofstream(temporary) << report;
  fs::rename(temporary, file);

  for (int line = 0; line < lines; ++line) {
    for (const int fd : {STDOUT_FILENO, STDERR_FILENO}) {
      write_fragment(fd, "pe " + std::to_string(pe) + " line " + std::to_string(line) + " ");
      std::this_thread::sleep_for(100us);
      write_fragment(fd, "aaaa ");
      std::this_thread::sleep_for(100us);
      write_fragment(fd, "bbbb\n");
    }
  }
  if (!partial.empty()) {
    write_fragment(STDOUT_FILENO, partial);
  }

  if (!operation.empty()) {
    return run_symm(outdir, operation, fault_pe, fault_how);
  }

  if (pe == exit_with.first || pe == raise_signal.first) {
    // Act only when every PE is known to be running, so the tests can check that all were taken down.
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    for (int pe_files = 0; pe_files < npes && std::chrono::steady_clock::now() < deadline;) {
      pe_files = 0;
      for (const auto& entry : fs::directory_iterator(outdir)) {
        pe_files += entry.path().extension() == ".txt" ? 1 : 0;
      }
      std::this_thread::sleep_for(5ms);
    }
    if (pe == raise_signal.first) {
      ::kill(::getpid(), raise_signal.second);
      std::this_thread::sleep_for(10s); // not reached for a fatal signal
    }
    return exit_with.second;
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(sleep_seconds));
  return 0;
}
