// Compile-time benchmark (benchmarks/compile_time.py): examples/01_put_get/put_get_gpu.cu written against NVSHMEM,
// the same steps: PE 0's kernel fills src and puts it into PE 1's dst with one block; PE 1 prints dst[0] and gets
// PE 0's src back. Only compiled (nvcc -rdc=true -c), never linked or run: NVSHMEM's device functions are extern.
#include <cuda_runtime.h>

#include <nvshmem.h>
#include <nvshmemx.h>

#include <cstdio>
#include <cstdlib>

__global__ void fill_and_put(float* src, float* dst, size_t n, int target) {
  for (size_t i = threadIdx.x; i < n; i += blockDim.x)
    src[i] = static_cast<float>(i);
  __syncthreads();
  nvshmemx_float_put_block(dst, src, n, target); // block-cooperative put into PE 1's dst
}

__global__ void get_back(float* src, float* landing, size_t n, int from) {
  nvshmemx_float_get_block(landing, src, n, from);
}

static void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(status));
    std::exit(1);
  }
}

int main() {
  nvshmem_init();
  check(cudaSetDevice(nvshmem_team_my_pe(NVSHMEMX_TEAM_NODE)), "cudaSetDevice");
  constexpr size_t n = 1024;
  auto* src = static_cast<float*>(nvshmem_malloc(n * sizeof(float)));
  auto* dst = static_cast<float*>(nvshmem_malloc(n * sizeof(float)));
  auto* landing = static_cast<float*>(nvshmem_malloc(n * sizeof(float)));
  if (nvshmem_my_pe() == 0) {
    fill_and_put<<<1, 256>>>(src, dst, n, 1);
    check(cudaGetLastError(), "fill_and_put launch");
    check(cudaDeviceSynchronize(), "fill_and_put");
  }
  nvshmem_barrier_all(); // quiet + barrier: PE 0's puts are visible on PE 1
  if (nvshmem_my_pe() == 1) {
    float first = 0;
    check(cudaMemcpy(&first, dst, sizeof first, cudaMemcpyDeviceToHost), "read dst[0]");
    std::printf("dst[0] = %g\n", first);
    get_back<<<1, 256>>>(src, landing, n, 0);
    check(cudaDeviceSynchronize(), "get_back");
    float last = 0;
    check(cudaMemcpy(&last, landing + n - 1, sizeof last, cudaMemcpyDeviceToHost), "read landing[1023]");
    std::printf("PE 1 got src[1023] = %g from PE 0\n", last);
  }
  nvshmem_barrier_all();
  nvshmem_free(landing);
  nvshmem_free(dst);
  nvshmem_free(src);
  nvshmem_finalize();
}
