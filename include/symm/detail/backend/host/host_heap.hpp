// symm/detail/backend/host/host_heap.hpp: each PE's control page and (host backend) heap in one memfd, mapped by
// every PE of the job. The descriptors travel over the bootstrap socket (SCM_RIGHTS), so nothing has a name in
// /dev/shm: nothing is left behind when a PE dies, and other users cannot open it. A job that met over TCP (several
// nodes, nvshmem backend) passes no descriptors: each PE maps only its own page, and every other PE's entry is one
// private stand-in page, so that node-local uses (a host wait's sleeper count) never reach another node.
#pragma once

#include <symm/detail/bootstrap/bootstrap.hpp>
#include <symm/detail/control_segment.hpp>

#include <sys/mman.h>

#include <cstddef>
#include <vector>

SYMM_BEGIN_NAMESPACE
namespace detail {

//! One mmap'ed region; unmapped on destruction.
class mapping {
public:
  mapping() = default;
  mapping(int fd, std::size_t bytes) : bytes_(bytes) {
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      SYMM_THROW(errc::system, "mmap of {} bytes of shared memory failed: {}", bytes, std::strerror(errno));
    }
    base_ = static_cast<std::byte*>(p);
  }
  mapping(mapping&& o) noexcept : base_(std::exchange(o.base_, nullptr)), bytes_(o.bytes_) {}
  mapping& operator=(mapping&& o) noexcept {
    std::swap(base_, o.base_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  ~mapping() {
    if (base_ != nullptr) ::munmap(base_, bytes_);
  }
  [[nodiscard]] std::byte* base() const noexcept { return base_; }

private:
  std::byte* base_ = nullptr;
  std::size_t bytes_ = 0;
};

class host_heap {
public:
  //! Collective: creates this PE's segment of `control_page_bytes + heap_bytes`, exchanges it with every PE and maps
  //! all of them. `heap_bytes` may be 0 (the CUDA backend keeps its heap on the GPU).
  host_heap(bootstrap& boot, std::size_t heap_bytes) : heap_bytes_(heap_bytes) {
    std::size_t total = control_page_bytes + heap_bytes;
    unique_fd mine(static_cast<int>(SYMM_TRY_SYS(::memfd_create("symm-heap", MFD_CLOEXEC))));
    if (::ftruncate(mine.get(), static_cast<off_t>(total)) != 0) {
      SYMM_THROW(errc::system, "PE {}: cannot size its shared heap to {} bytes: {}", boot.pe(), total,
                 std::strerror(errno));
    }
    if (boot.over_tcp()) {
      maps_.emplace_back(mine.get(), total);
      unique_fd stand_in(static_cast<int>(SYMM_TRY_SYS(::memfd_create("symm-stand-in", MFD_CLOEXEC))));
      SYMM_TRY_SYS(::ftruncate(stand_in.get(), static_cast<off_t>(control_page_bytes)));
      maps_.emplace_back(stand_in.get(), control_page_bytes);
      for (int pe = 0; pe < boot.n_pes(); ++pe) {
        const mapping& m = maps_[pe == boot.pe() ? 0 : 1];
        controls_.push_back(reinterpret_cast<pe_control*>(m.base()));
        bases_.push_back(pe == boot.pe() ? m.base() + control_page_bytes : nullptr);
      }
      return;
    }
    auto fds = boot.allgather_fd(mine.get());
    maps_.reserve(fds.size());
    for (auto& fd : fds)
      maps_.emplace_back(fd.get(), total);
    for (auto& m : maps_)
      controls_.push_back(reinterpret_cast<pe_control*>(m.base()));
    for (auto& m : maps_)
      bases_.push_back(m.base() + control_page_bytes);
  }

  [[nodiscard]] pe_control* const* controls() const noexcept { return controls_.data(); }
  [[nodiscard]] std::byte* const* bases() const noexcept { return bases_.data(); }
  [[nodiscard]] std::size_t heap_bytes() const noexcept { return heap_bytes_; }

private:
  std::size_t heap_bytes_;
  std::vector<mapping> maps_;
  std::vector<pe_control*> controls_;
  std::vector<std::byte*> bases_;
};

} // namespace detail
SYMM_END_NAMESPACE
