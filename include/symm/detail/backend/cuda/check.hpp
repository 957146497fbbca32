// symm/detail/backend/cuda/check.hpp: CUDA runtime and driver call wrappers that turn failures into
// symm::error (SYMM_TRY_*) or, in destructors, into a line on stderr (SYMM_ASSERT_*).
#pragma once

#include <symm/detail/backend/cuda/driver.hpp>
#include <symm/detail/config.hpp>
#include <symm/error.hpp>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <fmt/core.h>

#include <cstdio>
#include <exception>
#include <source_location>
#include <string>
#include <string_view>

SYMM_BEGIN_NAMESPACE
namespace detail {

//! "cudaErrorInvalidValue (invalid argument)".
inline std::string cuda_error_text(cudaError_t status) {
  return fmt::format("{} ({})", cudaGetErrorName(status), cudaGetErrorString(status));
}

//! "CUDA_ERROR_OUT_OF_MEMORY (out of memory)"; falls back to the number when the driver table is
//! unavailable, since this runs on error paths that must not fail themselves.
inline std::string cu_error_text(CUresult status) {
  const char* name = nullptr;
  const char* text = nullptr;
  try {
    const driver_api& api = driver();
    if (api.cuGetErrorName(status, &name) != CUDA_SUCCESS) name = nullptr;
    if (api.cuGetErrorString(status, &text) != CUDA_SUCCESS) text = nullptr;
  } catch (...) {
  }
  if (name == nullptr) return fmt::format("CUresult {}", static_cast<int>(status));
  return fmt::format("{} ({})", name, text != nullptr ? text : "no description");
}

//! Whether CUDA refused a call because a stream capture is under way (or broke the capture by it): a host-blocking
//! symm operation (a blocking put, a host barrier, a staged copy) issued while the thread captures a graph.
inline bool is_capture_error(cudaError_t status) noexcept {
  return status == cudaErrorStreamCaptureUnsupported || status == cudaErrorStreamCaptureInvalidated ||
         status == cudaErrorStreamCaptureImplicit || status == cudaErrorStreamCaptureWrongThread ||
         status == cudaErrorStreamCaptureIsolation || status == cudaErrorCapturedEvent;
}
inline bool is_capture_error(CUresult status) noexcept {
  return status == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED || status == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED ||
         status == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT || status == CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD ||
         status == CUDA_ERROR_STREAM_CAPTURE_ISOLATION || status == CUDA_ERROR_CAPTURED_EVENT;
}
//! What a capture error means for a symm user, appended to its message.
inline constexpr std::string_view capture_error_hint =
    "; a CUDA stream capture is under way (on this thread, or in global mode on another): a symm call that blocks the "
    "host or synchronises a stream cannot be recorded into a CUDA graph, and CUDA may have invalidated the capture "
    "(end it and capture again with only the stream forms, which docs/guide.md lists under \"Stream-ordered steps "
    "and CUDA graphs\")";

//! Throws symm::error(errc::cuda) for a failed runtime call, after clearing the runtime's last error so
//! that a later, unrelated cudaGetLastError does not report it again (sticky errors stay, by design).
[[noreturn]] inline void throw_cuda_error(cudaError_t status, std::string_view call, std::string_view hint = {},
                                          std::source_location where = std::source_location::current()) {
  (void) cudaGetLastError();
  throw error(errc::cuda,
              fmt::format("{} failed: {}{}{}", call, cuda_error_text(status), hint,
                          is_capture_error(status) ? capture_error_hint : std::string_view{}),
              where);
}

//! Throws symm::error(errc::cuda) for a failed driver call. `call` says what was asked.
[[noreturn]] inline void throw_cu_error(CUresult status, std::string_view call, std::string_view hint = {},
                                        std::source_location where = std::source_location::current()) {
  throw error(errc::cuda,
              fmt::format("{} failed: {}{}{}", call, cu_error_text(status), hint,
                          is_capture_error(status) ? capture_error_hint : std::string_view{}),
              where);
}

// Errors at process exit, when the runtime or driver is already torn down, are expected for objects with
// static storage duration and not worth a line on stderr.
inline bool is_teardown(cudaError_t status) noexcept {
  return status == cudaErrorCudartUnloading;
}
inline bool is_teardown(CUresult status) noexcept {
  return status == CUDA_ERROR_DEINITIALIZED;
}

inline void report_cuda_error(cudaError_t status, const char* call, const char* file, int line) noexcept {
  (void) cudaGetLastError();
  if (is_teardown(status)) return;
  std::fprintf(stderr, "symm: %s failed: %s (%s) (%s:%d)\n", call, cudaGetErrorName(status), cudaGetErrorString(status),
               file, line);
}

inline void report_cu_error(CUresult status, const char* call, const char* file, int line) noexcept {
  if (is_teardown(status)) return;
  try {
    std::fprintf(stderr, "symm: %s failed: %s (%s:%d)\n", call, cu_error_text(status).c_str(), file, line);
  } catch (...) {
    std::fprintf(stderr, "symm: %s failed: CUresult %d (%s:%d)\n", call, static_cast<int>(status), file, line);
  }
}

} // namespace detail
SYMM_END_NAMESPACE

//! Evaluates a CUDA runtime call (cudaError_t); on failure clears the last error and throws
//! symm::error(errc::cuda) with the call text, the error name and its description.
#define SYMM_TRY_CUDA(expr)                                                                                            \
  do {                                                                                                                 \
    const ::cudaError_t symm_status_ = (expr);                                                                         \
    if (symm_status_ != ::cudaSuccess) ::symm::detail::throw_cuda_error(symm_status_, #expr);                          \
  } while (0)

//! Evaluates a CUDA driver call (CUresult); on failure throws symm::error(errc::cuda) with the call text,
//! the error name and its description.
#define SYMM_TRY_CU(expr)                                                                                              \
  do {                                                                                                                 \
    const ::CUresult symm_status_ = (expr);                                                                            \
    if (symm_status_ != ::CUDA_SUCCESS) ::symm::detail::throw_cu_error(symm_status_, #expr);                           \
  } while (0)

//! Destructor form of SYMM_TRY_CUDA: prints the failure to stderr and continues.
#define SYMM_ASSERT_CUDA(expr)                                                                                         \
  do {                                                                                                                 \
    const ::cudaError_t symm_status_ = (expr);                                                                         \
    if (symm_status_ != ::cudaSuccess) ::symm::detail::report_cuda_error(symm_status_, #expr, __FILE__, __LINE__);     \
  } while (0)

//! Destructor form of SYMM_TRY_CU: prints the failure to stderr and continues.
#define SYMM_ASSERT_CU(expr)                                                                                           \
  do {                                                                                                                 \
    const ::CUresult symm_status_ = (expr);                                                                            \
    if (symm_status_ != ::CUDA_SUCCESS) ::symm::detail::report_cu_error(symm_status_, #expr, __FILE__, __LINE__);      \
  } while (0)
