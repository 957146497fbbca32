// symm/detail/backend/cuda/vmm_segment.hpp: one PE's device heap segment (cuMemCreate + POSIX fd export)
// and the mapping of another PE's segment into this process.
#pragma once

#include <symm/detail/backend/cuda/check.hpp>
#include <symm/detail/backend/cuda/driver.hpp>
#include <symm/detail/config.hpp>
#include <symm/detail/env.hpp>
#include <symm/error.hpp>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <fmt/core.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

SYMM_BEGIN_NAMESPACE
namespace detail {

//! Segments are sized and aligned to at least this, whatever the device reports, so that sizes agree
//! between PEs on different GPU models and large pages are always possible.
inline constexpr std::size_t segment_size_floor = std::size_t{2} << 20;

//! What to do when fd-based CUDA IPC is refused; appended to every error on that path.
inline constexpr std::string_view fd_ipc_hint =
    ". symm's CUDA backend shares device memory as POSIX file descriptors passed over a Unix socket: this works "
    "only between processes on one host that see the same GPUs (between containers this may also need the host's "
    "IPC and PID namespaces and the same /dev/nvidia* devices); some virtualised GPUs (vGPU, WSL) do not offer it "
    "at all. For PEs on several nodes use the NVSHMEM backend";

//! Makes `device` current for a scope and restores the caller's device, so that library calls never change
//! which device the calling thread works on.
class device_scope {
public:
  explicit device_scope(int device) {
    SYMM_TRY_CUDA(cudaGetDevice(&previous_));
    if (previous_ != device) {
      SYMM_TRY_CUDA(cudaSetDevice(device));
      changed_ = true;
    }
  }
  ~device_scope() {
    if (changed_) SYMM_ASSERT_CUDA(cudaSetDevice(previous_));
  }
  device_scope(const device_scope&) = delete;
  device_scope& operator=(const device_scope&) = delete;

private:
  int previous_ = 0;
  bool changed_ = false;
};

inline std::string visible_devices_text() {
  const std::optional<std::string> visible = get_env("CUDA_VISIBLE_DEVICES");
  return visible ? fmt::format("CUDA_VISIBLE_DEVICES={}", *visible) : "CUDA_VISIBLE_DEVICES unset";
}

//! Throws unless `device` names a device this process sees; `role` says whose device it is in the message.
inline void check_device_ordinal(int device, std::string_view role) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess)
    throw_cuda_error(status, "cudaGetDeviceCount",
                     fmt::format("; driver version {}, {}. Check nvidia-smi, and in a container that the GPUs are "
                                 "passed in",
                                 driver_version_text(), visible_devices_text()));
  if (device < 0 || device >= count)
    SYMM_THROW(errc::invalid_argument, "{} device {} is out of range: this process sees {} CUDA device(s) ({})", role,
               device, count, visible_devices_text());
}

inline int device_attribute(int device, CUdevice_attribute attribute, std::string_view attribute_name) {
  CUdevice handle = 0;
  const CUresult got = driver().cuDeviceGet(&handle, device);
  if (got != CUDA_SUCCESS) throw_cu_error(got, fmt::format("cuDeviceGet for device {}", device));
  int value = 0;
  const CUresult status = driver().cuDeviceGetAttribute(&value, attribute, handle);
  if (status != CUDA_SUCCESS)
    throw_cu_error(status, fmt::format("cuDeviceGetAttribute({}) for device {}", attribute_name, device));
  return value;
}

//! Throws errc::unsupported, explaining, when `device` cannot hold an fd-shareable VMM segment.
inline void require_vmm_fd_support(int device, std::string_view asked) {
  if (device_attribute(device, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                       "CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED") == 0)
    SYMM_THROW(errc::unsupported,
               "{}: device {} does not support CUDA virtual memory management (cuMemCreate/cuMemMap), which "
               "symm's CUDA backend needs; use a GPU and driver with VMM support (compute capability 6.0+, Linux)",
               asked, device);
  if (device_attribute(device, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
                       "CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED") == 0)
    SYMM_THROW(errc::unsupported,
               "{}: device {} cannot export memory as a POSIX file descriptor "
               "(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED is 0){}",
               asked, device, fd_ipc_hint);
}

//! Pinned device memory on `device`, exportable as a POSIX file descriptor.
inline CUmemAllocationProp segment_properties(int device) noexcept {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  return prop;
}

//! The multiple that segment sizes and addresses on `device` use: the least common multiple of the
//! minimum and recommended granularities and 2 MiB (all powers of two in practice, so their maximum).
inline std::size_t segment_granularity(int device) {
  const CUmemAllocationProp prop = segment_properties(device);
  std::size_t minimum = 0;
  std::size_t recommended = 0;
  CUresult status = driver().cuMemGetAllocationGranularity(&minimum, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  if (status == CUDA_SUCCESS)
    status = driver().cuMemGetAllocationGranularity(&recommended, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
  if (status != CUDA_SUCCESS)
    throw_cu_error(
        status,
        fmt::format("cuMemGetAllocationGranularity for pinned memory on device {} with POSIX fd handles", device),
        fd_ipc_hint);
  std::size_t granularity = segment_size_floor;
  if (minimum != 0) granularity = std::lcm(granularity, minimum);
  if (recommended != 0) granularity = std::lcm(granularity, recommended);
  return granularity;
}

//! Devices other than `device` that can reach its memory peer to peer.
inline std::vector<int> peers_of(int device) {
  int count = 0;
  SYMM_TRY_CUDA(cudaGetDeviceCount(&count));
  std::vector<int> peers;
  for (int other = 0; other < count; ++other) {
    if (other == device) continue;
    int can_access = 0;
    SYMM_TRY_CUDA(cudaDeviceCanAccessPeer(&can_access, other, device));
    if (can_access != 0) peers.push_back(other);
  }
  return peers;
}

//! Grants read/write access to `devices` on [base, base + size).
inline void set_access(CUdeviceptr base, std::size_t size, const std::vector<int>& devices, std::string_view whose) {
  std::vector<CUmemAccessDesc> access(devices.size());
  for (std::size_t i = 0; i < devices.size(); ++i) {
    access[i].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access[i].location.id = devices[i];
    access[i].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  }
  const CUresult status = driver().cuMemSetAccess(base, size, access.data(), access.size());
  if (status != CUDA_SUCCESS) {
    std::string listed;
    for (std::size_t i = 0; i < devices.size(); ++i)
      listed += fmt::format("{}{}", i == 0 ? "" : ", ", devices[i]);
    throw_cu_error(status,
                   fmt::format("cuMemSetAccess (read/write) on {} ({} bytes) for device(s) {}", whose, size, listed));
  }
}

//! One PE's device heap segment: physical memory on one device, mapped read/write at `base()` for that
//! device and every device that can reach it peer to peer, and exportable to other processes as a POSIX
//! file descriptor (`export_fd()`).
//!
//! Lifetime: the memory lives until this object is destroyed AND every peer_mapping of it and every
//! exported fd not yet closed are gone (the driver counts those references). The object is movable, not
//! copyable; a moved-from segment is empty (`base() == nullptr`). Construction and destruction change no
//! thread's current device.
class local_segment {
public:
  //! Creates and maps at least `min_bytes` on `device`, rounded up to `granularity()` (a multiple of
  //! 2 MiB and of the device's recommended granularity). Throws symm::error: invalid_argument for a bad
  //! device or size, unsupported when the device cannot share memory as POSIX fds, cuda (with the free
  //! memory) when the allocation fails.
  local_segment(int device, std::size_t min_bytes) : device_(device) {
    const std::string asked = fmt::format("a symmetric heap segment of {} bytes on device {}", min_bytes, device);
    check_device_ordinal(device, "heap segment");
    if (min_bytes == 0) SYMM_THROW(errc::invalid_argument, "{}: the size must be positive", asked);
    require_vmm_fd_support(device, asked);
    device_scope on_device(device);
    granularity_ = segment_granularity(device);
    if (min_bytes > std::numeric_limits<std::size_t>::max() - granularity_)
      SYMM_THROW(errc::invalid_argument, "{}: the size overflows when rounded up to {} bytes", asked, granularity_);
    const std::size_t size = (min_bytes + granularity_ - 1) / granularity_ * granularity_;
    const std::string what =
        fmt::format("{} bytes ({} asked, granularity {}) on device {}", size, min_bytes, granularity_, device);
    try {
      const CUmemAllocationProp prop = segment_properties(device);
      CUresult status = driver().cuMemCreate(&handle_, size, &prop, 0);
      if (status == CUDA_ERROR_OUT_OF_MEMORY) {
        std::size_t free_bytes = 0;
        std::size_t total_bytes = 0;
        (void) cudaMemGetInfo(&free_bytes, &total_bytes);
        (void) cudaGetLastError();
        throw_cu_error(status, fmt::format("cuMemCreate of {}", what),
                       fmt::format("; the device has {} of {} bytes free: ask for a smaller heap (SYMM_HEAP_SIZE) or "
                                   "run fewer PEs on this GPU",
                                   free_bytes, total_bytes));
      }
      if (status != CUDA_SUCCESS)
        throw_cu_error(status, fmt::format("cuMemCreate with POSIX fd handles of {}", what), fd_ipc_hint);
      has_handle_ = true;
      size_ = size;

      status = driver().cuMemAddressReserve(&base_, size, granularity_, 0, 0);
      if (status != CUDA_SUCCESS)
        throw_cu_error(status, fmt::format("cuMemAddressReserve of {} bytes of virtual address space aligned to {}",
                                           size, granularity_));
      status = driver().cuMemMap(base_, size, 0, handle_, 0);
      if (status != CUDA_SUCCESS) throw_cu_error(status, fmt::format("cuMemMap of {}", what));
      mapped_ = true;

      std::vector<int> devices{device};
      for (int peer : peers_of(device))
        devices.push_back(peer);
      set_access(base_, size, devices, fmt::format("the heap segment of device {}", device));
    } catch (...) {
      release();
      throw;
    }
  }

  ~local_segment() { release(); }

  local_segment(local_segment&& other) noexcept
      : device_(other.device_), granularity_(other.granularity_), size_(std::exchange(other.size_, 0)),
        handle_(std::exchange(other.handle_, 0)), base_(std::exchange(other.base_, 0)),
        has_handle_(std::exchange(other.has_handle_, false)), mapped_(std::exchange(other.mapped_, false)) {}

  local_segment& operator=(local_segment&& other) noexcept {
    if (this != &other) {
      release();
      device_ = other.device_;
      granularity_ = other.granularity_;
      size_ = std::exchange(other.size_, 0);
      handle_ = std::exchange(other.handle_, 0);
      base_ = std::exchange(other.base_, 0);
      has_handle_ = std::exchange(other.has_handle_, false);
      mapped_ = std::exchange(other.mapped_, false);
    }
    return *this;
  }

  local_segment(const local_segment&) = delete;
  local_segment& operator=(const local_segment&) = delete;

  //! Start of the segment in this process; valid in device code on `device()` and its P2P peers, until
  //! destruction. Null after a move.
  [[nodiscard]] void* base() const noexcept { return reinterpret_cast<void*>(base_); }
  //! Bytes mapped: `min_bytes` rounded up to `granularity()`.
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  //! The device holding the memory (ordinal in this process).
  [[nodiscard]] int device() const noexcept { return device_; }
  //! The multiple sizes and addresses were rounded to.
  [[nodiscard]] std::size_t granularity() const noexcept { return granularity_; }

  //! A new POSIX file descriptor for the allocation, owned by the caller (close it once every peer has
  //! imported it: until then it keeps the memory alive). Marked close-on-exec. Pass it to other processes
  //! with SCM_RIGHTS; they map it with peer_mapping(fd, size(), device(), their_device). Throws symm::error.
  [[nodiscard]] int export_fd() const {
    if (!has_handle_) SYMM_THROW(errc::invalid_argument, "export_fd on an empty (moved-from) heap segment");
    int fd = -1;
    const CUresult status =
        driver().cuMemExportToShareableHandle(&fd, handle_, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    if (status != CUDA_SUCCESS)
      throw_cu_error(status,
                     fmt::format("cuMemExportToShareableHandle (POSIX fd) of the {}-byte heap segment of device {}",
                                 size_, device_),
                     fd_ipc_hint);
    // Close-on-exec: an exec'd child must not inherit a reference that keeps device memory alive.
    const int flags = ::fcntl(fd, F_GETFD);
    if (flags == -1 || ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC) == -1) {
      const int saved = errno;
      ::close(fd);
      SYMM_THROW(errc::system, "fcntl(FD_CLOEXEC) on the exported heap segment fd failed: {} (errno {})",
                 std::strerror(saved), saved);
    }
    return fd;
  }

private:
  void release() noexcept {
    if (mapped_) SYMM_ASSERT_CU(driver().cuMemUnmap(base_, size_));
    if (base_ != 0) SYMM_ASSERT_CU(driver().cuMemAddressFree(base_, size_));
    if (has_handle_) SYMM_ASSERT_CU(driver().cuMemRelease(handle_));
    mapped_ = false;
    base_ = 0;
    has_handle_ = false;
    handle_ = 0;
    size_ = 0;
  }

  int device_ = -1;
  std::size_t granularity_ = 0;
  std::size_t size_ = 0;
  CUmemGenericAllocationHandle handle_ = 0;
  CUdeviceptr base_ = 0;
  bool has_handle_ = false;
  bool mapped_ = false;
};

//! Another PE's heap segment, imported from the fd its local_segment exported and mapped read/write into
//! this process for `local_device` (and the owner's device, when this process sees it).
//!
//! Device ordinals are as this process numbers devices: PEs must agree on CUDA_VISIBLE_DEVICES (or the
//! caller translates owner_device first).
//!
//! Same process: importing an fd this process exported works (checked on an H200 with driver 580.159: the
//! second mapping has its own address and sees the owner's writes), although the CUDA documentation
//! promises nothing here ("no guarantee that the contents of handle will be the same CUDA memory handle
//! for the same given OS shareable handle, or the same underlying allocation"); the imported handle is
//! therefore treated as a reference of its own and released on its own. No registry fallback: every
//! exported fd is an open of /dev/nvidiactl with the same inode, so the fd's file cannot tell allocations
//! apart. PEs that share a process should share local_segment::base() instead of mapping at all; the error
//! of a refused import says so.
//!
//! Lifetime: the fd is only borrowed; close it once the constructor returns. The mapping (and so the
//! owner's memory) stays valid until this object is destroyed, even if the owner frees its segment first;
//! reading memory the owner has stopped using is the caller's problem, not a crash. Movable, not copyable.
class peer_mapping {
public:
  //! Maps `size` bytes (exactly the owner's local_segment::size()) of the allocation behind `fd`. Throws
  //! symm::error: invalid_argument for a bad fd, size or device; unsupported when the devices cannot reach
  //! each other; cuda, with what to do, when the driver refuses the import (other host, container
  //! boundaries).
  peer_mapping(int fd, std::size_t size, int owner_device, int local_device) : device_(local_device) {
    const std::string asked = fmt::format(
        "mapping fd {} ({} bytes of device {}'s heap segment) for device {}", fd, size, owner_device, local_device);
    if (fd < 0) SYMM_THROW(errc::invalid_argument, "{}: the fd is not valid", asked);
    if (size == 0 || size % segment_size_floor != 0)
      SYMM_THROW(errc::invalid_argument,
                 "{}: the size must be the exporter's local_segment::size() (a positive multiple of {} bytes)", asked,
                 segment_size_floor);
    check_device_ordinal(local_device, "local");
    require_vmm_fd_support(local_device, asked);
    int device_count = 0;
    SYMM_TRY_CUDA(cudaGetDeviceCount(&device_count));
    const bool owner_visible = owner_device >= 0 && owner_device < device_count && owner_device != local_device;
    if (owner_visible) {
      int can_access = 0;
      SYMM_TRY_CUDA(cudaDeviceCanAccessPeer(&can_access, local_device, owner_device));
      if (can_access == 0)
        SYMM_THROW(errc::unsupported,
                   "{}: device {} cannot access device {} peer to peer (no NVLink or PCIe P2P path, or P2P disabled "
                   "by the platform); run these PEs on GPUs that can reach each other (see nvidia-smi topo -m)",
                   asked, local_device, owner_device);
    }
    device_scope on_device(local_device);

    try {
      std::size_t alignment = segment_granularity(local_device);
      if (owner_visible) alignment = std::lcm(alignment, segment_granularity(owner_device));

      const CUresult imported = driver().cuMemImportFromShareableHandle(
          &handle_, reinterpret_cast<void*>(static_cast<std::uintptr_t>(fd)), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
      if (imported != CUDA_SUCCESS)
        throw_cu_error(imported, fmt::format("cuMemImportFromShareableHandle for {}", asked),
                       fmt::format("; if the fd was exported by this same process, map nothing: use the exporter's "
                                   "local_segment::base() directly{}",
                                   fd_ipc_hint));
      has_handle_ = true;

      CUresult status = driver().cuMemAddressReserve(&base_, size, alignment, 0, 0);
      if (status != CUDA_SUCCESS)
        throw_cu_error(status,
                       fmt::format("cuMemAddressReserve of {} bytes aligned to {} for {}", size, alignment, asked));
      size_ = size;
      status = driver().cuMemMap(base_, size, 0, handle_, 0);
      if (status != CUDA_SUCCESS)
        throw_cu_error(status, fmt::format("cuMemMap for {}", asked),
                       "; check that the size is exactly the exporter's local_segment::size()");
      mapped_ = true;

      std::vector<int> devices{local_device};
      if (owner_visible) devices.push_back(owner_device);
      set_access(base_, size, devices, fmt::format("the mapping of device {}'s heap segment", owner_device));
    } catch (...) {
      release();
      throw;
    }
  }

  ~peer_mapping() { release(); }

  peer_mapping(peer_mapping&& other) noexcept
      : device_(other.device_), size_(std::exchange(other.size_, 0)), handle_(std::exchange(other.handle_, 0)),
        base_(std::exchange(other.base_, 0)), has_handle_(std::exchange(other.has_handle_, false)),
        mapped_(std::exchange(other.mapped_, false)) {}

  peer_mapping& operator=(peer_mapping&& other) noexcept {
    if (this != &other) {
      release();
      device_ = other.device_;
      size_ = std::exchange(other.size_, 0);
      handle_ = std::exchange(other.handle_, 0);
      base_ = std::exchange(other.base_, 0);
      has_handle_ = std::exchange(other.has_handle_, false);
      mapped_ = std::exchange(other.mapped_, false);
    }
    return *this;
  }

  peer_mapping(const peer_mapping&) = delete;
  peer_mapping& operator=(const peer_mapping&) = delete;

  //! Start of the owner's segment as seen in this process, valid in device code on `local_device()` until
  //! destruction. Null after a move.
  [[nodiscard]] void* base() const noexcept { return reinterpret_cast<void*>(base_); }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] int local_device() const noexcept { return device_; }

private:
  void release() noexcept {
    if (mapped_) SYMM_ASSERT_CU(driver().cuMemUnmap(base_, size_));
    if (base_ != 0) SYMM_ASSERT_CU(driver().cuMemAddressFree(base_, size_));
    if (has_handle_) SYMM_ASSERT_CU(driver().cuMemRelease(handle_));
    mapped_ = false;
    base_ = 0;
    has_handle_ = false;
    handle_ = 0;
    size_ = 0;
  }

  int device_ = -1;
  std::size_t size_ = 0;
  CUmemGenericAllocationHandle handle_ = 0;
  CUdeviceptr base_ = 0;
  bool has_handle_ = false;
  bool mapped_ = false;
};

//! Lets kernels and copies on `device` reach memory allocated with cudaMalloc on `peer` (VMM mappings do
//! not need this: their access is set by cuMemSetAccess). Idempotent; no-op when device == peer. Throws
//! symm::error(unsupported) when the two devices have no peer-to-peer path.
inline void enable_peer_access(int device, int peer) {
  check_device_ordinal(device, "accessing");
  check_device_ordinal(peer, "peer");
  if (device == peer) return;
  int can_access = 0;
  SYMM_TRY_CUDA(cudaDeviceCanAccessPeer(&can_access, device, peer));
  if (can_access == 0)
    SYMM_THROW(errc::unsupported,
               "device {} cannot access device {} peer to peer (no NVLink or PCIe P2P path, or P2P disabled by the "
               "platform); see nvidia-smi topo -m",
               device, peer);
  device_scope on_device(device);
  const cudaError_t status = cudaDeviceEnablePeerAccess(peer, 0);
  if (status == cudaErrorPeerAccessAlreadyEnabled) {
    (void) cudaGetLastError(); // not an error for us, and must not linger as the last error
    return;
  }
  if (status != cudaSuccess)
    throw_cuda_error(status, fmt::format("cudaDeviceEnablePeerAccess for device {} to reach device {}", device, peer));
}

} // namespace detail
SYMM_END_NAMESPACE
