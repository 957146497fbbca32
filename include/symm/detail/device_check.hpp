// symm/detail/device_check.hpp: checks in device code. Level 1 traps with a fixed message (no printf, so no stack
// frame or local memory in the caller); level 2 prints the values first.
#pragma once

#include <symm/detail/config.hpp>

#if SYMM_CUDA_COMPILATION()
#  include <cstdio>
#  define SYMM_DEVICE_ASSERT_PE(pe, n_pes, what)                                                                       \
    do {                                                                                                               \
      if constexpr (SYMM_CHECK_LEVEL(2)) {                                                                             \
        if ((pe) < 0 || (pe) >= (n_pes)) {                                                                             \
          ::printf("symm: %s: PE %d is out of range [0, %d) (block %d, thread %d)\n", what, (pe), (n_pes),             \
                   static_cast<int>(blockIdx.x), static_cast<int>(threadIdx.x));                                       \
          __trap();                                                                                                    \
        }                                                                                                              \
      } else if constexpr (SYMM_CHECK_LEVEL(1)) {                                                                      \
        if ((pe) < 0 || (pe) >= (n_pes)) __trap();                                                                     \
      }                                                                                                                \
    } while (0)
//! A span argument that must hold `want` entries holds `got` (the _vector waits' values).
#  define SYMM_DEVICE_ASSERT_EXTENT(got, want, what)                                                                   \
    do {                                                                                                               \
      if constexpr (SYMM_CHECK_LEVEL(2)) {                                                                             \
        if ((got) != (want)) {                                                                                         \
          ::printf("symm: %s: %llu entries where %llu are needed (block %d, thread %d)\n", what,                       \
                   static_cast<unsigned long long>(got), static_cast<unsigned long long>(want),                        \
                   static_cast<int>(blockIdx.x), static_cast<int>(threadIdx.x));                                       \
          __trap();                                                                                                    \
        }                                                                                                              \
      } else if constexpr (SYMM_CHECK_LEVEL(1)) {                                                                      \
        if ((got) != (want)) __trap();                                                                                 \
      }                                                                                                                \
    } while (0)
#endif
