// symm/detail/device_choice.hpp: which GPU a PE uses. One policy, decided here from the world's options, the
// environment and what the driver reports, as a pure function of those facts, so that it is tested on machines
// without a GPU (tests/host/test_world.cpp).
//
// The policy (docs/launching.md, "Which GPU a PE uses"):
//   1. world_options::device, when set (>= 0);
//   2. else SYMM_DEVICE, a device number;
//   3. else the PE's local rank from its launcher (symmrun, Open MPI's OMPI_COMM_WORLD_LOCAL_RANK, PMI's
//      MPI_LOCALRANKID, Slurm's SLURM_LOCALID, torchrun's LOCAL_RANK) modulo the number of visible GPUs.
// Device numbers count the GPUs this process sees: CUDA_VISIBLE_DEVICES, when set, has already chosen and renumbered
// them. Several PEs on one GPU need MPS for their kernels to run at once: without it they time-slice, which a warning
// says; a GPU in exclusive-process mode takes one process only, which is an error before the heap is mapped.
#pragma once

#include <symm/detail/config.hpp>
#include <symm/error.hpp>

#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

SYMM_BEGIN_NAMESPACE
namespace detail {

//! What the choice depends on; world_state and cuda_heap gather it, tests write it by hand.
struct device_facts {
  int pe = 0;                                  //!< world PE, for messages
  int local_pe = 0;                            //!< the PE's rank among the PEs of its node
  int local_n_pes = 1;                         //!< how many PEs the node has
  std::string launcher = {};                   //!< where local_pe came from ("symmrun", "Open MPI", ...)
  std::string backend = "cuda";                //!< for messages
  int option_device = -1;                      //!< world_options::device; -1: not set
  std::optional<std::string> symm_device = {}; //!< SYMM_DEVICE
  std::optional<std::string> visible = {};     //!< CUDA_VISIBLE_DEVICES, for messages only
  int device_count = 0;                        //!< GPUs this process sees (cudaGetDeviceCount)
  bool mps = false;                            //!< an MPS control daemon answers for this process
  std::vector<bool> exclusive_process = {};    //!< per visible GPU: it admits one process only (compute mode)
};

//! The GPU of one PE and why.
struct device_choice {
  int device = 0;      //!< ordinal among the visible GPUs
  std::string reason;  //!< "SYMM_DEVICE=1", "local PE 3 of 4 (Open MPI) on GPU 3 % 2", ...
  std::string warning; //!< empty, or why this placement will be slow
};

//! How many of the node's PEs the policy puts on `device` when every one of them follows rule 3 (a PE that chose by
//! SYMM_DEVICE or the options is not counted: its choice is not known here).
[[nodiscard]] constexpr int local_pes_on_device(int device, int local_n_pes, int device_count) noexcept {
  if (device_count <= 0 || device >= device_count || device < 0) return 0;
  return local_n_pes / device_count + (device < local_n_pes % device_count ? 1 : 0);
}

//! Whether an MPS control daemon answers for this process: its pipe directory (CUDA_MPS_PIPE_DIRECTORY, else the
//! default /tmp/nvidia-mps) holds the control pipe. A hint for the warning above, not a guarantee.
inline bool mps_control_pipe_exists() {
  const char* dir = std::getenv("CUDA_MPS_PIPE_DIRECTORY");
  const std::string control = fmt::format("{}/control", dir != nullptr && *dir != '\0' ? dir : "/tmp/nvidia-mps");
  return ::access(control.c_str(), F_OK) == 0;
}

inline std::string visible_devices_note(const device_facts& f) {
  return f.visible ? fmt::format(" (CUDA_VISIBLE_DEVICES={})", *f.visible) : std::string{};
}

//! Applies the policy above. Throws errc::unsupported when no GPU is visible or an exclusive-process GPU would be
//! shared, errc::environment for a SYMM_DEVICE that is no device number, errc::invalid_argument for a device number
//! beyond the visible GPUs; every message names the PE and the values.
inline device_choice choose_device(const device_facts& f) {
  if (f.device_count <= 0) {
    SYMM_THROW(errc::unsupported,
               "PE {}: the {} backend needs a GPU, but CUDA reports none{} (driver missing, CUDA_VISIBLE_DEVICES "
               "empty?); use SYMM_BACKEND=host for the CPU backend",
               f.pe, f.backend, visible_devices_note(f));
  }
  device_choice choice;
  bool by_rank = false;
  if (f.option_device >= 0) {
    choice.device = f.option_device;
    choice.reason = fmt::format("world_options::device = {}", f.option_device);
  } else if (f.symm_device && !f.symm_device->empty()) {
    const std::string& text = *f.symm_device;
    int value = -1;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size() || value < 0) {
      SYMM_THROW(errc::environment, "PE {}: SYMM_DEVICE='{}' is not a device number (0 to {})", f.pe, text,
                 f.device_count - 1);
    }
    choice.device = value;
    choice.reason = fmt::format("SYMM_DEVICE={}", value);
  } else {
    const int local = f.local_pe < 0 ? 0 : f.local_pe;
    choice.device = local % f.device_count;
    by_rank = true;
    choice.reason =
        fmt::format("local PE {} of {}{} on GPU {} % {}", local, f.local_n_pes,
                    f.launcher.empty() ? std::string{} : fmt::format(" ({})", f.launcher), local, f.device_count);
  }
  if (choice.device >= f.device_count) {
    SYMM_THROW(errc::invalid_argument, "PE {}: GPU {} was asked for ({}), but only {} GPU{} visible{}", f.pe,
               choice.device, choice.reason, f.device_count, f.device_count == 1 ? " is" : "s are",
               visible_devices_note(f));
  }
  // Only the local-rank rule knows how many PEs share the GPU.
  const int sharing = by_rank ? local_pes_on_device(choice.device, f.local_n_pes, f.device_count) : 1;
  const auto device = static_cast<std::size_t>(choice.device);
  const bool exclusive = device < f.exclusive_process.size() && f.exclusive_process[device];
  if (sharing > 1 && exclusive && !f.mps) {
    SYMM_THROW(errc::unsupported,
               "PE {}: {} PEs of this node go to GPU {} ({}), but it is in exclusive-process compute mode, which "
               "admits one process: start MPS (nvidia-cuda-mps-control -d) or run at most {} PE{} per node",
               f.pe, sharing, choice.device, choice.reason, f.device_count, f.device_count == 1 ? "" : "s");
  }
  if (sharing > 1 && !f.mps) {
    choice.warning = fmt::format(
        "PE {}: {} PEs of this node share GPU {} and no MPS daemon answers: their kernels time-slice, so a device "
        "wait on a PE of the same GPU advances one time slice at a time (milliseconds per round trip). Start MPS "
        "(nvidia-cuda-mps-control -d) or run one PE per GPU",
        f.pe, sharing, choice.device);
  }
  return choice;
}

} // namespace detail
SYMM_END_NAMESPACE
