// symm/detail/config.hpp: the one family of platform macros every symm header uses.
#pragma once

// Checked first, so that a C++17 build gets this line instead of hundreds of errors from the headers below it.
#if __cplusplus < 202002L
#  error "symm needs C++20: compile with -std=c++20 (CMake: cxx_std_20, and cuda_std_20 for .cu sources)"
#  include <symm/detail/symm_needs_cxx20_see_the_error_above> // a missing header is fatal: the compiler stops here
#endif

#include <nv/target>

// How many teams a PE can belong to at once besides the world (symm::max_teams): a number from 1 to 4095, the same in
// every translation unit and every PE's program (-DSYMM_MAX_TEAMS=N). It sizes structures the translation units share,
// so another value than the default names the library's inline namespace after it: translation units built with
// different values then fail to link where they pass symm types to each other, instead of disagreeing silently.
#if !defined(SYMM_MAX_TEAMS)
#  define SYMM_MAX_TEAMS 128
#endif
#define SYMM_DETAIL_CONCAT2(a, b) a##b
#define SYMM_DETAIL_CONCAT(a, b) SYMM_DETAIL_CONCAT2(a, b)
#if SYMM_MAX_TEAMS == 128
#  define SYMM_ABI_NAMESPACE v0
#else
#  define SYMM_ABI_NAMESPACE SYMM_DETAIL_CONCAT(v0_max_teams_, SYMM_MAX_TEAMS)
#endif

#define SYMM_BEGIN_NAMESPACE                                                                                           \
  namespace symm {                                                                                                     \
  inline namespace SYMM_ABI_NAMESPACE {
#define SYMM_END_NAMESPACE                                                                                             \
  }                                                                                                                    \
  }

// Feature tests are function-like so that a typo is a compile error rather than a silent 0.
#if defined(__CUDACC__)
#  define SYMM_CUDA_COMPILATION() 1
#else
#  define SYMM_CUDA_COMPILATION() 0
#endif

// The CUDA backend (device heap over VMM/IPC) is compiled in when the CUDA runtime headers are
// reachable. Every translation unit of one program must agree: the Meson dependency sets it
// explicitly; a non-Meson build may define SYMM_ENABLE_CUDA to 0 or 1 itself.
#if !defined(SYMM_ENABLE_CUDA)
#  if SYMM_CUDA_COMPILATION() || __has_include(<cuda_runtime_api.h>)
#    define SYMM_ENABLE_CUDA 1
#  else
#    define SYMM_ENABLE_CUDA 0
#  endif
#endif
#define SYMM_CUDA_BACKEND() (SYMM_ENABLE_CUDA != 0)

// The NVSHMEM backend (symmetric heap from nvshmem_malloc, NVSHMEM RMA for peers without load/store access) needs
// NVSHMEM's headers, relocatable device code and NVSHMEM's libraries at link time, so it is never on by default: the
// Meson dependency symm_nvshmem_dep defines SYMM_ENABLE_NVSHMEM=1 (docs/backends.md). Every translation unit of one
// program must agree, as for SYMM_ENABLE_CUDA.
#if !defined(SYMM_ENABLE_NVSHMEM)
#  define SYMM_ENABLE_NVSHMEM 0
#endif
#define SYMM_NVSHMEM_BACKEND() (SYMM_ENABLE_NVSHMEM != 0)
#if SYMM_NVSHMEM_BACKEND() && !SYMM_CUDA_BACKEND()
#  error "symm: SYMM_ENABLE_NVSHMEM=1 needs the CUDA backend (SYMM_ENABLE_CUDA=1): NVSHMEM's heap is GPU memory"
#endif

#if SYMM_CUDA_COMPILATION()
#  define SYMM_HOST __host__
#  define SYMM_DEVICE __device__
#  define SYMM_HOST_DEVICE __host__ __device__
#  define SYMM_FORCEINLINE __forceinline__
#else
#  define SYMM_HOST
#  define SYMM_DEVICE
#  define SYMM_HOST_DEVICE
#  define SYMM_FORCEINLINE inline __attribute__((always_inline))
#endif

// Checking level: 0 = none, 1 = cheap checks (PE range, extents, team membership; the default),
// 2 = adds checks that cost communication or memory traffic.
#if !defined(SYMM_CHECK)
#  define SYMM_CHECK 1
#endif
#define SYMM_CHECK_LEVEL(level) (SYMM_CHECK >= (level))
