// symmrun_probe: a PE for the symmrun tests. It records what a PE sees, then does what it is told.
//
//   symmrun_probe OUTDIR [--exit K:CODE] [--raise K:SIGNAL] [--sleep SECONDS] [--ignore-term] [--child]
//                        [--lines COUNT] [--partial TEXT]
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
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
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

} // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    die("usage: symmrun_probe OUTDIR [options]");
  }
  const fs::path outdir = argv[1];
  const int pe = std::stoi(env_or("SYMM_PE", "-1"));
  const int npes = std::stoi(env_or("SYMM_N_PES", "0"));
  std::pair<int, int> exit_with{-1, 0};
  std::pair<int, int> raise_signal{-1, 0};
  double sleep_seconds = 0;
  bool child = false;
  int lines = 0;
  std::string partial;
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
  const fs::path file = outdir / ("pe-" + std::to_string(pe) + ".txt");
  const fs::path temporary = outdir / ("pe-" + std::to_string(pe) + ".tmp");
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
