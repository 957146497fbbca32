// One kernel template, three element types: neighbour_sum<T> (neighbour_sum.cu, a separate translation unit, linked
// without -rdc) adds each element of the left and right neighbours' arrays to this PE's. The same program runs it for
// float, double and int and checks every element on the host. Run it with `symmrun -n 2 --mps ./generic_kernel`.
#include <symm/symm.hpp>

#include <cuda_runtime.h>

#include <fmt/format.h>

#include <cstdio>
#include <stdexcept>
#include <vector>

#include "neighbour_sum.cuh"

namespace {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(fmt::format("{}: {}", what, cudaGetErrorString(status)));
}

// Value of element i on PE pe: small integers, so that float and double sums are exact too.
template <class T>
T value(int pe, std::size_t i) {
  return static_cast<T>((pe + 1) * static_cast<int>(i % 10));
}

//! Runs neighbour_sum<T> on every PE; returns how many elements of this PE's result are wrong.
template <class T>
std::size_t run(symm::world& world, std::size_t count) {
  const int me = world.my_pe(), n = world.n_pes();
  const int left = (me + n - 1) % n, right = (me + 1) % n;
  symm::array<T> in(world, count), out(world, count);

  std::vector<T> host(count);
  for (std::size_t i = 0; i < count; ++i)
    host[i] = value<T>(me, i);
  check(cudaMemcpy(in.local().data(), host.data(), count * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy");
  world.barrier(); // every PE's `in` is filled before anyone reads it

  neighbour_sum<T>(in, out, left, right, nullptr); // symm::array converts to the views the kernel takes
  check(cudaGetLastError(), "neighbour_sum launch");
  check(cudaDeviceSynchronize(), "neighbour_sum");

  std::vector<T> got = symm::remote(out, me); // a host-side get of this PE's own device memory
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < count; ++i) {
    if (got[i] != value<T>(left, i) + value<T>(me, i) + value<T>(right, i)) ++wrong;
  }
  world.barrier(); // nobody frees `in` (at the end of this scope) while a neighbour may still read it
  return wrong;
}

} // namespace

int main() {
  symm::world world;
  if (world.backend() != symm::backend::cuda) {
    fmt::print(stderr, "generic_kernel: no GPU is visible; this example needs one\n");
    return 2;
  }
  const int me = world.my_pe(), n = world.n_pes();
  constexpr std::size_t count = 100000;
  const std::size_t wrong_float = run<float>(world, count);
  const std::size_t wrong_double = run<double>(world, count);
  const std::size_t wrong_int = run<int>(world, count);
  const bool good = wrong_float == 0 && wrong_double == 0 && wrong_int == 0;
  if (!good) {
    std::fprintf(stderr, "generic_kernel: PE %d: wrong elements: float %zu, double %zu, int %zu\n", me, wrong_float,
                 wrong_double, wrong_int);
  }

  symm::array<int> ok(world, static_cast<std::size_t>(n));
  symm::remote(ok, 0)[static_cast<std::size_t>(me)] = good ? 1 : 0;
  world.barrier();
  int failures = 0;
  if (me == 0) {
    std::vector<int> flags = symm::remote(ok, 0);
    for (int f : flags)
      failures += f == 1 ? 0 : 1;
    if (failures == 0) {
      fmt::print("generic_kernel: neighbour_sum<float>, <double> and <int> correct on all {} PEs ({} elements each)\n",
                 n, count);
    } else {
      fmt::print("generic_kernel: {} of {} PEs got wrong sums\n", failures, n);
    }
  }
  world.barrier();
  return good && failures == 0 ? 0 : 1;
}
