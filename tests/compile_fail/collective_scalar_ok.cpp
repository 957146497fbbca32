// expect-compile: ok
// symm::scalar and scalar_ref are collective buffers of one element (NVSHMEM's one-element buffers), alone or with
// arrays; the positive control of collective_scalar_const_dst.cpp.
#include <symm/collectives.hpp>

void f(const symm::team& t, symm::scalar<int>& s, symm::scalar_ref<int> r, const symm::scalar<int>& c,
       symm::array<int>& a) {
  symm::allreduce(t, s, s, symm::plus{});
  symm::allreduce(t, r, c, symm::max{});
  symm::broadcast(t, s, r, 0);
  symm::reduce(t, r, s.ref(), symm::plus{}, 0);
  symm::fcollect(t, a, c);
  symm::reduce_scatter(t, s, a, symm::plus{});
  symm::allreduce(t, a, s, symm::plus{}); // extents checked at run time, as with array<int>
}

int main() {
  return 0;
}
