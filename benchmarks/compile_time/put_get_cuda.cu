// Compile-time benchmark (benchmarks/compile_time.py): examples/01_put_get/put_get_gpu.cu without any communication
// library, the floor of a CUDA program of that shape: a block copies src into dst, the host prints dst[0], a second
// kernel copies it back. One GPU, one process. Only compiled, never run.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

__global__ void fill_and_copy(float* src, float* dst, size_t n) {
  for (size_t i = threadIdx.x; i < n; i += blockDim.x)
    src[i] = static_cast<float>(i);
  __syncthreads();
  for (size_t i = threadIdx.x; i < n; i += blockDim.x)
    dst[i] = src[i];
}

__global__ void copy_back(const float* src, float* landing, size_t n) {
  for (size_t i = threadIdx.x; i < n; i += blockDim.x)
    landing[i] = src[i];
}

static void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(status));
    std::exit(1);
  }
}

int main() {
  constexpr size_t n = 1024;
  float *src = nullptr, *dst = nullptr, *landing = nullptr;
  check(cudaMalloc(&src, n * sizeof(float)), "cudaMalloc src");
  check(cudaMalloc(&dst, n * sizeof(float)), "cudaMalloc dst");
  check(cudaMalloc(&landing, n * sizeof(float)), "cudaMalloc landing");
  fill_and_copy<<<1, 256>>>(src, dst, n);
  check(cudaGetLastError(), "fill_and_copy launch");
  check(cudaDeviceSynchronize(), "fill_and_copy");
  float first = 0;
  check(cudaMemcpy(&first, dst, sizeof first, cudaMemcpyDeviceToHost), "read dst[0]");
  std::printf("dst[0] = %g\n", first);
  copy_back<<<1, 256>>>(dst, landing, n);
  check(cudaDeviceSynchronize(), "copy_back");
  float last = 0;
  check(cudaMemcpy(&last, landing + n - 1, sizeof last, cudaMemcpyDeviceToHost), "read landing[1023]");
  std::printf("got src[1023] = %g\n", last);
  check(cudaFree(landing), "cudaFree landing");
  check(cudaFree(dst), "cudaFree dst");
  check(cudaFree(src), "cudaFree src");
}
