// symm/ordering.hpp: fence() and quiet(), the ordering and completion points of one-sided operations, in host and
// device code.
//
// Guarantees (OpenSHMEM / NVSHMEM semantics):
// - fence(): puts, p's and non-blocking puts this thread issued before it reach each target PE before those issued
//   after it reach the same PE. Nothing is promised about completion.
// - quiet(): every put, p, get and non-blocking operation this PE issued (host) or this thread issued (device) before
//   it is complete: puts are visible at their targets, gets have landed.
// In device code both are a system-scope fence, because a peer may be another process or another GPU; on the NVSHMEM
// backend also nvshmem_quiet() / nvshmem_fence(), for the peers reached through NVSHMEM RMA.
#pragma once

#include <symm/detail/backend/nvshmem/device_rma.hpp>
#include <symm/detail/world_state.hpp>

#include <cuda/atomic>

SYMM_BEGIN_NAMESPACE

//! Completes every operation issued before it (see above). Host: acts on the thread's current world and throws
//! errc::not_initialized without one. Device: a system-scope fence of the calling thread.
SYMM_HOST_DEVICE inline void quiet() {
  NV_IF_TARGET(NV_IS_DEVICE, ({
                 cuda::atomic_thread_fence(cuda::memory_order_seq_cst, cuda::thread_scope_system);
                 detail::rma_quiet();
               }),
               (detail::require_current_world("symm::quiet()").quiet("symm::quiet()");))
}

//! Orders puts to each PE (see above). Host, cuda backend: blocking and non-blocking operations all go through the
//! world's one stream, in issue order, so nothing is left to do. Host, host backend: put_nbi/get_nbi run on a copy
//! thread while blocking puts, p's, atomics and put_signal run on the caller's, so a later blocking put could land
//! before an earlier put_nbi; fence() therefore completes the outstanding non-blocking copies (a quiet, which is a
//! valid fence, and free when none is outstanding). Device: a system-scope release fence.
SYMM_HOST_DEVICE inline void fence() {
  NV_IF_TARGET(NV_IS_DEVICE, ({
                 cuda::atomic_thread_fence(cuda::memory_order_release, cuda::thread_scope_system);
                 detail::rma_fence();
               }),
               (if (auto& world = detail::require_current_world("symm::fence()"); world.kind() == backend::host) {
                 world.quiet("symm::fence()");
               }))
}

SYMM_END_NAMESPACE
