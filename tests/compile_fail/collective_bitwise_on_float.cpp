// expect-error: static assertion failed: symm reduction: bit_and, bit_or and bit_xor reduce integral element types only
// A bitwise reduction of floats does not compile: a float has no bitwise and.
#include <symm/collectives.hpp>

void sum_bits(const symm::team& t, symm::array<float>& dst, symm::array<float>& src) {
  symm::allreduce(t, dst, src, symm::bit_and{});
}

int main() {
  return 0;
}
