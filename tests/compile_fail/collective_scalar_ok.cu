// expect-compile: ok
// collective_scalar_ok.cpp compiled by nvcc, plus the device forms on scalar_ref (alone, and with array_ref for
// fcollect and reduce_scatter) and the stream forms on symm::scalar.
#include <cooperative_groups.h>

#include "collective_scalar_ok.cpp"

namespace {

__global__ void scalar_collectives(symm::team_ref t, symm::scalar_ref<double> s, symm::scalar_ref<const double> c,
                                   symm::array_ref<double> a) {
  auto block = cooperative_groups::this_thread_block();
  symm::allreduce(block, t, s, s, symm::plus{}, 1);
  symm::allreduce(block, t, s, c, symm::max{});
  symm::broadcast(symm::this_thread(), t, s, c, 0);
  symm::reduce(block, t, s, c, symm::plus{}, 0, 2);
  symm::fcollect(block, t, a, c);
  symm::reduce_scatter(block, t, s, a, symm::plus{});
  symm::allreduce(block, t, s.element(), c.element(), symm::plus{}); // the same, spelled as array_ref<T, 1>
  symm::fcollect(symm::synced(block), t, a, c); // NVSHMEM's group semantics: the block synchronises before and after
}

[[maybe_unused]] void on_stream(cudaStream_t stream, const symm::team& t, symm::scalar<double>& s,
                                symm::array<double>& a) {
  symm::allreduce(stream, t, s, s, symm::plus{}).wait();
  symm::broadcast(stream, t, s, s.ref(), 0);
  symm::fcollect(stream, t, a, s);
  symm::reduce_scatter(stream, t, s, a, symm::plus{});
  scalar_collectives<<<1, 32, 0, stream>>>(t.ref(), s, symm::scalar_ref<const double>(s.ref().element()), a);
}

} // namespace
