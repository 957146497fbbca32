// expect-error: static assertion failed: symm reduction: plus, multiplies, min and max reduce arithmetic element types
// other than bool Summing bools does not compile (use bit_or for "any", bit_and for "all").
#include <symm/collectives.hpp>

void any(const symm::team& t, symm::array<bool>& dst, symm::array<bool>& src) {
  symm::allreduce(t, dst, src, symm::plus{});
}

int main() {
  return 0;
}
