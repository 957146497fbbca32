// symm/detail/bootstrap/socket.hpp: Unix-socket primitives with deadlines, and file-descriptor passing.
#pragma once

#include <symm/detail/check.hpp>
#include <symm/detail/fd.hpp>

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <chrono>
#include <cstddef>
#include <cstring>
#include <span>
#include <string>

SYMM_BEGIN_NAMESPACE
namespace detail {

using deadline_clock = std::chrono::steady_clock;

//! Waits until `fd` is readable (or writable); false when the deadline passed first.
inline bool poll_until(int fd, short events, deadline_clock::time_point deadline) {
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - deadline_clock::now()).count();
    if (left < 0) left = 0;
    pollfd p{fd, events, 0};
    int r = ::poll(&p, 1, static_cast<int>(left));
    if (r > 0) return true;
    if (r == 0) return false;
    if (errno != EINTR) SYMM_TRY_SYS(r);
  }
}

enum class io_status { ok, closed, timed_out };

//! Sends all of `bytes`; never raises SIGPIPE (a dead peer is reported as `closed`).
inline io_status send_all(int fd, std::span<const std::byte> bytes, deadline_clock::time_point deadline) {
  while (!bytes.empty()) {
    if (!poll_until(fd, POLLOUT, deadline)) return io_status::timed_out;
    ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      if (errno == EPIPE || errno == ECONNRESET) return io_status::closed;
      SYMM_TRY_SYS(n);
    }
    bytes = bytes.subspan(static_cast<std::size_t>(n));
  }
  return io_status::ok;
}

//! Receives exactly `bytes.size()` bytes, and with them at most one file descriptor sent by SCM_RIGHTS.
inline io_status recv_all(int fd, std::span<std::byte> bytes, deadline_clock::time_point deadline,
                          unique_fd* received_fd = nullptr) {
  while (!bytes.empty()) {
    if (!poll_until(fd, POLLIN, deadline)) return io_status::timed_out;
    iovec iov{bytes.data(), bytes.size()};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    ssize_t n = ::recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      if (errno == ECONNRESET) return io_status::closed;
      SYMM_TRY_SYS(n);
    }
    if (n == 0) return io_status::closed;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
        int passed = -1;
        std::memcpy(&passed, CMSG_DATA(c), sizeof(int));
        if (received_fd != nullptr) received_fd->reset(passed);
        else ::close(passed);
      }
    }
    bytes = bytes.subspan(static_cast<std::size_t>(n));
  }
  return io_status::ok;
}

//! Sends one byte carrying `fd` as ancillary data.
inline io_status send_fd(int sock, int fd, deadline_clock::time_point deadline) {
  if (!poll_until(sock, POLLOUT, deadline)) return io_status::timed_out;
  std::byte payload{1};
  iovec iov{&payload, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  for (;;) {
    ssize_t n = ::sendmsg(sock, &msg, MSG_NOSIGNAL);
    if (n >= 0) return io_status::ok;
    if (errno == EINTR || errno == EAGAIN) continue;
    if (errno == EPIPE || errno == ECONNRESET) return io_status::closed;
    SYMM_TRY_SYS(n);
  }
}

//! Receives the descriptor sent by send_fd.
inline io_status recv_fd(int sock, unique_fd& out, deadline_clock::time_point deadline) {
  std::byte payload{};
  io_status s = recv_all(sock, std::span(&payload, 1), deadline, &out);
  if (s == io_status::ok && !out) {
    SYMM_THROW(errc::bootstrap, "expected a file descriptor over the rendezvous socket but none arrived");
  }
  return s;
}

inline sockaddr_un unix_address(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    SYMM_THROW(errc::bootstrap,
               "rendezvous socket path '{}' is {} bytes, longer than the {} a Unix socket allows; "
               "use a shorter SYMM_JOB_DIR or TMPDIR",
               path, path.size(), sizeof(addr.sun_path) - 1);
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return addr;
}

} // namespace detail
SYMM_END_NAMESPACE
