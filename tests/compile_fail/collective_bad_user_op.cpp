// expect-error: static assertion failed: symm reduction: the operation must be callable as op\(a, b\) on two elements
// A user's operation must take two elements and give one.
#include <symm/collectives.hpp>

struct takes_one {
  int operator()(int a) const { return a; }
};

void f(const symm::team& t, symm::array<int>& dst, symm::array<int>& src) {
  symm::allreduce(t, dst, src, takes_one{});
}

int main() {
  return 0;
}
