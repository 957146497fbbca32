// symm/detail/backend/nvshmem/host_rma_atomics.hpp: pe_ref's atomics from host code on a peer reached through NVSHMEM
// RMA. The CUDA backend's host-side atomics run symm's PTX kernel on the mapped address; a peer without a mapping
// needs NVSHMEM's device atomics instead, which only code linked with NVSHMEM's device library can call: a kernel of
// this header, compiled in every nvcc translation unit of a program built with the NVSHMEM backend. Host code of any
// translation unit reaches it through a process-wide pointer, which each such translation unit sets when the program
// starts: a translation unit compiled by g++ must not define the kernel, and inline functions may not differ between
// translation units, so the kernel's launcher is found at run time rather than named.
#pragma once

#include <symm/detail/atomic_codes.hpp>
#include <symm/detail/backend/nvshmem/device_rma.hpp>
#include <symm/error.hpp>

#if SYMM_NVSHMEM_BACKEND()
#  include <symm/detail/backend/cuda/check.hpp>

#  include <cuda_runtime_api.h>

#  include <atomic>
#  include <cstdint>

SYMM_BEGIN_NAMESPACE
namespace detail {

//! Enqueues one atomic on a tagged address in a one-thread kernel on `stream`, which writes the old value's bits to
//! `result` (mapped host memory); does not wait.
using rma_host_atomic_launcher = void (*)(cudaStream_t stream, void* target, atomic_type_code type, atomic_op op,
                                          std::uint64_t operand, std::uint64_t expected, unsigned long long* result);

inline std::atomic<rma_host_atomic_launcher>& rma_host_atomic_entry() {
  static std::atomic<rma_host_atomic_launcher> entry{nullptr};
  return entry;
}

//! Enqueues `op` on the tagged address `target` on `stream`; its old value's bits land in `*result`. errc::unsupported
//! when no translation unit of this program was compiled by nvcc.
inline void enqueue_rma_host_atomic(
    cudaStream_t stream, int my_pe, const void* target, atomic_type_code type, atomic_op op, std::uint64_t operand,
    std::uint64_t expected, unsigned long long* result) {
  rma_host_atomic_launcher launch = rma_host_atomic_entry().load(std::memory_order_acquire);
  if (launch == nullptr) {
    SYMM_THROW(errc::unsupported,
               "PE {}: an atomic from host code on PE {}, which this GPU reaches only through NVSHMEM RMA, needs a "
               "kernel that calls NVSHMEM, and no translation unit of this program was compiled by nvcc with the "
               "nvshmem backend to provide it",
               my_pe, rma_pe(target));
  }
  launch(stream, const_cast<void*>(target), type, op, operand, expected, result);
}

#  if SYMM_CUDA_COMPILATION()
template <class T>
SYMM_DEVICE void rma_host_atomic_as(void* target, atomic_op op, std::uint64_t operand, std::uint64_t expected,
                                    unsigned long long* result) {
  const T old = rma_atomic<T>(static_cast<T*>(target), op, atomic_from_bits<T>(operand), atomic_from_bits<T>(expected),
                              cuda::memory_order_seq_cst);
  *result = atomic_bits(old);
}

// A template, so that every translation unit's copy is the same weak definition at the device link.
template <int = 0>
__global__ void rma_host_atomic_kernel(void* target, atomic_type_code type, atomic_op op, std::uint64_t operand,
                                       std::uint64_t expected, unsigned long long* result) {
  switch (type) {
    case atomic_type_code::i32: rma_host_atomic_as<std::int32_t>(target, op, operand, expected, result); break;
    case atomic_type_code::u32: rma_host_atomic_as<std::uint32_t>(target, op, operand, expected, result); break;
    case atomic_type_code::i64: rma_host_atomic_as<std::int64_t>(target, op, operand, expected, result); break;
    case atomic_type_code::u64: rma_host_atomic_as<std::uint64_t>(target, op, operand, expected, result); break;
    case atomic_type_code::f32: rma_host_atomic_as<float>(target, op, operand, expected, result); break;
    case atomic_type_code::f64: rma_host_atomic_as<double>(target, op, operand, expected, result); break;
  }
}

inline void launch_rma_host_atomic(cudaStream_t stream, void* target, atomic_type_code type, atomic_op op,
                                   std::uint64_t operand, std::uint64_t expected, unsigned long long* result) {
  rma_host_atomic_kernel<><<<1, 1, 0, stream>>>(target, type, op, operand, expected, result);
  SYMM_TRY_CUDA(cudaGetLastError());
}

namespace {
// Set before main() by every nvcc translation unit (all set the same function).
[[maybe_unused]] const bool rma_host_atomic_registered =
    (rma_host_atomic_entry().store(&launch_rma_host_atomic, std::memory_order_release), true);
} // namespace
#  endif // SYMM_CUDA_COMPILATION()

} // namespace detail
SYMM_END_NAMESPACE
#endif // SYMM_NVSHMEM_BACKEND()
