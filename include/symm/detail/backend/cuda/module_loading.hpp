// symm/detail/backend/cuda/module_loading.hpp: eager loading of CUDA modules for symm jobs.
//
// Since CUDA 12.2 the runtime loads a kernel at its first launch (lazy loading), and loading may wait for the kernels
// already running in the context to finish. PEs' kernels wait for each other (barriers, signals, wait_until), and PEs
// that share a GPU under MPS, or run as threads of one process, share a context: a PE whose kernel is loaded while
// its peers' kernels spin waiting for it never starts, and the job deadlocks. CUDA reads CUDA_MODULE_LOADING when it
// initialises, so symm asks for eager loading before its first CUDA call, unless the user chose a mode, and warns
// when CUDA was already initialised with lazy loading.
#pragma once

#include <symm/detail/backend/cuda/driver.hpp>
#include <symm/detail/config.hpp>
#include <symm/detail/env.hpp>

#include <cstdio>
#include <cstdlib>
#include <mutex>

SYMM_BEGIN_NAMESPACE
namespace detail {

//! Before any CUDA call of the process: CUDA_MODULE_LOADING=EAGER unless the variable is set. Once per process, so
//! that PEs running as threads do not call setenv concurrently.
inline void request_eager_module_loading() {
  static std::once_flag once;
  std::call_once(once, [] { set_env_default("CUDA_MODULE_LOADING", "EAGER"); });
}

//! After CUDA's initialisation: a warning (once per process) when kernels are loaded lazily after all.
inline void warn_if_lazy_module_loading(int pe) {
  static std::once_flag once;
  std::call_once(once, [pe] {
    PFN_cuModuleGetLoadingMode_v11070 get_mode = nullptr;
    try {
      load_driver_entry_point(get_mode, "cuModuleGetLoadingMode");
    } catch (...) {
      return; // a driver without the query has no lazy loading either
    }
    CUmoduleLoadingMode mode = CU_MODULE_EAGER_LOADING;
    if (get_mode(&mode) == CUDA_SUCCESS && mode == CU_MODULE_LAZY_LOADING) {
      std::fprintf(stderr,
                   "symm: PE %d: warning: CUDA loads kernels lazily (CUDA_MODULE_LOADING=LAZY, or CUDA was initialised "
                   "before the symm::world): a kernel's first launch may then wait for running kernels, which "
                   "deadlocks kernels that wait for other PEs. Set CUDA_MODULE_LOADING=EAGER.\n",
                   pe);
    }
  });
}

} // namespace detail
SYMM_END_NAMESPACE
