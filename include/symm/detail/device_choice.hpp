// symm/detail/device_choice.hpp: which GPU a PE uses, and whether the processes on one GPU can share it. One policy,
// decided here as pure functions of facts (the world's options, the environment, what the driver reports, what the
// PEs tell each other at start-up), so that it is tested on machines without a GPU (tests/host/test_world.cpp).
//
// The policy (docs/launching.md, "Which GPU a PE uses"):
//   1. world_options::device, when set (>= 0);
//   2. else SYMM_DEVICE, a device number;
//   3. else the PE's local rank from its launcher (symmrun, Open MPI's OMPI_COMM_WORLD_LOCAL_RANK, PMI's
//      MPI_LOCALRANKID, Slurm's SLURM_LOCALID, torchrun's LOCAL_RANK; without one, the PE's number among the PEs of
//      its node) modulo the number of visible GPUs.
// Device numbers count the GPUs this process sees: CUDA_VISIBLE_DEVICES, when set, has already chosen and renumbered
// them. Once every PE has chosen, the PEs compare GPUs by node and PCI bus id: several processes on one GPU need MPS
// for their kernels to run at once (threads of one process share a context and need nothing); without it they
// time-slice, which a warning says, and a GPU in exclusive-process mode refuses the second process, which is an error
// on every PE before the heap is mapped.
#pragma once

#include <symm/detail/config.hpp>
#include <symm/detail/env.hpp>
#include <symm/error.hpp>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

SYMM_BEGIN_NAMESPACE
namespace detail {

//! What the choice depends on; cuda_heap gathers it (device_facts_of and the driver), tests write it by hand.
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
};

//! The GPU of one PE and why.
struct device_choice {
  int device = 0;     //!< ordinal among the visible GPUs
  std::string reason; //!< "SYMM_DEVICE=1", "local PE 3 of 4 (Open MPI) on GPU 3 % 2", ...
};

//! The facts that come from the job (the PE and its local rank); the caller adds the options, the environment and
//! the device count.
inline device_facts device_facts_of(const job_info& job) {
  device_facts f;
  f.pe = job.pe;
  f.local_pe = job.local_pe;
  f.local_n_pes = job.local_n_pes;
  f.launcher = job.source;
  return f;
}

inline std::string visible_devices_note(const device_facts& f) {
  return f.visible ? fmt::format(" (CUDA_VISIBLE_DEVICES={})", *f.visible) : std::string{};
}

//! Applies the policy above. Throws errc::unsupported when no GPU is visible, errc::environment for a SYMM_DEVICE that
//! is no device number, errc::invalid_argument for a device number beyond the visible GPUs; every message names the
//! PE and the values.
inline device_choice choose_device(const device_facts& f) {
  if (f.device_count <= 0) {
    SYMM_THROW(errc::unsupported,
               "PE {}: the {} backend needs a GPU, but CUDA reports none{} (driver missing, CUDA_VISIBLE_DEVICES "
               "empty?); use SYMM_BACKEND=host for the CPU backend",
               f.pe, f.backend, visible_devices_note(f));
  }
  device_choice choice;
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
    choice.reason =
        fmt::format("local PE {} of {}{} on GPU {} % {}", local, f.local_n_pes,
                    f.launcher.empty() ? std::string{} : fmt::format(" ({})", f.launcher), local, f.device_count);
  }
  if (choice.device >= f.device_count) {
    SYMM_THROW(errc::invalid_argument, "PE {}: GPU {} was asked for ({}), but only {} GPU{} visible{}", f.pe,
               choice.device, choice.reason, f.device_count, f.device_count == 1 ? " is" : "s are",
               visible_devices_note(f));
  }
  return choice;
}

//! One PE's GPU as it tells the others at start-up (cuda_heap gathers them through the bootstrap).
struct gpu_user {
  int pe = 0;
  std::string node;       //!< the PE's node (job_layout's name)
  std::string bus_id;     //!< PCI bus id of its GPU: the same GPU has the same id in every process of a node
  std::uint32_t pid = 0;  //!< its process: PEs of one process (threads) share a context
  bool exclusive = false; //!< the GPU is in exclusive-process compute mode
  bool mps = false;       //!< an MPS daemon answers for this PE's process
};

//! What the PEs' GPUs mean for PE `me`: `error`, the same on every PE (each throws it), when processes without MPS
//! share a GPU in exclusive-process mode; else `warning`, for the PE of lowest number on each GPU that processes share
//! without MPS (their kernels time-slice), empty for every other PE.
struct gpu_sharing {
  std::string warning;
  std::string error;
};

inline gpu_sharing judge_gpu_sharing(const std::vector<gpu_user>& users, int me) {
  gpu_sharing verdict;
  const auto same_gpu = [](const gpu_user& a, const gpu_user& b) { return a.node == b.node && a.bus_id == b.bus_id; };
  for (std::size_t first = 0; first < users.size(); ++first) {
    const gpu_user& u = users[first];
    // Each GPU once, at the first PE (in PE order) that uses it.
    bool seen_before = false;
    for (std::size_t i = 0; i < first && !seen_before; ++i)
      seen_before = same_gpu(users[i], u);
    if (seen_before) continue;
    std::vector<std::uint32_t> processes;
    std::string pes;
    bool exclusive = false, all_mps = true;
    for (const gpu_user& v : users) {
      if (!same_gpu(v, u)) continue;
      if (std::find(processes.begin(), processes.end(), v.pid) == processes.end()) processes.push_back(v.pid);
      pes += fmt::format("{}{}", pes.empty() ? "" : ", ", v.pe);
      exclusive = exclusive || v.exclusive;
      all_mps = all_mps && v.mps;
    }
    if (processes.size() < 2 || all_mps) continue;
    const std::string gpu = fmt::format("GPU {} of node {}", u.bus_id, u.node);
    if (exclusive) {
      if (verdict.error.empty()) {
        verdict.error = fmt::format(
            "PEs {} ({} processes) use {}, which is in exclusive-process compute mode and admits one process, and no "
            "MPS daemon answers: start MPS (nvidia-cuda-mps-control -d) or run one process per GPU",
            pes, processes.size(), gpu);
      }
    } else if (u.pe == me) {
      verdict.warning = fmt::format(
          "PEs {} ({} processes) share {} and no MPS daemon answers: their kernels time-slice, so a device wait "
          "between them advances one time slice at a time (milliseconds per round trip). Start MPS "
          "(nvidia-cuda-mps-control -d), run one process per GPU, or run the PEs as threads of one process "
          "(symm::launch)",
          pes, processes.size(), gpu);
    }
  }
  return verdict;
}

//! The most PEs that use one GPU (same node and bus id), at least 1.
inline unsigned max_pes_per_gpu(const std::vector<gpu_user>& users) {
  unsigned most = 1;
  for (const gpu_user& u : users) {
    const auto on_it = std::count_if(users.begin(), users.end(), [&](const gpu_user& v) {
      return v.node == u.node && v.bus_id == u.bus_id;
    });
    most = std::max(most, static_cast<unsigned>(on_it));
  }
  return most;
}

//! How one PE's process can reach another PE's GPU on its node (cuda_heap asks the driver; judge_peer_access decides).
enum class peer_path : std::uint8_t {
  usable = 0,            //!< the same GPU, or peer access with native atomics
  not_visible = 1,       //!< the peer's GPU is not visible to this process (CUDA_VISIBLE_DEVICES): nothing to ask
  no_peer_access = 2,    //!< the driver reports no peer access between the two GPUs
  no_native_atomics = 3, //!< peer access, but atomics from this GPU on the other's memory would not be atomic
  query_failed = 4,      //!< the driver did not answer (cudaDeviceCanAccessPeer or cudaDeviceGetP2PAttribute failed)
};

//! What the driver answers for a pair of GPUs, as a path. `visible`: the peer's GPU is visible to this process (only
//! then can the driver be asked); `access`: cudaDeviceCanAccessPeer; `native_atomics`: the pair's
//! cudaDevP2PAttrNativeAtomicSupported.
constexpr peer_path classify_peer(bool visible, bool access, bool native_atomics) noexcept {
  if (!visible) return peer_path::not_visible;
  if (!access) return peer_path::no_peer_access;
  if (!native_atomics) return peer_path::no_native_atomics;
  return peer_path::usable;
}

//! The first peer a PE cannot use (-1: none), and why: what each PE tells the others after asking the driver.
struct peer_problem {
  std::int32_t peer = -1;
  peer_path path = peer_path::usable;
};

//! The error every PE throws when some PE cannot reach another PE's GPU, empty when all can: the first problem in PE
//! order, naming both PEs, both GPUs and the way out. `users` as judge_gpu_sharing takes them; `problems[pe]` what PE
//! pe reported. The cuda backend maps every PE's heap into every other PE's GPU: each pair of GPUs needs peer access
//! (NVLink, or PCIe peer-to-peer), and atomics on a peer's memory need the pair's native atomics.
inline std::string judge_peer_access(const std::vector<gpu_user>& users, const std::vector<peer_problem>& problems) {
  for (std::size_t pe = 0; pe < problems.size(); ++pe) {
    const peer_problem& problem = problems[pe];
    if (problem.peer < 0 || problem.path == peer_path::usable || problem.path == peer_path::not_visible) continue;
    const gpu_user& me = users[pe];
    const gpu_user& other = users[static_cast<std::size_t>(problem.peer)];
    const std::string pair =
        fmt::format("PE {} (GPU {} of node {}) and PE {} (GPU {})", me.pe, me.bus_id, me.node, other.pe, other.bus_id);
    const std::string_view way_out =
        "symm's cuda backend maps every PE's heap into every other PE's GPU, which needs NVLink or PCIe peer-to-peer "
        "with native atomics between every pair of GPUs of a node. Run the PEs of a node on GPUs that have it "
        "(nvidia-smi topo -p2p rwa shows which), on one GPU (CUDA_VISIBLE_DEVICES, several PEs per GPU under MPS), "
        "or use the nvshmem backend (SYMM_BACKEND=nvshmem), which reaches such peers through its proxy";
    if (problem.path == peer_path::no_peer_access) {
      return fmt::format("{}: the driver reports no peer access between these GPUs (cudaDeviceCanAccessPeer is 0). {}",
                         pair, way_out);
    }
    if (problem.path == peer_path::query_failed) {
      return fmt::format("{}: the driver could not say whether these GPUs have peer access (cudaDeviceCanAccessPeer or "
                         "cudaDeviceGetP2PAttribute failed on PE {}). {}",
                         pair, me.pe, way_out);
    }
    return fmt::format("{}: the GPUs have peer access but no native atomics between them "
                       "(cudaDevP2PAttrNativeAtomicSupported is 0), so symm's atomics and signals on each other's "
                       "memory would not be atomic. {}",
                       pair, way_out);
  }
  return {};
}

//! The pipe directory where an MPS daemon listens for this process: CUDA_MPS_PIPE_DIRECTORY, else the default.
inline constexpr std::string_view default_mps_pipe_directory = "/tmp/nvidia-mps";

//! Whether an MPS daemon answers where this process's CUDA runtime will look: connecting to its control socket (a
//! SOCK_SEQPACKET socket) is not refused. The socket file alone says nothing: a daemon told to quit leaves it behind,
//! and connecting to it is then refused (checked on an H100 with the driver's MPS). Non-blocking, so that a busy
//! daemon (a full backlog: EAGAIN) counts as there instead of stalling start-up; errno is left as it was.
inline bool mps_daemon_reachable() {
  const std::optional<std::string> dir = get_env("CUDA_MPS_PIPE_DIRECTORY");
  const std::string control =
      fmt::format("{}/control", dir && !dir->empty() ? std::string_view(*dir) : default_mps_pipe_directory);
  struct stat info {};
  if (::stat(control.c_str(), &info) != 0 || !S_ISSOCK(info.st_mode)) return false;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (control.size() >= sizeof(address.sun_path)) return true; // too long to connect to by name: trust the file
  std::memcpy(address.sun_path, control.c_str(), control.size() + 1);
  const int saved_errno = errno;
  const int socket_fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (socket_fd < 0) {
    errno = saved_errno;
    return true; // cannot ask: trust the file
  }
  // Refused or gone means no daemon; anything else (connected, busy, another socket type) means one listens.
  const bool answers = ::connect(socket_fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0 ||
                       (errno != ECONNREFUSED && errno != ENOENT);
  ::close(socket_fd);
  errno = saved_errno;
  return answers;
}

} // namespace detail
SYMM_END_NAMESPACE
