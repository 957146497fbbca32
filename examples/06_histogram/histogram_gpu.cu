// A distributed histogram on the GPU. The bins are spread over the PEs; every thread counts values by an atomic
// fetch_add on the PE that owns the value's bin, through the peer mapping (one system-scope atomic instruction).
// PE 0 then gets every PE's bins and compares with a serial count. Run it with `symmrun -n 4 --mps ./histogram_gpu`.
#include <symm/atomic.hpp>
#include <symm/symm.hpp>

#include <cuda_runtime.h>

#include <fmt/format.h>

#include <cstdint>
#include <stdexcept>

#include "histogram.hpp"

__global__ void count(symm::array_ref<std::uint64_t> hist, int me, std::size_t per_pe, unsigned long long* first_hits) {
  unsigned long long firsts = 0;
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < histogram::values_per_pe;
       i += std::size_t{gridDim.x} * blockDim.x) {
    const std::size_t bin = histogram::bin_of(me, i);
    const int owner = static_cast<int>(bin / per_pe);
    if (symm::remote(hist, owner)[bin % per_pe].fetch_add(1, cuda::memory_order_relaxed) == 0) ++firsts;
  }
  if (firsts != 0) atomicAdd(first_hits, firsts);
}

static void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(fmt::format("{}: {}", what, cudaGetErrorString(status)));
}

int main() {
  using namespace histogram;
  symm::world world;
  if (world.backend() != symm::backend::cuda) {
    fmt::print(stderr, "histogram_gpu: no GPU is visible; run the host example histogram instead\n");
    return 2;
  }
  const int me = world.my_pe(), n = world.n_pes();
  const std::size_t per_pe = bins_per_pe(n);
  symm::array<std::uint64_t> hist(world, per_pe), firsts(world, static_cast<std::size_t>(n));
  check(cudaMemset(hist.local().data(), 0, hist.size_bytes()), "cudaMemset");
  check(cudaDeviceSynchronize(), "cudaMemset");
  world.barrier(); // every PE has zeroed its bins before any kernel adds to them

  unsigned long long* first_hits = nullptr;
  check(cudaMalloc(&first_hits, sizeof(*first_hits)), "cudaMalloc");
  check(cudaMemset(first_hits, 0, sizeof(*first_hits)), "cudaMemset");
  count<<<64, 256>>>(hist, me, per_pe, first_hits);
  check(cudaGetLastError(), "count launch");
  check(cudaDeviceSynchronize(), "count");
  unsigned long long mine = 0;
  check(cudaMemcpy(&mine, first_hits, sizeof(mine), cudaMemcpyDeviceToHost), "cudaMemcpy");
  check(cudaFree(first_hits), "cudaFree");
  symm::remote(firsts, 0)[static_cast<std::size_t>(me)] = static_cast<std::uint64_t>(mine); // host-side p
  world.barrier(); // every kernel is done (each PE synchronised before arriving)

  int status = 0;
  if (me == 0) {
    std::vector<std::uint64_t> all;
    for (int pe = 0; pe < n; ++pe) {
      std::vector<std::uint64_t> bins_of_pe = symm::remote(hist, pe); // host-side get from PE pe's GPU memory
      all.insert(all.end(), bins_of_pe.begin(), bins_of_pe.end());
    }
    all.resize(bins);
    const auto expected = serial(n);
    std::uint64_t total = 0, used = 0, firsts_total = 0;
    for (std::uint64_t c : all)
      total += c, used += c != 0 ? 1 : 0;
    for (std::uint64_t f : std::vector<std::uint64_t>(symm::remote(firsts, 0)))
      firsts_total += f;
    if (all == expected && firsts_total == used) {
      fmt::print("histogram: {} PEs, {} values into {} bins: matches the serial count ({} bins used)\n", n, total, bins,
                 used);
    } else {
      fmt::print("histogram: differs from the serial count\n");
      status = 1;
    }
  }
  world.barrier();
  return status;
}
