// symm/detail/backend/cuda/stream_write.hpp: 4- and 8-byte stores ordered on a CUDA stream (cuStreamWriteValue32/64):
// the signal write of the stream-ordered put_signal, and host-side pe_ref::store on the CUDA backend. A stream write
// is done by the GPU's front end, not by a kernel: it needs no free SM, so it goes through while kernels fill the GPU
// (or, under compute-sanitizer, while a kernel of the process runs). The driver entry points come through the
// runtime, like driver.hpp's.
#pragma once

#include <symm/detail/backend/cuda/check.hpp>
#include <symm/detail/backend/cuda/driver.hpp>

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cudaTypedefs.h>

#include <cstdint>

SYMM_BEGIN_NAMESPACE
namespace detail {

//! Stores `value` at `address` (device memory, or a peer mapping, valid in the current context) once the stream's
//! earlier work is complete. The driver fences before the store (CU_STREAM_WRITE_VALUE_DEFAULT, like
//! __threadfence_system()), so whatever the stream wrote before it is visible to a reader that sees the value.
inline void stream_write_u64(cudaStream_t stream, void* address, std::uint64_t value) {
  static const PFN_cuStreamWriteValue64_v11070 write = [] {
    PFN_cuStreamWriteValue64_v11070 fn = nullptr;
    load_driver_entry_point(fn, "cuStreamWriteValue64");
    return fn;
  }();
  SYMM_TRY_CU(write(reinterpret_cast<CUstream>(stream), reinterpret_cast<CUdeviceptr>(address),
                    static_cast<cuuint64_t>(value), CU_STREAM_WRITE_VALUE_DEFAULT));
}

//! The 4-byte form of stream_write_u64, with the same fence.
inline void stream_write_u32(cudaStream_t stream, void* address, std::uint32_t value) {
  static const PFN_cuStreamWriteValue32_v11070 write = [] {
    PFN_cuStreamWriteValue32_v11070 fn = nullptr;
    load_driver_entry_point(fn, "cuStreamWriteValue32");
    return fn;
  }();
  SYMM_TRY_CU(write(reinterpret_cast<CUstream>(stream), reinterpret_cast<CUdeviceptr>(address),
                    static_cast<cuuint32_t>(value), CU_STREAM_WRITE_VALUE_DEFAULT));
}

} // namespace detail
SYMM_END_NAMESPACE
