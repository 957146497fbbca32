// expect-error: static assertion failed: symm reduction: bit_and, bit_or and bit_xor reduce integral element types only
// CCCL's and the standard library's function objects are recognised and checked like symm's own.
#include <symm/collectives.hpp>

#include <cuda/std/functional>

void scatter_bits(const symm::team& t, symm::array<double>& dst, symm::array<double>& src) {
  symm::reduce_scatter(t, dst, src, cuda::std::bit_xor<>{});
}

int main() {
  return 0;
}
