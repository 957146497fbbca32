// symm/detail/backend/nvshmem/nvshmem_heap.hpp: the NVSHMEM backend's symmetric heap, host side. NVSHMEM is
// initialised with a unique id that PE 0 makes and symm's bootstrap hands to every PE; the heap is one nvshmem_malloc
// block (same offsets on every PE, as symm's allocator needs); a peer this GPU maps (nvshmem_ptr: same node, P2P or
// the same GPU) gets its mapped base in the peer table, every other peer a tagged base (detail/peer_table.hpp) that
// routes its operations through NVSHMEM RMA. Host-side copies to and from tagged addresses go through NVSHMEM's
// stream-ordered put and get, staged through a symmetric buffer when the local side is not in the heap (NVSHMEM's
// remote transports move data between registered buffers only).
//
// Collectives on teams with RMA peers are NVSHMEM's (detail/backend/nvshmem/collectives.hpp); the rooted reduce, which
// NVSHMEM lacks, is an NVSHMEM allreduce into symmetric scratch: the staging buffer from host code (under its lock), a
// second buffer of the same size from device code (no lock reaches there).
//
// NVSHMEM can be initialised once per process (a second nvshmem_init after nvshmem_finalize is undefined), and it has
// one PE per process: so one nvshmem world per process, made by a PE that is a process of its own.
#pragma once

#include <symm/detail/backend/cuda/check.hpp>
#include <symm/detail/backend/nvshmem/nvshmem_api.hpp>
#include <symm/detail/bootstrap/bootstrap.hpp>
#include <symm/detail/env.hpp>
#include <symm/detail/peer_table.hpp>
#include <symm/error.hpp>

#if SYMM_NVSHMEM_BACKEND()
#  include <cuda_runtime_api.h>

#  include <algorithm>
#  include <atomic>
#  include <cstdint>
#  include <cstdlib>
#  include <cstring>
#  include <mutex>
#  include <string>
#  include <vector>

SYMM_BEGIN_NAMESPACE
namespace detail {

//! Whether this process has initialised NVSHMEM already (it may only once).
inline std::atomic<bool>& nvshmem_claimed() {
  static std::atomic<bool> claimed{false};
  return claimed;
}

//! nvshmem_ptr from host code. What a translation unit without device code sees of NVSHMEM (NVSHMEM_HOSTLIB_ONLY)
//! declares it always_inline without a body, which g++ cannot call directly: call the library's function through a
//! pointer the compiler cannot see through.
inline void* host_nvshmem_ptr(const void* address, int pe) {
  void* (*volatile entry)(const void*, int) = &nvshmem_ptr;
  return entry(address, pe);
}

class nvshmem_heap {
public:
  //! Bytes of the symmetric staging buffer of host-side copies whose local side is outside the heap.
  static constexpr std::size_t staging_bytes = std::size_t{4} << 20;
  //! Bytes of the symmetric scratch of device-side rooted reductions over RMA (team_ref::rma_scratch()).
  static constexpr std::size_t device_scratch_bytes = std::size_t{4} << 20;

  //! Collective over the job. The caller has made `device` current.
  nvshmem_heap(bootstrap& boot, const job_info& job, std::size_t heap_bytes) {
    if (nvshmem_claimed().exchange(true)) {
      SYMM_THROW(errc::unsupported,
                 "PE {}: this process has initialised NVSHMEM already; NVSHMEM has one PE per process and can be "
                 "initialised once, so the nvshmem backend allows one world per process, made by a PE that is a "
                 "process of its own (symmrun, or symm::launch with launch_mode::processes)",
                 job.pe);
    }
    if (job.n_pes > rma_max_pes) {
      SYMM_THROW(errc::unsupported, "PE {}: the nvshmem backend supports at most {} PEs; this job has {}", job.pe,
                 rma_max_pes, job.n_pes);
    }
    // NVSHMEM reserves its symmetric heap at initialisation: make it hold symm's heap, the two buffers and NVSHMEM's
    // own allocations (signals, team state), unless the user sized it. Under MPS with several PEs per GPU, NVSHMEM
    // refuses host-side collectives (nvshmem_malloc among them) unless the PEs' active-thread percentages add up to at
    // most 100 %; symm's kernels do not need that limit, so symm lifts it unless the user set the variable.
    const std::string wanted =
        std::to_string(heap_bytes + staging_bytes + device_scratch_bytes + (std::size_t{64} << 20));
    set_env_default("NVSHMEM_SYMMETRIC_SIZE", wanted.c_str());
    set_env_default("NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "1");

    nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
    if (job.pe == 0 && nvshmemx_get_uniqueid(&id) != 0) {
      SYMM_THROW(errc::system, "PE 0: nvshmemx_get_uniqueid failed");
    }
    // Exchanged as plain bytes: nvcc's front end fails on a std::vector of NVSHMEM's (unnamed) id struct.
    struct id_bytes {
      unsigned char bytes[sizeof(nvshmemx_uniqueid_t)];
    };
    id_bytes mine{};
    std::memcpy(mine.bytes, &id, sizeof id);
    const id_bytes root = boot.allgather_value(mine)[0];
    std::memcpy(&id, root.bytes, sizeof id);
    nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
    if (nvshmemx_set_attr_uniqueid_args(job.pe, job.n_pes, &id, &attr) != 0 ||
        nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr) != 0) {
      SYMM_THROW(errc::system,
                 "PE {}: NVSHMEM initialisation with a unique id failed for {} PEs (NVSHMEM_DEBUG=INFO "
                 "says why)",
                 job.pe, job.n_pes);
    }
    initialised_ = true; // NVSHMEM numbers the PEs as the unique-id arguments said: as symm does
    heap_ = static_cast<std::byte*>(nvshmem_malloc(heap_bytes));
    staging_ = static_cast<std::byte*>(nvshmem_malloc(staging_bytes));
    device_scratch_ = static_cast<std::byte*>(nvshmem_malloc(device_scratch_bytes));
    if (heap_ == nullptr || staging_ == nullptr || device_scratch_ == nullptr) {
      SYMM_THROW(errc::heap_exhausted,
                 "PE {}: nvshmem_malloc of the {}-byte symmetric heap (and {}-byte staging and {}-byte scratch "
                 "buffers) failed; NVSHMEM_SYMMETRIC_SIZE is {}",
                 job.pe, heap_bytes, staging_bytes, device_scratch_bytes,
                 get_env("NVSHMEM_SYMMETRIC_SIZE").value_or("its default"));
    }
    heap_bytes_ = heap_bytes;
    if ((reinterpret_cast<std::uintptr_t>(heap_ + heap_bytes) & ~rma_local_mask) != 0) {
      SYMM_THROW(errc::unsupported,
                 "PE {}: NVSHMEM's heap at {} lies above 2^48, where symm's tagged peer addresses "
                 "cannot name it",
                 job.pe, static_cast<const void*>(heap_));
    }
    // SYMM_NVSHMEM_RMA=1 sends every other PE's operations through NVSHMEM RMA even where a mapping exists: how the
    // multi-node path is tested on one node.
    const bool force_rma = env_int("SYMM_NVSHMEM_RMA").value_or(0) != 0;
    bases_.resize(static_cast<std::size_t>(job.n_pes));
    for (int pe = 0; pe < job.n_pes; ++pe) {
      void* mapped = pe == job.pe ? heap_ : (force_rma ? nullptr : host_nvshmem_ptr(heap_, pe));
      bases_[static_cast<std::size_t>(pe)] =
          mapped != nullptr ? static_cast<std::byte*>(mapped) : make_rma_address(heap_, pe);
    }
  }

  nvshmem_heap(const nvshmem_heap&) = delete;
  nvshmem_heap& operator=(const nvshmem_heap&) = delete;

  //! Frees the heap and finalises NVSHMEM (both collective), unless abandon() was called: a PE leaving because of an
  //! error must not wait in NVSHMEM for peers that may be gone.
  ~nvshmem_heap() {
    if (!initialised_ || abandoned_) return;
    if (device_scratch_ != nullptr) nvshmem_free(device_scratch_);
    if (staging_ != nullptr) nvshmem_free(staging_);
    if (heap_ != nullptr) nvshmem_free(heap_);
    nvshmem_finalize();
  }
  void abandon() noexcept { abandoned_ = true; }

  [[nodiscard]] std::byte* const* bases() const noexcept { return bases_.data(); }
  [[nodiscard]] std::size_t heap_bytes() const noexcept { return heap_bytes_; }
  //! The symmetric scratch of device-side rooted reductions over RMA (device_scratch_bytes).
  [[nodiscard]] std::byte* device_scratch() const noexcept { return device_scratch_; }

  //! Runs `use(staging, staging_bytes)` holding the symmetric staging buffer, then waits for `stream`: for host-side
  //! work ordered on `stream` that needs symmetric scratch (a rooted reduce over RMA). Complete on return.
  template <class Use>
  void with_staging(cudaStream_t stream, const Use& use) {
    std::lock_guard lock(staging_mutex_);
    use(staging_, staging_bytes);
    SYMM_TRY_CUDA(cudaStreamSynchronize(stream));
  }

  //! A copy ordered on `stream` where dst (a put) or src (a get), or both, is a tagged address. Staged through the
  //! symmetric staging buffer when the local side is outside the heap: such a copy is complete when it returns
  //! (staged()).
  void copy_on(cudaStream_t stream, void* dst, const void* src, std::size_t bytes) {
    if (bytes == 0) return;
    auto* to = static_cast<std::byte*>(dst);
    const auto* from = static_cast<const std::byte*>(src);
    if (is_rma_address(dst) && is_rma_address(src)) { // peer to peer: a get, then a put
      staged(stream, bytes, [&](std::size_t done, std::size_t n) {
        nvshmemx_getmem_on_stream(staging_, rma_local(from + done), n, rma_pe(src), stream);
        nvshmemx_putmem_on_stream(rma_local(to + done), staging_, n, rma_pe(dst), stream);
      });
    } else if (is_rma_address(dst)) {
      put_on(stream, dst, src, bytes, nullptr, 0, 0);
    } else if (in_heap(dst)) {
      nvshmemx_getmem_on_stream(dst, rma_local(src), bytes, rma_pe(src), stream);
    } else {
      staged(stream, bytes, [&](std::size_t done, std::size_t n) {
        nvshmemx_getmem_on_stream(staging_, rma_local(from + done), n, rma_pe(src), stream);
        SYMM_TRY_CUDA(cudaMemcpyAsync(to + done, staging_, n, cudaMemcpyDefault, stream));
      });
    }
    SYMM_TRY_CUDA(cudaGetLastError());
  }

  //! A put ordered on `stream` to a tagged address; with `signal` (tagged, same PE), the signal update (`sig_op`
  //! NVSHMEM_SIGNAL_SET or _ADD with `value`) follows the data: NVSHMEM's put-with-signal on the last piece.
  void put_on(cudaStream_t stream, void* dst, const void* src, std::size_t bytes, std::uint64_t* signal,
              std::uint64_t value, int sig_op) {
    const int pe = rma_pe(signal != nullptr ? static_cast<const void*>(signal) : dst);
    auto* to = rma_local(static_cast<std::byte*>(dst));
    const auto put_piece = [&](std::byte* at, const void* from, std::size_t n, bool last) {
      if (last && signal != nullptr) {
        nvshmemx_putmem_signal_on_stream(at, from, n, rma_local(signal), value, sig_op, pe, stream);
      } else {
        nvshmemx_putmem_on_stream(at, from, n, pe, stream);
      }
    };
    if (bytes == 0) {
      if (signal != nullptr) nvshmemx_signal_op_on_stream(rma_local(signal), value, sig_op, pe, stream);
    } else if (in_heap(src)) {
      put_piece(to, src, bytes, true);
    } else {
      staged(stream, bytes, [&](std::size_t done, std::size_t n) {
        SYMM_TRY_CUDA(
            cudaMemcpyAsync(staging_, static_cast<const std::byte*>(src) + done, n, cudaMemcpyDefault, stream));
        put_piece(to + done, staging_, n, done + n == bytes);
      });
    }
    SYMM_TRY_CUDA(cudaGetLastError());
  }

private:
  //! Runs `piece(done, n)` for each staging-sized piece [done, done + n) of `bytes`, ordered on `stream`, holding the
  //! staging buffer; waits for the stream before handing the buffer to the next caller.
  template <class Piece>
  void staged(cudaStream_t stream, std::size_t bytes, const Piece& piece) {
    std::lock_guard lock(staging_mutex_);
    for (std::size_t done = 0; done < bytes; done += staging_bytes)
      piece(done, std::min(staging_bytes, bytes - done));
    SYMM_TRY_CUDA(cudaStreamSynchronize(stream));
  }

  [[nodiscard]] bool in_heap(const void* p) const noexcept {
    auto* b = static_cast<const std::byte*>(p);
    return b >= heap_ && b < heap_ + heap_bytes_;
  }

  bool initialised_ = false;
  bool abandoned_ = false;
  std::byte* heap_ = nullptr;
  std::byte* staging_ = nullptr;
  std::byte* device_scratch_ = nullptr;
  std::size_t heap_bytes_ = 0;
  std::vector<std::byte*> bases_;
  std::mutex staging_mutex_;
};

} // namespace detail
SYMM_END_NAMESPACE
#endif // SYMM_NVSHMEM_BACKEND()
