// symm/collectives.hpp: NVSHMEM's collectives, typed, on any team — broadcast, fcollect (all-gather), alltoall,
// reduce, allreduce and reduce_scatter, with the operations symm::plus, multiplies, min, max, bit_and, bit_or and
// bit_xor (or cuda::std::plus<> and friends, or a user's associative callable).
//
// Three forms of each:
//  - host code, `symm::allreduce(team, dst, src, op)`: on the host backend, plain loads and stores through the mapped
//    heaps between the team's host barriers; complete on return. On the CUDA backend it throws errc::unsupported
//    (the heap is GPU memory): use the stream form.
//  - host code on the CUDA backend, `symm::allreduce(stream, team, dst, src, op)`: a kernel on `stream`, returning a
//    symm::future<> that completes with the stream. Only in files compiled by nvcc: a header-only library can ship a
//    kernel only to the translation units that nvcc compiles. Two collectives whose teams share a PE must not run at
//    once (on different streams without ordering between them): they use the same flags.
//  - device code, `symm::allreduce(group, team_ref, dst, src, op, channel)`: one group per PE of the team (a block, a
//    warp or one thread, all its threads calling with the same arguments) does the collective between two of the
//    team's device barriers on `channel` (see symm/team.hpp: collectives that run at once on teams that share PEs need
//    different channels). Complete for the group on return.
//
// Every form is collective over the team: each PE of the team calls it with the same collective, sizes, operation
// and root, and on return (on completion, for the stream form) this PE's dst holds its result and every PE of the
// team has finished reading this PE's src, so both may be reused. Buffers are symmetric arrays (symm::array or
// array_ref) of one element type, or symm::scalar / scalar_ref as arrays of one element; dst and src must not overlap,
// except that broadcast, reduce and allreduce accept the same array for both (in place). Extents are checked: static
// ones at compile time where the team size does not matter, dynamic ones at run time (errc::extent_mismatch naming the
// PE and the sizes on the host; a trap in device code). On the host backend the PEs' calls are compared
// (errc::allocation_mismatch listing each PE's call).
//
// Reductions fold the PEs' values in team order — v0 op v1 op ... op v(n-1) — the same on every PE, so every PE gets
// the same bits. Algorithms: one-shot (each PE reads what it needs from all peers) up to
// symm::collective_one_shot_max_bytes, two-shot (PE i reduces chunk i and stores it into every PE's dst: a
// reduce-scatter fused with the all-gather) above; no memory is allocated per call.
//
// On the nvshmem backend, a team with a PE that this GPU reaches only through NVSHMEM RMA (another node) runs NVSHMEM's
// collectives instead, with the same semantics (detail/backend/nvshmem/collectives.hpp): reductions need a (type,
// operation) that NVSHMEM has (integers, float, double, __half, __nv_bfloat16; errc::unsupported or a trap otherwise),
// the device form takes a block, a warp or one thread and ignores `channel` (at most one collective per team at a time
// on a PE, NVSHMEM's rule), and the order in which the PEs' values are combined is NVSHMEM's (floating-point results
// may differ in the last bits from team order's).
#pragma once

#include <symm/detail/collective_common.hpp>
#include <symm/detail/collective_device.hpp>
#include <symm/detail/collective_host.hpp>
#include <symm/detail/collective_ops.hpp>
#include <symm/future.hpp>
#include <symm/symmetric.hpp>
#include <symm/team.hpp>

#include <cstdio>
#include <type_traits>
#include <utility>

SYMM_BEGIN_NAMESPACE

namespace detail {
template <collective_id C, class Dst, class Src, class Op>
void host_collective_entry(const team& t, const Dst& dst, const Src& src, const Op& op, int root) {
  using T = std::remove_cv_t<buffer_element<Dst>>;
  host_collective(collective_team(t.state(), C), C, host_sym_buffer<T>(dst), host_sym_buffer<const T>(src), op, root);
}
template <class Dst, class Src>
inline constexpr bool same_static_extent = !extents_conflict<buffer_extent<Dst>, buffer_extent<Src>>;
//! Static extents that can hold `big == n_pes * small` for some team size.
template <std::size_t Big, std::size_t Small>
inline constexpr bool
    multiple_extent = Big == dynamic_extent || Small == dynamic_extent || (Small == 0 ? Big == 0 : Big % Small == 0);
} // namespace detail

// ---------------------------------------------------------------------------------------------------------------------
// Host code.

//! Copies `src` of team PE `root` into `dst` of every PE of the team (the root's dst too; in place when dst and src
//! are the same array). Throws errc::extent_mismatch unless dst.size() == src.size(), errc::invalid_pe when root is not
//! in [0, team.n_pes()), errc::unsupported on the CUDA backend (use the stream form).
//! \code
//!   symm::broadcast(world.team(), params, params, 0);   // PE 0's params to everyone, in place
//! \endcode
template <detail::collective_buffer Dst, detail::collective_buffer Src>
void broadcast(const team& t, Dst&& dst, Src&& src, int root) {
  static_assert(detail::same_static_extent<Dst, Src>, "symm::broadcast: dst and src have static extents that differ");
  if constexpr (detail::check_buffer_pair<Dst, Src>()) {
    detail::host_collective_entry<detail::collective_id::broadcast>(t, dst, src, detail::no_op{}, root);
  }
}

//! All-gather (OpenSHMEM's fcollect): dst on every PE becomes the concatenation of every team PE's src, in team order.
//! Throws errc::extent_mismatch unless dst.size() == team.n_pes() * src.size().
//! \code
//!   symm::array<int> mine(world, 4), all(world, 4 * world.n_pes());
//!   symm::fcollect(world.team(), all, mine);
//! \endcode
template <detail::collective_buffer Dst, detail::collective_buffer Src>
void fcollect(const team& t, Dst&& dst, Src&& src) {
  static_assert(detail::multiple_extent<detail::buffer_extent<Dst>, detail::buffer_extent<Src>>,
                "symm::fcollect: dst needs team.n_pes() * src.size() elements, which no team size gives with these "
                "static extents");
  if constexpr (detail::check_buffer_pair<Dst, Src>()) {
    detail::host_collective_entry<detail::collective_id::fcollect>(t, dst, src, detail::no_op{}, -1);
  }
}

//! All-to-all: src and dst are team.n_pes() blocks of b elements; block j of PE i's src lands in block i of PE j's dst.
//! Throws errc::extent_mismatch unless dst.size() == src.size() and it is a multiple of team.n_pes().
template <detail::collective_buffer Dst, detail::collective_buffer Src>
void alltoall(const team& t, Dst&& dst, Src&& src) {
  static_assert(detail::same_static_extent<Dst, Src>, "symm::alltoall: dst and src have static extents that differ");
  if constexpr (detail::check_buffer_pair<Dst, Src>()) {
    detail::host_collective_entry<detail::collective_id::alltoall>(t, dst, src, detail::no_op{}, -1);
  }
}

//! Reduction to one PE: dst of team PE `root` becomes src(PE 0) op src(PE 1) op ... element by element; the other
//! PEs' dst is left alone. In place when dst and src are the same array. Throws like broadcast.
//! \code
//!   symm::reduce(world.team(), total, partial, symm::plus{}, 0);
//! \endcode
template <detail::collective_buffer Dst, detail::collective_buffer Src, class Op>
void reduce(const team& t, Dst&& dst, Src&& src, Op op, int root) {
  static_assert(detail::same_static_extent<Dst, Src>, "symm::reduce: dst and src have static extents that differ");
  if constexpr (detail::check_buffer_pair<Dst, Src>() &&
                detail::check_reduction<Op, std::remove_cv_t<detail::buffer_element<Dst>>>()) {
    detail::host_collective_entry<detail::collective_id::reduce>(t, dst, src, op, root);
  }
}

//! Reduction to every PE: dst on every PE becomes src(PE 0) op src(PE 1) op ... element by element (identical bits on
//! every PE). In place when dst and src are the same array. Throws errc::extent_mismatch unless dst.size() ==
//! src.size(); a wrong element type for op (bit_and on float) does not compile.
//! \code
//!   symm::allreduce(world.team(), grad, grad, symm::plus{});           // in place
//!   symm::allreduce(row, best, mine, symm::max{});                     // over a team of split_2d
//! \endcode
template <detail::collective_buffer Dst, detail::collective_buffer Src, class Op>
void allreduce(const team& t, Dst&& dst, Src&& src, Op op) {
  static_assert(detail::same_static_extent<Dst, Src>, "symm::allreduce: dst and src have static extents that differ");
  if constexpr (detail::check_buffer_pair<Dst, Src>() &&
                detail::check_reduction<Op, std::remove_cv_t<detail::buffer_element<Dst>>>()) {
    detail::host_collective_entry<detail::collective_id::allreduce>(t, dst, src, op, -1);
  }
}

//! Reduce-scatter: src is team.n_pes() blocks of dst.size() elements; dst on team PE i becomes block i reduced over
//! the PEs. Throws errc::extent_mismatch unless src.size() == team.n_pes() * dst.size().
template <detail::collective_buffer Dst, detail::collective_buffer Src, class Op>
void reduce_scatter(const team& t, Dst&& dst, Src&& src, Op op) {
  static_assert(detail::multiple_extent<detail::buffer_extent<Src>, detail::buffer_extent<Dst>>,
                "symm::reduce_scatter: src needs team.n_pes() * dst.size() elements, which no team size gives with "
                "these static extents");
  if constexpr (detail::check_buffer_pair<Dst, Src>() &&
                detail::check_reduction<Op, std::remove_cv_t<detail::buffer_element<Dst>>>()) {
    detail::host_collective_entry<detail::collective_id::reduce_scatter>(t, dst, src, op, -1);
  }
}

SYMM_END_NAMESPACE

// ---------------------------------------------------------------------------------------------------------------------
// Device code: one group per PE of the team. `channel` is a team device barrier channel (symm/team.hpp), which the
// collective uses for its two barriers; give collectives or barriers that run at the same time on teams sharing PEs
// different channels. The group's threads share the data movement; each thread may return before the others, unless
// the group is symm::synced(group), which synchronises it before and after.
#if SYMM_CUDA_COMPILATION()
SYMM_BEGIN_NAMESPACE

namespace detail {
template <collective_id C, class Group, class T, std::size_t E1, class U, std::size_t E2, class Op>
SYMM_DEVICE void device_collective_entry(const Group& group, const team_ref& t, const array_ref<T, E1>& dst,
                                         const array_ref<U, E2>& src, const Op& op, int root, int channel) {
  using V = std::remove_cv_t<T>;
  with_group_syncs(group, [&](const auto& g) {
    device_collective<C>(g, t, make_sym_buffer<V>(dst), make_sym_buffer<const V>(src), op, root, channel);
  });
}
} // namespace detail

//! broadcast from device code: team PE root's src into every team PE's dst.
//! \code
//!   __global__ void k(symm::team_ref t, symm::array_ref<float> w) {
//!     symm::broadcast(cooperative_groups::this_thread_block(), t, w, w, 0);
//!   }
//! \endcode
template <cooperating_group Group, class T, std::size_t E1, class U, std::size_t E2>
SYMM_DEVICE void broadcast(const Group& group, const team_ref& t, array_ref<T, E1> dst, array_ref<U, E2> src, int root,
                           int channel = 0) {
  static_assert(!detail::extents_conflict<E1, E2>, "symm::broadcast: dst and src have static extents that differ");
  if constexpr (detail::check_buffer_pair<array_ref<T, E1>, array_ref<U, E2>>()) {
    detail::device_collective_entry<detail::collective_id::broadcast>(
        group, t, dst, src, detail::no_op{}, root, channel);
  }
}

//! fcollect (all-gather) from device code: dst.size() == t.n_pes() * src.size().
template <cooperating_group Group, class T, std::size_t E1, class U, std::size_t E2>
SYMM_DEVICE void fcollect(const Group& group, const team_ref& t, array_ref<T, E1> dst, array_ref<U, E2> src,
                          int channel = 0) {
  static_assert(detail::multiple_extent<E1, E2>, "symm::fcollect: dst needs team.n_pes() * src.size() elements, which "
                                                 "no team size gives with these static extents");
  if constexpr (detail::check_buffer_pair<array_ref<T, E1>, array_ref<U, E2>>()) {
    detail::device_collective_entry<detail::collective_id::fcollect>(group, t, dst, src, detail::no_op{}, -1, channel);
  }
}

//! alltoall from device code: block j of PE i's src into block i of PE j's dst.
template <cooperating_group Group, class T, std::size_t E1, class U, std::size_t E2>
SYMM_DEVICE void alltoall(const Group& group, const team_ref& t, array_ref<T, E1> dst, array_ref<U, E2> src,
                          int channel = 0) {
  static_assert(!detail::extents_conflict<E1, E2>, "symm::alltoall: dst and src have static extents that differ");
  if constexpr (detail::check_buffer_pair<array_ref<T, E1>, array_ref<U, E2>>()) {
    detail::device_collective_entry<detail::collective_id::alltoall>(group, t, dst, src, detail::no_op{}, -1, channel);
  }
}

//! reduce from device code: the reduction lands in team PE root's dst.
template <cooperating_group Group, class T, std::size_t E1, class U, std::size_t E2, class Op>
SYMM_DEVICE void reduce(const Group& group, const team_ref& t, array_ref<T, E1> dst, array_ref<U, E2> src, Op op,
                        int root, int channel = 0) {
  static_assert(!detail::extents_conflict<E1, E2>, "symm::reduce: dst and src have static extents that differ");
  if constexpr (detail::check_buffer_pair<array_ref<T, E1>, array_ref<U, E2>>() &&
                detail::check_reduction<Op, std::remove_cv_t<T>>()) {
    detail::device_collective_entry<detail::collective_id::reduce>(group, t, dst, src, op, root, channel);
  }
}

//! allreduce from device code, e.g. with one block per PE:
//! \code
//!   __global__ void step(symm::team_ref t, symm::array_ref<float> grad) {
//!     symm::allreduce(cooperative_groups::this_thread_block(), t, grad, grad, symm::plus{}, /*channel=*/1);
//!   }
//! \endcode
template <cooperating_group Group, class T, std::size_t E1, class U, std::size_t E2, class Op>
SYMM_DEVICE void allreduce(const Group& group, const team_ref& t, array_ref<T, E1> dst, array_ref<U, E2> src, Op op,
                           int channel = 0) {
  static_assert(!detail::extents_conflict<E1, E2>, "symm::allreduce: dst and src have static extents that differ");
  if constexpr (detail::check_buffer_pair<array_ref<T, E1>, array_ref<U, E2>>() &&
                detail::check_reduction<Op, std::remove_cv_t<T>>()) {
    detail::device_collective_entry<detail::collective_id::allreduce>(group, t, dst, src, op, -1, channel);
  }
}

//! reduce_scatter from device code: src.size() == t.n_pes() * dst.size().
template <cooperating_group Group, class T, std::size_t E1, class U, std::size_t E2, class Op>
SYMM_DEVICE void reduce_scatter(const Group& group, const team_ref& t, array_ref<T, E1> dst, array_ref<U, E2> src,
                                Op op, int channel = 0) {
  static_assert(detail::multiple_extent<E2, E1>, "symm::reduce_scatter: src needs team.n_pes() * dst.size() elements, "
                                                 "which no team size gives with these static extents");
  if constexpr (detail::check_buffer_pair<array_ref<T, E1>, array_ref<U, E2>>() &&
                detail::check_reduction<Op, std::remove_cv_t<T>>()) {
    detail::device_collective_entry<detail::collective_id::reduce_scatter>(group, t, dst, src, op, -1, channel);
  }
}

//! The device forms on symm::scalar_ref, a one-element array (NVSHMEM's one-element buffers): the same as passing
//! `s.element()`, the scalar's array_ref<T, 1>.
//! \code
//!   __global__ void k(symm::team_ref t, symm::scalar_ref<double> loss) {
//!     symm::allreduce(cooperative_groups::this_thread_block(), t, loss, loss, symm::plus{});
//!   }
//! \endcode
template <cooperating_group Group, class T, class U>
SYMM_DEVICE void broadcast(const Group& group, const team_ref& t, scalar_ref<T> dst, scalar_ref<U> src, int root,
                           int channel = 0) {
  symm::broadcast(group, t, dst.element(), src.element(), root, channel);
}
template <cooperating_group Group, class T, std::size_t E1, class U>
SYMM_DEVICE void fcollect(const Group& group, const team_ref& t, array_ref<T, E1> dst, scalar_ref<U> src,
                          int channel = 0) {
  symm::fcollect(group, t, dst, src.element(), channel);
}
template <cooperating_group Group, class T, class U, class Op>
SYMM_DEVICE void reduce(const Group& group, const team_ref& t, scalar_ref<T> dst, scalar_ref<U> src, Op op, int root,
                        int channel = 0) {
  symm::reduce(group, t, dst.element(), src.element(), op, root, channel);
}
template <cooperating_group Group, class T, class U, class Op>
SYMM_DEVICE void allreduce(const Group& group, const team_ref& t, scalar_ref<T> dst, scalar_ref<U> src, Op op,
                           int channel = 0) {
  symm::allreduce(group, t, dst.element(), src.element(), op, channel);
}
template <cooperating_group Group, class T, class U, std::size_t E2, class Op>
SYMM_DEVICE void
reduce_scatter(const Group& group, const team_ref& t, scalar_ref<T> dst, array_ref<U, E2> src, Op op, int channel = 0) {
  symm::reduce_scatter(group, t, dst.element(), src, op, channel);
}

SYMM_END_NAMESPACE
#endif

// ---------------------------------------------------------------------------------------------------------------------
// Host code on the CUDA backend, in files compiled by nvcc: a kernel on a stream. The future completes with the
// stream (wait() synchronises it); dropping it does not wait. Throws errc::unsupported on the host backend, and like
// the host forms for bad arguments.
#if SYMM_CUDA_COMPILATION() && SYMM_CUDA_BACKEND()
#  include <cuda_runtime_api.h>

SYMM_BEGIN_NAMESPACE

namespace detail {
template <collective_id C, class Dst, class Src, class Op>
future<>
stream_collective_entry(cudaStream_t stream, const team& t, const Dst& dst, const Src& src, const Op& op, int root) {
  static_assert(std::is_trivially_copyable_v<Op>, "symm collective on a stream: the operation travels to the kernel "
                                                  "as an argument, so it must be trivially copyable");
  using T = std::remove_cv_t<buffer_element<Dst>>;
  team_state& s = collective_team(t.state(), C);
  world_state& w = s.world();
  if (!heap_on_gpu(w.kind())) {
    SYMM_THROW(errc::unsupported,
               "PE {}: {}(stream, team, ...) runs a kernel, but this world uses the {} backend, "
               "whose heap is host memory; call {}(team, ...)",
               w.my_pe(), collective_name(C), to_string(w.kind()), collective_name(C));
  }
  const auto d = host_sym_buffer<T>(dst);
  const auto s_ = host_sym_buffer<const T>(src);
  check_collective_args(s, C, d.size, s_.size, d.offset, s_.offset, sizeof(T), root);
#  if SYMM_NVSHMEM_BACKEND()
  // A team PE that this GPU reaches only through NVSHMEM RMA: NVSHMEM's collective (detail/backend/nvshmem/).
  if (s.rma_peer()) return nvshmem_stream_collective<C>(stream, s, d, s_, op, root);
#  endif
  const collective_plan plan = plan_stream_collective(
      C, d.bytes(), s_.bytes(), d.offset == s_.offset, w.collective_block_limit(), s.links(), w.tuning());
  const std::uint64_t plan_key = std::uint64_t{static_cast<std::uint8_t>(s.links().weakest)} << 56 |
                                 std::uint64_t{plan.blocks} << 1 | std::uint64_t{plan.two_shot};
  if (w.tuning().debug && s.my_index() == 0 && w.plan_is_new(static_cast<int>(C), s.pes().size, plan_key)) {
    std::fprintf(stderr, "symm: debug: %s\n", describe_plan(C, plan, d.bytes(), s.pes().size, s.links()).c_str());
  }
  const collective_body<C, T, Op> body{t.ref(), d, s_, op, root, plan.two_shot};
  collective_stream_kernel<<<plan.blocks, plan.threads, 0, stream>>>(
      body, collective_flags::of(body.team, w.collective_flags_offset()));
  SYMM_TRY_CUDA(cudaGetLastError());
  return future<>(stream_operation(stream, collective_name(C), w.my_pe()));
}
} // namespace detail

//! broadcast on a stream (CUDA backend, nvcc-compiled code).
//! \code
//!   symm::broadcast(stream, world.team(), weights, weights, 0).wait();
//! \endcode
template <detail::collective_buffer Dst, detail::collective_buffer Src>
future<> broadcast(cudaStream_t stream, const team& t, Dst&& dst, Src&& src, int root) {
  static_assert(detail::same_static_extent<Dst, Src>, "symm::broadcast: dst and src have static extents that differ");
  if constexpr (detail::check_buffer_pair<Dst, Src>()) {
    return detail::stream_collective_entry<detail::collective_id::broadcast>(stream, t, dst, src, detail::no_op{}, root);
  } else {
    return {};
  }
}

//! fcollect on a stream.
template <detail::collective_buffer Dst, detail::collective_buffer Src>
future<> fcollect(cudaStream_t stream, const team& t, Dst&& dst, Src&& src) {
  static_assert(detail::multiple_extent<detail::buffer_extent<Dst>, detail::buffer_extent<Src>>,
                "symm::fcollect: dst needs team.n_pes() * src.size() elements, which no team size gives with these "
                "static extents");
  if constexpr (detail::check_buffer_pair<Dst, Src>()) {
    return detail::stream_collective_entry<detail::collective_id::fcollect>(stream, t, dst, src, detail::no_op{}, -1);
  } else {
    return {};
  }
}

//! alltoall on a stream.
template <detail::collective_buffer Dst, detail::collective_buffer Src>
future<> alltoall(cudaStream_t stream, const team& t, Dst&& dst, Src&& src) {
  static_assert(detail::same_static_extent<Dst, Src>, "symm::alltoall: dst and src have static extents that differ");
  if constexpr (detail::check_buffer_pair<Dst, Src>()) {
    return detail::stream_collective_entry<detail::collective_id::alltoall>(stream, t, dst, src, detail::no_op{}, -1);
  } else {
    return {};
  }
}

//! reduce on a stream.
template <detail::collective_buffer Dst, detail::collective_buffer Src, class Op>
future<> reduce(cudaStream_t stream, const team& t, Dst&& dst, Src&& src, Op op, int root) {
  static_assert(detail::same_static_extent<Dst, Src>, "symm::reduce: dst and src have static extents that differ");
  if constexpr (detail::check_buffer_pair<Dst, Src>() &&
                detail::check_reduction<Op, std::remove_cv_t<detail::buffer_element<Dst>>>()) {
    return detail::stream_collective_entry<detail::collective_id::reduce>(stream, t, dst, src, op, root);
  } else {
    return {};
  }
}

//! allreduce on a stream.
//! \code
//!   auto done = symm::allreduce(stream, world.team(), grad, grad, symm::plus{});
//!   optimizer_step<<<grid, block, 0, stream>>>(grad);   // ordered after the allreduce by the stream
//! \endcode
template <detail::collective_buffer Dst, detail::collective_buffer Src, class Op>
future<> allreduce(cudaStream_t stream, const team& t, Dst&& dst, Src&& src, Op op) {
  static_assert(detail::same_static_extent<Dst, Src>, "symm::allreduce: dst and src have static extents that differ");
  if constexpr (detail::check_buffer_pair<Dst, Src>() &&
                detail::check_reduction<Op, std::remove_cv_t<detail::buffer_element<Dst>>>()) {
    return detail::stream_collective_entry<detail::collective_id::allreduce>(stream, t, dst, src, op, -1);
  } else {
    return {};
  }
}

//! reduce_scatter on a stream.
template <detail::collective_buffer Dst, detail::collective_buffer Src, class Op>
future<> reduce_scatter(cudaStream_t stream, const team& t, Dst&& dst, Src&& src, Op op) {
  static_assert(detail::multiple_extent<detail::buffer_extent<Src>, detail::buffer_extent<Dst>>,
                "symm::reduce_scatter: src needs team.n_pes() * dst.size() elements, which no team size gives with "
                "these static extents");
  if constexpr (detail::check_buffer_pair<Dst, Src>() &&
                detail::check_reduction<Op, std::remove_cv_t<detail::buffer_element<Dst>>>()) {
    return detail::stream_collective_entry<detail::collective_id::reduce_scatter>(stream, t, dst, src, op, -1);
  } else {
    return {};
  }
}

SYMM_END_NAMESPACE
#endif
