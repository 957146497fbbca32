// expect-error: symm::allreduce: dst and src have static extents that differ
// A symm::scalar is an array of static extent 1: with a symm::array<T, 4> the extents differ at compile time.
#include <symm/collectives.hpp>

void f(const symm::team& t, symm::array<int, 4>& dst, symm::scalar<int>& src) {
  symm::allreduce(t, dst, src, symm::plus{});
}

int main() {
  return 0;
}
