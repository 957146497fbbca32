// The CUDA consumer (tests/packaging/run.py: CMake with a .cu source, and nvcc with pkg-config's flags): a kernel that
// puts through a device view, compiled by nvcc; the host part runs on the host backend with 2 PEs, and the kernel runs
// only where a GPU is visible (CI has none).
#include <symm/symm.hpp>

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cstdio>

__global__ void put_next(symm::array_ref<int> box, int next, int value) {
  symm::put(cooperative_groups::this_thread_block(), symm::remote(box, next).subspan(0, 1), box.local().subspan(1, 1));
  if (threadIdx.x == 0) box.local()[2] = value;
}

int main() {
  int devices = 0;
  const bool gpu = cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
  symm::world world({.backend = gpu ? symm::backend::cuda : symm::backend::host});
  symm::array<int> box(world, 4);
  const int next = (world.my_pe() + 1) % world.n_pes(), from = (world.my_pe() + world.n_pes() - 1) % world.n_pes();
  if (gpu) {
    symm::remote(box, world.my_pe())[1] = world.my_pe() + 10; // this PE's source element, in device memory
    world.barrier();
    put_next<<<1, 32>>>(box, next, 1);
    if (cudaDeviceSynchronize() != cudaSuccess) return 2;
  } else {
    symm::remote(box, next)[0] = world.my_pe() + 10;
  }
  world.barrier();
  const int got = symm::remote(box, world.my_pe())[0];
  std::printf("hello from a consumer (.cu, %s): PE %d got %d from PE %d: %s\n", gpu ? "kernel put" : "host backend",
              world.my_pe(), got, from, got == from + 10 ? "ok" : "WRONG");
  return got == from + 10 ? 0 : 1;
}
