// tests/gpu/gpu_main.cu: main() of the GPU suite. Without a usable GPU it prints why and exits 77, which Meson counts
// as skipped. The probe runs in a child process: this process must not initialise CUDA, because the tests fork PEs.
#include "gpu_support.cuh"

#if __has_include(<catch2/catch_session.hpp>)
#  include <catch2/catch_session.hpp>
#else
#  define CATCH_CONFIG_RUNNER
#  include <catch2/catch.hpp>
#endif

#include <execinfo.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>

namespace {
//! A PE that crashes prints where (the PEs are forked from this process, so they inherit the handler), then dies of
//! the same signal, which symm::launch reports.
void print_crash_site(int sig) {
  void* frames[64];
  const int n = ::backtrace(frames, 64);
  char line[96];
  const int len = std::snprintf(line, sizeof line, "gpu suite: pid %d got signal %d; backtrace:\n", ::getpid(), sig);
  if (len > 0) (void) !::write(STDERR_FILENO, line, static_cast<std::size_t>(len));
  ::backtrace_symbols_fd(frames, n, STDERR_FILENO);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}
} // namespace

int main(int argc, char** argv) {
  void* warm_up[1];
  (void) ::backtrace(warm_up, 1); // loads what backtrace needs now, not inside the handler
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL})
    std::signal(sig, print_crash_site);
  int devices = symm_gpu_test::probe_device_count();
  if (devices <= 0) {
    std::printf("SKIP: no CUDA device is visible, so the gpu suite cannot run here (it runs on a GPU machine: "
                "meson test --suite gpu)\n");
    return 77;
  }
  std::printf("gpu suite: %d CUDA device(s) visible\n", devices);
  return Catch::Session().run(argc, argv);
}
