// expect-error: static assertion failed: symm::allreduce: dst and src have static extents that differ
// Static extents are checked at compile time.
#include <symm/collectives.hpp>

void f(const symm::team& t, symm::array<float, 8>& dst, symm::array<float, 4>& src) {
  symm::allreduce(t, dst, src, symm::plus{});
}

int main() {
  return 0;
}
