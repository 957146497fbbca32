// symm/stream_sync.hpp: synchronisation ordered on a CUDA stream, NVSHMEM's *_on_stream calls: quiet(stream), a team
// barrier (barrier_all / sync_all) and a signal wait (signal_wait_until) that the stream reaches in order, without the
// host waiting. With the stream put/get, put_signal and collectives they make a step that a stream can carry whole,
// and that a CUDA graph can record once and replay (docs/guide.md, "Stream-ordered steps and CUDA graphs").
//
// Each form returns a symm::future<> that completes with the stream, like the other stream forms; dropping it does
// not wait. Host code on the CUDA and nvshmem backends, in files compiled by nvcc (the barrier and the wait are
// kernels of symm's); errc::unsupported on the host backend, whose heap is host memory.
//
// The barrier and the wait are kernels of one warp (the barrier) or one thread (the wait) that poll device memory, so
// they are bounded like every device wait: after SYMM_DEVICE_WAIT_TIMEOUT_NS they print what they waited for and trap
// (a stream wait done by the GPU's front end, cuStreamWaitValue, would wait forever on a PE that died), and within
// milliseconds of this PE's host side finding a peer failed they print "PE n failed" and trap. The barrier
// counts its rounds in device memory, never on the host, so a recorded barrier is right at every replay.
#pragma once

#include <symm/detail/config.hpp>

#if SYMM_CUDA_COMPILATION() && SYMM_CUDA_BACKEND()
#  include <symm/detail/collective_common.hpp>
#  include <symm/detail/collective_device.hpp>
#  include <symm/detail/world_state.hpp>
#  include <symm/future.hpp>
#  include <symm/signal.hpp>
#  include <symm/team.hpp>
#  include <symm/wait.hpp>

#  include <cooperative_groups.h>
#  include <cuda_runtime_api.h>

#  include <cstdint>
#  include <memory>

SYMM_BEGIN_NAMESPACE

namespace detail {

//! Threads of the stream barrier's one block: a warp, each thread serving every 32nd peer of the team.
inline constexpr unsigned stream_barrier_threads = 32;

// The kernels are templates (instantiated with team_ref and std::uint64_t only) so that every translation unit that
// includes this header may define them: a plain __global__ function would be defined once per TU and clash at link.

//! The stream barrier: one round on channel 0 of symm's collective flags, which the stream collectives count on too,
//! so that barriers and collectives of one team may follow each other in any order the PEs share.
template <class Team>
__global__ void __launch_bounds__(stream_barrier_threads) stream_barrier_kernel(Team t, collective_flags flags) {
  collective_flags_round(cooperative_groups::this_thread_block(), t, flags, 0);
}

//! The stream wait: one thread polls this PE's signal word with acquire loads; the stream's later work starts after the
//! kernel ends, so it sees what the put_signal that satisfied the wait delivered.
template <class Word>
__global__ void __launch_bounds__(1)
    stream_signal_wait_kernel(Word* word, cmp c, Word value, int me, const std::byte* heap) {
  device_wait_until([&] { return compare(system_atomic(word).load(cuda::memory_order_acquire), c, value); },
                    "symm::signal_wait_until(stream, ...)", me, -1, heap);
}

inline world_state& stream_world(world_state* world, const char* what) {
  if (world == nullptr) SYMM_THROW(errc::not_initialized, "{}: the signal or team belongs to no live world", what);
  world->require_alive(what);
  require_cuda_backend(world, what);
  return *world;
}

//! barrier_all / sync_all on a stream; `complete_first`: barrier_all (NVSHMEM's barrier completes RMA, its sync not).
inline future<> stream_team_barrier(cudaStream_t stream, const team& t, bool complete_first, const char* what) {
  team_state& s = collective_team(t.state(), what);
  world_state& w = stream_world(&s.world(), what);
#  if SYMM_NVSHMEM_BACKEND()
  if (s.rma_peer()) { // symm's stores cannot reach every team PE: NVSHMEM's barrier, over the team NVSHMEM made
    if (s.nvshmem_team() == no_nvshmem_team) {
      SYMM_THROW(errc::unsupported,
                 "PE {}: {} on {}: this GPU reaches a team PE only through NVSHMEM RMA, so the barrier must be "
                 "NVSHMEM's, but NVSHMEM made no team for it: {}",
                 w.my_pe(), what, s.name(), s.nvshmem_problem());
    }
    const auto team = static_cast<nvshmem_team_t>(s.nvshmem_team());
    const int rc =
        complete_first ? nvshmemx_barrier_on_stream(team, stream) : nvshmemx_team_sync_on_stream(team, stream);
    if (rc != 0) SYMM_THROW(errc::system, "PE {}: {} on {}: NVSHMEM returned {}", w.my_pe(), what, s.name(), rc);
    SYMM_TRY_CUDA(cudaGetLastError());
    return future<>(stream_operation(stream, what, w.my_pe()));
  }
  // The stream has completed this PE's copies and kernels; what it sent through NVSHMEM RMA (to PEs outside the team
  // too) NVSHMEM's quiet completes, as its barrier would.
  if (complete_first && w.kind() == backend::nvshmem) nvshmemx_quiet_on_stream(stream);
#  else
  (void) complete_first; // the stream has completed this PE's copies, stream writes and kernels already
#  endif
  const team_ref ref = t.ref();
  stream_barrier_kernel<team_ref>
      <<<1, stream_barrier_threads, 0, stream>>>(ref, collective_flags::of(ref, w.collective_flags_offset()));
  SYMM_TRY_CUDA(cudaGetLastError());
  return future<>(stream_operation(stream, what, w.my_pe()));
}

} // namespace detail

//! quiet() ordered on `stream`: the stream's later work starts after every operation this PE issued on it earlier is
//! complete (puts visible at their targets, gets landed). On the cuda backend the stream already gives that: symm's
//! stream operations are copies, stream writes and kernels, each complete (its stores performed, system-wide) before
//! the stream starts the next, so nothing is enqueued. On the nvshmem backend NVSHMEM's quiet follows, for the PEs it
//! reaches by RMA (nvshmemx_quiet_on_stream). Acts on the thread's current world.
//! \code
//!   symm::put(stream, symm::remote(halo, right), edge);   // NVSHMEM: nvshmemx_putmem_on_stream(...)
//!   symm::quiet(stream);                                  //          nvshmemx_quiet_on_stream(stream)
//! \endcode
inline future<> quiet(cudaStream_t stream) {
  constexpr const char* what = "symm::quiet(stream)";
  detail::world_state& w = detail::stream_world(&detail::require_current_world(what), what);
#  if SYMM_NVSHMEM_BACKEND()
  if (w.kind() == backend::nvshmem) {
    nvshmemx_quiet_on_stream(stream);
    SYMM_TRY_CUDA(cudaGetLastError());
  }
#  endif
  return future<>(detail::stream_operation(stream, what, w.my_pe()));
}

//! The team's barrier ordered on `stream` (NVSHMEM's nvshmemx_barrier_on_stream; nvshmemx_barrier_all_on_stream is
//! `symm::barrier_all(stream, world.team())`): the stream's later work on every team PE starts after every team PE's
//! stream has reached its barrier, and sees what those streams wrote before it (quiet(stream) included). Collective
//! over the team: each team PE calls it, in the same order as its other stream collectives and barriers of teams that
//! share PEs with it (they count on the same flags). Throws errc::invalid_argument on an invalid team or for a PE
//! outside it. \code
//!   symm::put(stream, symm::remote(halo, right), edge);
//!   symm::barrier_all(stream, world.team());
//!   stencil<<<grid, block, 0, stream>>>(halo);          // every PE's halo has arrived
//! \endcode
inline future<> barrier_all(cudaStream_t stream, const team& t) {
  return detail::stream_team_barrier(stream, t, true, "symm::barrier_all(stream, team)");
}

//! The team's barrier on `stream` without completing this PE's operations (NVSHMEM's nvshmemx_team_sync_on_stream).
//! On the cuda backend it is the same kernel as barrier_all(stream, team): the stream has completed them already.
inline future<> sync_all(cudaStream_t stream, const team& t) {
  return detail::stream_team_barrier(stream, t, false, "symm::sync_all(stream, team)");
}

//! signal_wait_until ordered on `stream` (NVSHMEM's nvshmemx_signal_wait_until_on_stream): the stream's later work
//! starts once this PE's signal satisfies `signal <c> value`, and sees the data of the put_signal that made it true.
//! The host does not wait. Bounded like a device wait (SYMM_DEVICE_WAIT_TIMEOUT_NS, then a message and a trap).
//! \code
//!   symm::signal_wait_until(stream, ready, symm::cmp::ge, step);   // the left neighbour's rows for this step are in
//!   consume<<<grid, block, 0, stream>>>(rows);
//! \endcode
inline future<> signal_wait_until(cudaStream_t stream, const signal_ref& sig, cmp c, std::uint64_t value) {
  constexpr const char* what = "symm::signal_wait_until(stream, ...)";
  detail::world_state& w = detail::stream_world(detail::state_of(sig.world()), what);
  detail::stream_signal_wait_kernel<std::uint64_t>
      <<<1, 1, 0, stream>>>(sig.local_address(), c, value, w.my_pe(), w.peer_bases()[w.my_pe()]);
  SYMM_TRY_CUDA(cudaGetLastError());
  return future<>(detail::stream_operation(stream, what, w.my_pe()));
}

SYMM_END_NAMESPACE
#endif
