// The put/get example on the GPU: PE 0's kernel fills its src and puts it into PE 1's dst with one block; PE 1 prints
// dst[0]; then PE 1's kernel gets PE 0's src. Run it with `symmrun -n 2 --mps ./put_get_gpu` (several PEs on one GPU
// need the MPS daemon to run their kernels concurrently; this example works without it too, only slower).
#include <symm/symm.hpp>

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <fmt/format.h>

namespace cg = cooperative_groups;

__global__ void fill_and_put(symm::array_ref<float> src, symm::array_ref<float> dst, int target) {
  auto block = cg::this_thread_block();
  auto local = src.local();
  for (unsigned i = block.thread_rank(); i < local.size(); i += block.num_threads())
    local[i] = static_cast<float>(i);
  block.sync();
  symm::put(block, symm::remote(dst, target), local); // block-cooperative put, 16-byte stores into PE 1's mapping
}

__global__ void get_back(symm::array_ref<float> src, symm::array_ref<float> landing, int from) {
  symm::get(cg::this_thread_block(), landing.local(), symm::remote(src, from));
}

static void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(fmt::format("{}: {}", what, cudaGetErrorString(status)));
}

int main() {
  symm::world world; // picks the cuda backend when a GPU is visible
  if (world.backend() != symm::backend::cuda) {
    fmt::print(stderr, "put_get_gpu: no GPU is visible; run the host example put_get instead\n");
    return 2;
  }
  symm::array<float> src(world, 1024), dst(world, 1024), landing(world, 1024);
  if (world.my_pe() == 0) {
    fill_and_put<<<1, 256>>>(src, dst, 1);
    check(cudaGetLastError(), "fill_and_put launch");
    check(cudaDeviceSynchronize(), "fill_and_put");
  }
  world.barrier(); // quiet + barrier: PE 0's kernel is done, so its puts are visible on PE 1
  if (world.my_pe() == 1) {
    float first = symm::remote(dst, 1)[0]; // a host-side g of this PE's own element (device memory)
    fmt::print("dst[0] = {}\n", first);
    get_back<<<1, 256>>>(src, landing, 0);
    check(cudaDeviceSynchronize(), "get_back");
    float last = symm::remote(landing, 1)[1023];
    fmt::print("PE 1 got src[1023] = {} from PE 0\n", last);
  }
  world.barrier();
}
