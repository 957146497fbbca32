// expect-compile: ok
// Positive control for the collective_* tests: every collective with well-typed arguments and every kind of operation.
#include <symm/collectives.hpp>

#include <cuda/functional>
#include <cuda/std/functional>

#include <functional>

void f(const symm::team& t, symm::array<float>& fd, symm::array<float>& fs, symm::array<unsigned>& ud,
       symm::array<unsigned>& us, symm::array<int, 8>& sd, symm::array_ref<const int, 8> ss, symm::array<int, 2>& two) {
  symm::broadcast(t, fd, fs, 0);
  symm::fcollect(t, fd, fs);
  symm::alltoall(t, fd, fs);
  symm::reduce(t, fd, fs, symm::plus{}, 0);
  symm::allreduce(t, fd, fd, std::plus<>{});
  symm::allreduce(t, fd, fs, cuda::maximum<>{});
  symm::reduce_scatter(t, fd, fs, symm::min{});
  symm::allreduce(t, ud, us, symm::bit_xor{});
  symm::allreduce(t, ud, us, cuda::std::bit_and<unsigned>{});
  symm::allreduce(t, ud, us, [](unsigned a, unsigned b) { return a + b; });
  symm::allreduce(t, sd, ss, symm::multiplies{});
  symm::fcollect(t, sd, two);
  symm::reduce_scatter(t, two, ss, symm::max{});
}

int main() {
  return 0;
}
