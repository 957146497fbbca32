// tests/gpu/vmm_ipc_smoke.cu: one process exports a VMM heap segment as a POSIX fd, a forked child maps it
// and both read and write through it; then the same export/import inside one process.
// Exit codes: 0 pass, 1 fail, 77 skip (no CUDA device), as Meson expects.
#include <symm/detail/backend/cuda/check.hpp>
#include <symm/detail/backend/cuda/vmm_segment.hpp>
#include <symm/detail/check.hpp>
#include <symm/error.hpp>

#include <cuda_runtime_api.h>

#include <fmt/format.h>

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <thread>

namespace {

using symm::detail::local_segment;
using symm::detail::peer_mapping;

constexpr int exit_pass = 0;
constexpr int exit_fail = 1;
constexpr int exit_skip = 77;
constexpr int reply_timeout_ms = 120'000;
constexpr std::size_t segment_bytes = std::size_t{64} << 20;

struct pattern {
  std::uint32_t mul;
  std::uint32_t add;
};
constexpr pattern parent_pattern{3, 1};  // value = index * 3 + 1
constexpr pattern child_pattern{7, 5};   // written by the child through its mapping
constexpr pattern thread_pattern{5, 2};  // same-process check, written by the owner
constexpr pattern mapped_pattern{11, 9}; // same-process check, written through the second mapping

__global__ void fill_kernel(std::uint32_t* data, std::size_t n, pattern p) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride)
    data[i] = static_cast<std::uint32_t>(i) * p.mul + p.add;
}

__global__ void count_mismatches_kernel(const std::uint32_t* data, std::size_t n, pattern p,
                                        unsigned long long* mismatches, unsigned long long* first_bad) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride) {
    if (data[i] != static_cast<std::uint32_t>(i) * p.mul + p.add) {
      atomicAdd(mismatches, 1ull);
      atomicMin(first_bad, static_cast<unsigned long long>(i));
    }
  }
}

constexpr unsigned grid_blocks = 1024;
constexpr unsigned block_threads = 256;

void fill(void* base, std::size_t bytes, pattern p) {
  fill_kernel<<<grid_blocks, block_threads>>>(static_cast<std::uint32_t*>(base), bytes / sizeof(std::uint32_t), p);
  SYMM_TRY_CUDA(cudaGetLastError());
  SYMM_TRY_CUDA(cudaDeviceSynchronize());
}

// Returns the number of elements that differ from the pattern; prints the first one.
unsigned long long count_mismatches(const void* base, std::size_t bytes, pattern p, const char* who) {
  unsigned long long* counters = nullptr; // [0] mismatches, [1] first bad index
  SYMM_TRY_CUDA(cudaMalloc(&counters, 2 * sizeof(unsigned long long)));
  unsigned long long host[2] = {0, ~0ull};
  try {
    SYMM_TRY_CUDA(cudaMemcpy(counters, host, sizeof host, cudaMemcpyHostToDevice));
    count_mismatches_kernel<<<grid_blocks, block_threads>>>(
        static_cast<const std::uint32_t*>(base), bytes / sizeof(std::uint32_t), p, counters, counters + 1);
    SYMM_TRY_CUDA(cudaGetLastError());
    SYMM_TRY_CUDA(cudaMemcpy(host, counters, sizeof host, cudaMemcpyDeviceToHost));
  } catch (...) {
    SYMM_ASSERT_CUDA(cudaFree(counters));
    throw;
  }
  SYMM_TRY_CUDA(cudaFree(counters));
  if (host[0] != 0) {
    std::uint32_t seen = 0;
    SYMM_TRY_CUDA(
        cudaMemcpy(&seen, static_cast<const std::uint32_t*>(base) + host[1], sizeof seen, cudaMemcpyDeviceToHost));
    fmt::print("  {}: {} mismatches, first at index {}: read {}, expected {}\n", who, host[0], host[1], seen,
               static_cast<std::uint32_t>(host[1]) * p.mul + p.add);
  }
  return host[0];
}

// ---- fd passing over a Unix socket (the library's own socket code lives elsewhere) ----

enum class message_kind : std::uint32_t { segment = 1, result = 2 };

struct message {
  message_kind kind;
  std::int32_t device;
  std::uint64_t size;
  std::uint64_t value;
};

// Sends one message, with `fd` attached as SCM_RIGHTS when fd >= 0.
void send_message(int sock, const message& m, int fd = -1) {
  iovec io{const_cast<message*>(&m), sizeof m};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr header{};
  header.msg_iov = &io;
  header.msg_iovlen = 1;
  if (fd >= 0) {
    header.msg_control = control;
    header.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&header);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  }
  const ssize_t sent = SYMM_TRY_SYS(::sendmsg(sock, &header, MSG_NOSIGNAL));
  if (static_cast<std::size_t>(sent) != sizeof m)
    SYMM_THROW(symm::errc::system, "sendmsg sent {} of {} bytes", sent, sizeof m);
}

// Receives one message and its fd (-1 when none). False on end of file (the peer went away).
bool receive_message(int sock, message& m, int& fd, int timeout_ms) {
  fd = -1;
  pollfd waiting{sock, POLLIN, 0};
  if (SYMM_TRY_SYS(::poll(&waiting, 1, timeout_ms)) == 0)
    SYMM_THROW(symm::errc::timeout, "no message from the other process within {} ms", timeout_ms);
  iovec io{&m, sizeof m};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr header{};
  header.msg_iov = &io;
  header.msg_iovlen = 1;
  header.msg_control = control;
  header.msg_controllen = sizeof control;
  const ssize_t got = SYMM_TRY_SYS(::recvmsg(sock, &header, MSG_CMSG_CLOEXEC));
  if (got == 0) return false;
  for (cmsghdr* c = CMSG_FIRSTHDR(&header); c != nullptr; c = CMSG_NXTHDR(&header, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) std::memcpy(&fd, CMSG_DATA(c), sizeof fd);
  if ((header.msg_flags & MSG_CTRUNC) != 0) SYMM_THROW(symm::errc::system, "recvmsg: control data truncated");
  if (static_cast<std::size_t>(got) != sizeof m)
    SYMM_THROW(symm::errc::system, "recvmsg got {} of {} bytes", got, sizeof m);
  return true;
}

// ---- the test ----

bool check(bool ok, const std::string& what) {
  fmt::print("{}: {}\n", ok ? "PASS" : "FAIL", what);
  std::fflush(stdout);
  return ok;
}

int device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void) cudaGetLastError();
    return 0;
  }
  return count;
}

std::string describe_fd(int fd) {
  char target[256] = {};
  const std::string link = fmt::format("/proc/self/fd/{}", fd);
  const ssize_t length = ::readlink(link.c_str(), target, sizeof target - 1);
  struct stat file {};
  if (::fstat(fd, &file) != 0) return "unknown";
  return fmt::format("'{}' (st_dev {}, st_ino {})", length > 0 ? target : "?", static_cast<unsigned long>(file.st_dev),
                     static_cast<unsigned long>(file.st_ino));
}

int run_child(int sock) {
  const int count = device_count();
  if (count == 0) return exit_skip; // the parent prints the SKIP line
  message m{};
  int fd = -1;
  if (!receive_message(sock, m, fd, reply_timeout_ms)) return exit_skip; // the parent gave up before sending
  if (m.kind != message_kind::segment || fd < 0) {
    check(false, "child: first message carries the segment fd");
    return exit_fail;
  }
  // A second GPU, when there is one that reaches the owner's, exercises peer-to-peer mapping too.
  int local_device = 0;
  if (count > 1) {
    int can_access = 0;
    SYMM_TRY_CUDA(cudaDeviceCanAccessPeer(&can_access, 1, m.device));
    if (can_access != 0) local_device = 1;
  }
  SYMM_TRY_CUDA(cudaSetDevice(local_device));
  bool ok = true;
  unsigned long long mismatches = ~0ull;
  {
    peer_mapping peer(fd, m.size, m.device, local_device);
    SYMM_TRY_SYS(::close(fd)); // borrowed: the mapping holds its own reference
    ok &= check(peer.base() != nullptr,
                fmt::format("child: imported the fd from another process onto device {}", local_device));
    mismatches = count_mismatches(peer.base(), m.size, parent_pattern, "child");
    ok &= check(mismatches == 0,
                fmt::format("child: read the parent's {} MiB pattern through its mapping", m.size >> 20));
    fill(peer.base(), m.size, child_pattern);
  }
  send_message(sock, {message_kind::result, local_device, m.size, mismatches});
  return ok ? exit_pass : exit_fail;
}

bool run_same_process(const local_segment& big) {
  bool ok = true;
  const int device = big.device();

  // Rounding: an odd size comes back as a multiple of the granularity (itself a multiple of 2 MiB).
  local_segment small(device, (std::size_t{3} << 20) + 1);
  ok &= check(
      small.size() >= (std::size_t{3} << 20) + 1 && small.size() % small.granularity() == 0 &&
          small.granularity() % (std::size_t{2} << 20) == 0,
      fmt::format("same process: 3 MiB + 1 rounds to {} bytes (granularity {})", small.size(), small.granularity()));

  fill(small.base(), small.size(), thread_pattern);
  const int fd = small.export_fd();
  const int other_fd = big.export_fd();
  fmt::print("info: the fds of two exports: {} and {}\n", describe_fd(fd), describe_fd(other_fd));
  SYMM_TRY_SYS(::close(other_fd));
  // The import runs on another thread, as it would for PEs that are threads of one process.
  bool thread_ok = false;
  std::exception_ptr thread_error;
  std::thread pe([&] {
    try {
      SYMM_TRY_CUDA(cudaSetDevice(device));
      peer_mapping again(fd, small.size(), device, device);
      SYMM_TRY_SYS(::close(fd));
      thread_ok = check(again.base() != small.base(), "same process: the second mapping has its own address");
      thread_ok &= check(count_mismatches(again.base(), small.size(), thread_pattern, "same process") == 0,
                         "same process: another thread reads the owner's pattern through the second mapping");
      fill(again.base(), small.size(), mapped_pattern);
    } catch (...) {
      thread_error = std::current_exception();
    }
  });
  pe.join();
  if (thread_error) std::rethrow_exception(thread_error);
  ok &= thread_ok;
  ok &= check(count_mismatches(small.base(), small.size(), mapped_pattern, "same process") == 0,
              "same process: the owner sees what the second mapping wrote (after that mapping was released)");

  // Error paths: the messages must name what was asked.
  try {
    const int fd2 = small.export_fd();
    try {
      peer_mapping too_big(fd2, small.size() + (std::size_t{2} << 20), device, device);
      ok &= check(false, "same process: mapping more than the segment is rejected");
    } catch (const symm::error& e) {
      ok &= check(true, fmt::format("same process: mapping more than the segment is rejected: {}", e.what()));
    }
    SYMM_TRY_SYS(::close(fd2));
  } catch (const symm::error& e) {
    ok &= check(false, fmt::format("same process: unexpected error: {}", e.what()));
  }
  try {
    local_segment bad(device_count(), segment_bytes);
    ok &= check(false, "a segment on a device that does not exist is rejected");
  } catch (const symm::error& e) {
    ok &= check(e.code() == symm::errc::invalid_argument,
                fmt::format("a segment on a device that does not exist is rejected: {}", e.what()));
  }
  return ok;
}

int run_parent(int sock, pid_t child) {
  if (device_count() == 0) {
    fmt::print("SKIP: no CUDA device\n");
    return exit_skip;
  }
  constexpr int device = 0;
  SYMM_TRY_CUDA(cudaSetDevice(device));
  bool ok = true;
  local_segment segment(device, segment_bytes);
  ok &= check(segment.size() == segment_bytes && segment.base() != nullptr,
              fmt::format("parent: 64 MiB segment on device {} at {}", device, segment.base()));
  fill(segment.base(), segment.size(), parent_pattern);
  {
    const int fd = segment.export_fd();
    send_message(sock, {message_kind::segment, device, segment.size(), 0}, fd);
    SYMM_TRY_SYS(::close(fd)); // SCM_RIGHTS gave the child its own descriptor
  }
  message reply{};
  int no_fd = -1;
  if (!receive_message(sock, reply, no_fd, reply_timeout_ms) || reply.kind != message_kind::result) {
    check(false, "parent: the child reported back");
    ::kill(child, SIGKILL);
    return exit_fail;
  }
  ok &= check(reply.value == 0, fmt::format("parent: the child (device {}) saw no mismatches", reply.device));
  ok &= check(count_mismatches(segment.base(), segment.size(), child_pattern, "parent") == 0,
              "parent: sees the pattern the child wrote through its mapping");

  ok &= run_same_process(segment);
  return ok ? exit_pass : exit_fail;
}

} // namespace

int main() {
  // Fork before any CUDA call: a child cannot use CUDA once its parent initialised it.
  int socks[2] = {-1, -1};
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, socks) != 0) {
    std::perror("FAIL: socketpair");
    return exit_fail;
  }
  std::fflush(stdout);
  const pid_t child = ::fork();
  if (child < 0) {
    std::perror("FAIL: fork");
    return exit_fail;
  }
  if (child == 0) {
    ::close(socks[0]);
    int code = exit_fail;
    try {
      code = run_child(socks[1]);
    } catch (const std::exception& e) {
      fmt::print("FAIL: child: {}\n", e.what());
    }
    std::fflush(stdout);
    ::close(socks[1]);
    ::_exit(code);
  }
  ::close(socks[1]);
  int code = exit_fail;
  try {
    code = run_parent(socks[0], child);
  } catch (const std::exception& e) {
    fmt::print("FAIL: parent: {}\n", e.what());
  }
  std::fflush(stdout);
  ::close(socks[0]); // unblocks a child still waiting for the segment
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  const int child_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (code == exit_skip) return exit_skip;
  if (child_code != exit_pass) {
    fmt::print("FAIL: child exited with {}\n", child_code);
    return exit_fail;
  }
  fmt::print("{}\n", code == exit_pass ? "PASS: vmm_ipc_smoke" : "FAIL: vmm_ipc_smoke");
  return code;
}
