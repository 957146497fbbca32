// symm/detail/backend/cuda/stream_write.hpp: an 8-byte store ordered on a CUDA stream (cuStreamWriteValue64), the
// signal write of the stream-ordered put_signal. The driver entry point comes through the runtime, like driver.hpp's.
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

} // namespace detail
SYMM_END_NAMESPACE
