// expect-compile: ok
// views_ok.cpp compiled by nvcc: its host code as nvcc's host pass sees it, and in kernels every member docs/api.md
// marks "both" (views_both) and the device-only calls on the views: group-scoped put, get and put_signal from and into
// pe_span<T> and pe_span<const T>, as a kernel that takes array_ref<const T> makes them; the same calls given
// symm::synced(group).
#include <cooperative_groups.h>

#include "views_ok.cpp"

namespace views_ok {

template <class Group>
__device__ void device_rma(const Group& group, symm::array_ref<int> out, symm::array_ref<const int> in,
                           symm::array_ref<const int, 4> fixed_in, symm::signal_ref ready, int pe) {
  // in -> PE pe's out, and PE pe's in -> out: a const view is the source of a put and the remote side of a get.
  symm::put(group, symm::remote(out, pe).first(2), in.local().first(2));
  symm::get(group, out.local().first(2), symm::remote(in, pe).subspan(2, 2));
  symm::get(group, out.local().first<4>(), symm::remote(fixed_in, pe));
  symm::put_nbi(group, symm::remote(out, pe).last(2), in.subarray(0, 2).local()).wait();
  symm::get_nbi(group, out.local().last(2), symm::remote(in.subarray(2, 2), pe)).wait();
  symm::put_signal(group, symm::remote(out, pe), in.local(), symm::remote(ready, pe), 1, symm::signal_op::set);
  symm::put_signal_nbi(group, symm::remote(out, pe), in.local(), symm::remote(ready, pe), 1, symm::signal_op::add)
      .wait();
}

__global__ void
views_kernel(symm::array_ref<int> a, symm::array_ref<const int> c, symm::array_ref<int, 4> fixed,
             symm::array_ref<const int, 4> fixed_c, symm::scalar_ref<int> s, symm::scalar_ref<const int> cs,
             symm::signal_ref sig, symm::signal_array_ref sigs, symm::world_ref w, symm::team_ref t, int pe) {
  views_both(a, c, fixed, fixed_c, s, cs, sig, sigs, w, t, pe);
  (void) symm::remote(a, pe)[0].fetch_add(1, std::memory_order_relaxed); // std's orders in device code too
  device_rma(symm::this_thread(), a, c, fixed_c, sig, pe);
  device_rma(cooperative_groups::this_thread_block(), a, c, fixed_c, sig, pe);
  device_rma(cooperative_groups::tiled_partition<32>(cooperative_groups::this_thread_block()), a, c, fixed_c, sig, pe);
  // NVSHMEM's group semantics (synchronise before and after) on the same calls.
  const auto block = symm::synced(cooperative_groups::this_thread_block());
  device_rma(block, a, c, fixed_c, sig, pe);
  device_rma(symm::synced(block), a, c, fixed_c, sig, pe);
  device_rma(symm::synced(symm::this_thread()), a, c, fixed_c, sig, pe);
  device_rma(symm::synced(cooperative_groups::tiled_partition<32>(cooperative_groups::this_thread_block())), a, c,
             fixed_c, sig, pe);
  static_assert(std::is_same_v<decltype(symm::synced(block)), std::remove_const_t<decltype(block)>>);
  // The future of an nbi call on a synced group is the group's own.
  using block_future = decltype(symm::put_nbi(block, symm::remote(a, pe), c.local()));
  static_assert(std::is_same_v<block_future, symm::device_future<cooperative_groups::thread_block>>);
}

} // namespace views_ok
