// symm/detail/backend/cuda/driver.hpp: the CUDA driver entry points symm calls, fetched through the
// runtime so that programs need no -lcuda (the runtime already loaded libcuda.so.1).
#pragma once

#include <symm/detail/config.hpp>
#include <symm/error.hpp>

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cudaTypedefs.h>

#include <fmt/core.h>

#include <string>

SYMM_BEGIN_NAMESPACE
namespace detail {

//! The ABI symm asks the driver for. Each pointer below is typed with the typedef of the newest ABI
//! version at or before CUDA 12.0; asking by this fixed version (not the toolkit's) keeps pointer and
//! typedef in agreement even when a later driver adds a `_v2` of a function.
inline constexpr unsigned int driver_abi_version = 12000;

//! Table of driver functions. Members are named exactly as the driver functions (not snake_case) so that
//! a search for a CUDA name finds every call, and the CUDA documentation applies unchanged.
//! Obtain it with `driver()`; the pointers stay valid for the life of the process.
struct driver_api {
  PFN_cuMemCreate_v10020 cuMemCreate = nullptr;
  PFN_cuMemRelease_v10020 cuMemRelease = nullptr;
  PFN_cuMemAddressReserve_v10020 cuMemAddressReserve = nullptr;
  PFN_cuMemAddressFree_v10020 cuMemAddressFree = nullptr;
  PFN_cuMemMap_v10020 cuMemMap = nullptr;
  PFN_cuMemUnmap_v10020 cuMemUnmap = nullptr;
  PFN_cuMemSetAccess_v10020 cuMemSetAccess = nullptr;
  PFN_cuMemExportToShareableHandle_v10020 cuMemExportToShareableHandle = nullptr;
  PFN_cuMemImportFromShareableHandle_v10020 cuMemImportFromShareableHandle = nullptr;
  PFN_cuMemGetAllocationGranularity_v10020 cuMemGetAllocationGranularity = nullptr;
  PFN_cuGetErrorName_v6000 cuGetErrorName = nullptr;
  PFN_cuGetErrorString_v6000 cuGetErrorString = nullptr;
  PFN_cuPointerGetAttribute_v4000 cuPointerGetAttribute = nullptr;
  PFN_cuDeviceGet_v2000 cuDeviceGet = nullptr;
  PFN_cuDeviceGetAttribute_v2000 cuDeviceGetAttribute = nullptr;
  // Host-side atomics and waits on the CUDA backend (host_atomics.hpp, host_atomics_wait.hpp): a PTX module of symm's
  // own, launched without the runtime knowing it.
  PFN_cuCtxGetCurrent_v4000 cuCtxGetCurrent = nullptr;
  PFN_cuModuleLoadData_v2000 cuModuleLoadData = nullptr;
  PFN_cuModuleGetFunction_v2000 cuModuleGetFunction = nullptr;
  PFN_cuLaunchKernel_v4000 cuLaunchKernel = nullptr;
};

//! "13.0" for 13000; "unknown" when the runtime cannot tell (no driver at all).
inline std::string driver_version_text() {
  int version = 0;
  if (cudaDriverGetVersion(&version) != cudaSuccess || version == 0) {
    (void) cudaGetLastError();
    return "unknown (no NVIDIA driver found)";
  }
  return fmt::format("{}.{}", version / 1000, (version % 1000) / 10);
}

//! Looks up one entry point; throws symm::error naming it and the driver version when it is missing.
template <class Pfn>
void load_driver_entry_point(Pfn& slot, const char* name) {
  void* address = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
  const cudaError_t status =
      cudaGetDriverEntryPointByVersion(name, &address, driver_abi_version, cudaEnableDefault, &found);
#else
  const cudaError_t status = cudaGetDriverEntryPoint(name, &address, cudaEnableDefault, &found);
#endif
  if (status != cudaSuccess) {
    (void) cudaGetLastError();
    SYMM_THROW(errc::cuda,
               "could not query the CUDA driver for {}: {} ({}); driver version {}. Check that the NVIDIA driver "
               "is installed and at least as new as the CUDA runtime ({}.{}), and that a GPU is visible",
               name, cudaGetErrorName(status), cudaGetErrorString(status), driver_version_text(), CUDART_VERSION / 1000,
               (CUDART_VERSION % 1000) / 10);
  }
  if (found != cudaDriverEntryPointSuccess || address == nullptr) {
    SYMM_THROW(
        errc::unsupported,
        "the CUDA driver (version {}) has no entry point {} for ABI {}.{} ({}); update the NVIDIA driver", name,
        driver_version_text(), driver_abi_version / 1000, (driver_abi_version % 1000) / 10,
        found == cudaDriverEntryPointVersionNotSufficent ? "driver too old for that version" : "symbol not found");
  }
  slot = reinterpret_cast<Pfn>(address);
}

//! The driver table, loaded on first use (thread-safe: a function-local static). Throws symm::error when
//! the runtime cannot reach a driver or an entry point is missing; a later call then tries again.
//! Several shared libraries that each include this header may each hold a copy; that is harmless.
inline const driver_api& driver() {
  static const driver_api table = [] {
    driver_api t;
#define SYMM_LOAD_DRIVER_ENTRY_POINT(name) load_driver_entry_point(t.name, #name)
    SYMM_LOAD_DRIVER_ENTRY_POINT(cuMemCreate);
    SYMM_LOAD_DRIVER_ENTRY_POINT(cuMemRelease);
    SYMM_LOAD_DRIVER_ENTRY_POINT(cuMemAddressReserve);
    SYMM_LOAD_DRIVER_ENTRY_POINT(cuMemAddressFree);
    SYMM_LOAD_DRIVER_ENTRY_POINT(cuMemMap);
    SYMM_LOAD_DRIVER_ENTRY_POINT(cuMemUnmap);
    SYMM_LOAD_DRIVER_ENTRY_POINT(cuMemSetAccess);
    SYMM_LOAD_DRIVER_ENTRY_POINT(cuMemExportToShareableHandle);
    SYMM_LOAD_DRIVER_ENTRY_POINT(cuMemImportFromShareableHandle);
    SYMM_LOAD_DRIVER_ENTRY_POINT(cuMemGetAllocationGranularity);
    SYMM_LOAD_DRIVER_ENTRY_POINT(cuGetErrorName);
    SYMM_LOAD_DRIVER_ENTRY_POINT(cuGetErrorString);
    SYMM_LOAD_DRIVER_ENTRY_POINT(cuPointerGetAttribute);
    SYMM_LOAD_DRIVER_ENTRY_POINT(cuDeviceGet);
    SYMM_LOAD_DRIVER_ENTRY_POINT(cuDeviceGetAttribute);
    SYMM_LOAD_DRIVER_ENTRY_POINT(cuCtxGetCurrent);
    SYMM_LOAD_DRIVER_ENTRY_POINT(cuModuleLoadData);
    SYMM_LOAD_DRIVER_ENTRY_POINT(cuModuleGetFunction);
    SYMM_LOAD_DRIVER_ENTRY_POINT(cuLaunchKernel);
#undef SYMM_LOAD_DRIVER_ENTRY_POINT
    return t;
  }();
  return table;
}

} // namespace detail
SYMM_END_NAMESPACE
