// symm/detail/backend/nvshmem/nvshmem_api.hpp: NVSHMEM's headers, as every symm header of the NVSHMEM backend includes
// them. A translation unit without device code (g++, or nvcc on a .cpp) sees only NVSHMEM's host library
// (NVSHMEM_HOSTLIB_ONLY, as NVSHMEM asks); one with device code sees the device API too, which needs relocatable device
// code (-rdc=true) and libnvshmem_device.a at the device link (docs/backends.md).
#pragma once

#include <symm/detail/config.hpp>

#if SYMM_NVSHMEM_BACKEND()
#  if !SYMM_CUDA_COMPILATION() && !defined(NVSHMEM_HOSTLIB_ONLY)
#    define NVSHMEM_HOSTLIB_ONLY
#  endif
#  if !__has_include(<nvshmem.h>)
#    error "symm: SYMM_ENABLE_NVSHMEM=1 but <nvshmem.h> is not on the include path (Meson: use symm_nvshmem_dep)"
#  endif
#  include <nvshmem.h>
#  include <nvshmemx.h>
#endif
