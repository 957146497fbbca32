// tests/gpu/gpu_main.cu: main() of the GPU suite. Without a usable GPU it prints why and exits 77, which Meson counts
// as skipped. The probe runs in a child process: this process must not initialise CUDA, because the tests fork PEs.
#include "gpu_support.cuh"

#if __has_include(<catch2/catch_session.hpp>)
#  include <catch2/catch_session.hpp>
#else
#  define CATCH_CONFIG_RUNNER
#  include <catch2/catch.hpp>
#endif

#include <cstdio>

int main(int argc, char** argv) {
  int devices = symm_gpu_test::probe_device_count();
  if (devices <= 0) {
    std::printf("SKIP: no CUDA device is visible, so the gpu suite cannot run here (it runs on a GPU machine: "
                "meson test --suite gpu)\n");
    return 77;
  }
  std::printf("gpu suite: %d CUDA device(s) visible\n", devices);
  return Catch::Session().run(argc, argv);
}
