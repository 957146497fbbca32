// The generic kernel: one template over the element type, instantiated for float, double and int.
#include <cooperative_groups.h>

#include <type_traits>

#include "neighbour_sum.cuh"

namespace cg = cooperative_groups;

// What makes passing views by value work: they are trivially copyable, so a kernel launch copies their bytes (offset,
// extent, a pointer to the device-side peer table) like any int argument.
static_assert(std::is_trivially_copyable_v<symm::array_ref<const float>>);
static_assert(std::is_trivially_copyable_v<symm::pe_span<double>>);

template <class T>
__global__ void neighbour_sum_kernel(symm::array_ref<const T> in, symm::array_ref<T> out, int left, int right) {
  static_assert(symm::transportable<T>, "symmetric element types are trivially copyable");
  // Each block brings a tile of the right neighbour's `in` into shared memory with one block-scoped get, and reads the
  // left neighbour's elements one at a time (each a load through the peer mapping).
  constexpr unsigned tile = 256;
  __shared__ T from_right[tile];
  auto block = cg::this_thread_block();
  auto mine = in.local();
  auto result = out.local();
  for (std::size_t base = std::size_t{blockIdx.x} * tile; base < mine.size(); base += std::size_t{gridDim.x} * tile) {
    const std::size_t count = mine.size() - base < tile ? mine.size() - base : tile;
    symm::get(block, cuda::std::span<T>(from_right, count), symm::remote(in, right).subspan(base, count));
    block.sync(); // each thread copied a share of the tile; all of it is needed below
    for (std::size_t k = block.thread_rank(); k < count; k += block.num_threads()) {
      const T from_left = symm::remote(in, left)[base + k]; // a g: pe_ref<const T> converts to T
      result[base + k] = from_left + mine[base + k] + from_right[k];
    }
    block.sync(); // the tile is reused by the next round
  }
}

template <class T>
void neighbour_sum(symm::array_ref<const T> in, symm::array_ref<T> out, int left, int right, cudaStream_t stream) {
  neighbour_sum_kernel<T><<<8, 256, 0, stream>>>(in, out, left, right);
}

template void neighbour_sum<float>(symm::array_ref<const float>, symm::array_ref<float>, int, int, cudaStream_t);
template void neighbour_sum<double>(symm::array_ref<const double>, symm::array_ref<double>, int, int, cudaStream_t);
template void neighbour_sum<int>(symm::array_ref<const int>, symm::array_ref<int>, int, int, cudaStream_t);
