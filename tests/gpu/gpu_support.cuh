// tests/gpu/gpu_support.cuh: helpers of the GPU suite: the device probe, running a body on n PEs as processes and
// as threads (threads run inside a forked child, so that the test process itself never initialises CUDA and can keep
// forking), and checked CUDA calls inside PEs.
#pragma once

#include <symm/symm.hpp>

#include <cuda_runtime.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string_view>

#include "../pe_check.hpp"

#define GPU_CHECK(call)                                                                                                \
  do {                                                                                                                 \
    cudaError_t gpu_status_ = (call);                                                                                  \
    if (gpu_status_ != cudaSuccess) {                                                                                  \
      throw std::runtime_error(                                                                                        \
          ::fmt::format("{}:{}: {} failed: {}", __FILE__, __LINE__, #call, cudaGetErrorString(gpu_status_)));          \
    }                                                                                                                  \
  } while (0)

namespace symm_gpu_test {

//! Device count, asked in a child process so that this one stays free of CUDA state.
inline int probe_device_count() {
  pid_t pid = ::fork();
  if (pid == 0) {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) count = 0;
    ::_exit(count > 100 ? 100 : count);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 0;
}

//! The backend this build of the suite tests: symm_gpu_tests the cuda backend, symm_gpu_tests_nvshmem (the same sources
//! built with SYMM_ENABLE_NVSHMEM=1) the nvshmem backend.
inline constexpr symm::backend tested_backend = SYMM_NVSHMEM_BACKEND() ? symm::backend::nvshmem : symm::backend::cuda;
//! NVSHMEM has one PE per process: the nvshmem build runs PEs as processes only.
inline constexpr bool pes_as_threads = tested_backend != symm::backend::nvshmem;

inline symm::world_options gpu_options() {
  symm::world_options options;
  options.backend = tested_backend;
  options.heap_size = std::size_t{64} << 20;
  return options;
}

//! Whether this run starts PEs in `mode` ("processes" or "threads"): both unless SYMM_GPU_TEST_MODES names one, so
//! that a compute-sanitizer run can check the two apart.
inline bool runs_mode(std::string_view mode) {
  const char* only = std::getenv("SYMM_GPU_TEST_MODES");
  if (only == nullptr || *only == '\0' || std::string_view(only) == "both") return true;
  if (std::string_view(only) != "processes" && std::string_view(only) != "threads") {
    throw std::runtime_error(fmt::format("SYMM_GPU_TEST_MODES is '{}': it must be processes, threads or both", only));
  }
  return std::string_view(only) == mode;
}

//! The same body on n PEs: as processes, then (except on the nvshmem backend) as threads of one (forked) process
//! sharing the CUDA context.
//!
//! PEs that share a GPU share a context too (threads of one process, or processes under MPS), and some CUDA calls
//! wait for the kernels of the whole context (cudaDeviceSynchronize, cudaFree, and at times cudaMalloc or stream
//! creation). A PE still in such a call while its peers' kernels wait for its own kernel deadlocks. The tests therefore
//! finish their CUDA set-up on every PE, then pass a host barrier, then launch kernels that wait for other PEs.
template <class Fn>
void on_gpu_pes(int n, Fn body, symm::world_options options = gpu_options()) {
  if (runs_mode("processes")) symm::launch(n, body, {.mode = symm::launch_mode::processes, .world = options});
  if (pes_as_threads && runs_mode("threads")) {
    symm::launch(1, [&] { symm::launch(n, body, {.mode = symm::launch_mode::threads, .world = options}); });
  }
}

//! A job of n PEs in `mode` that is meant to fail (one PE dies or gives up): threads in a forked child, so that this
//! process stays free of CUDA, as on_gpu_pes runs them. The job's error is swallowed: the caller checks what the PEs
//! recorded (how the surviving PE's wait ended).
template <class Fn>
void run_failing_job(int n, symm::launch_mode mode, Fn body, symm::world_options options = gpu_options()) {
  try {
    if (mode == symm::launch_mode::threads) {
      symm::launch(1, [&] {
        try {
          symm::launch(n, body, {.mode = mode, .world = options});
        } catch (const std::exception&) {
        }
      });
    } else {
      symm::launch(n, body, {.mode = mode, .world = options});
    }
  } catch (const std::exception&) {
  }
}

//! cudaMemset, finished before returning: a memset still queued when a peer's put lands would overwrite it.
inline void fill_now(void* device, int byte, std::size_t bytes) {
  GPU_CHECK(cudaMemset(device, byte, bytes));
  GPU_CHECK(cudaDeviceSynchronize());
}

template <class T>
T* device_copy_of(const std::vector<T>& host) {
  T* d = nullptr;
  GPU_CHECK(cudaMalloc(&d, host.size() * sizeof(T)));
  GPU_CHECK(cudaMemcpy(d, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

template <class T>
std::vector<T> host_copy_of(const T* device, std::size_t n) {
  std::vector<T> host(n);
  GPU_CHECK(cudaMemcpy(host.data(), device, n * sizeof(T), cudaMemcpyDeviceToHost));
  return host;
}

//! Copies this PE's part of a symmetric array to the host.
template <class T, std::size_t E>
std::vector<T> local_to_host(const symm::array<T, E>& a) {
  return host_copy_of(a.local().data(), a.size());
}
template <class T, std::size_t E>
void host_to_local(const symm::array<T, E>& a, const std::vector<T>& values) {
  GPU_CHECK(cudaMemcpy(a.local().data(), values.data(), values.size() * sizeof(T), cudaMemcpyHostToDevice));
}

} // namespace symm_gpu_test
