// symm/detail/bootstrap/tcp.hpp: TCP sockets with deadlines, for the rendezvous across nodes (SYMM_BOOTSTRAP_ADDR) and
// the mesh of network coordination (detail/net_coordination.hpp). Data goes through socket.hpp's send_all / recv_all,
// which work on any stream socket.
#pragma once

#include <symm/detail/bootstrap/socket.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

SYMM_BEGIN_NAMESPACE
namespace detail {

//! A resolved TCP endpoint, small enough to travel through the bootstrap allgather as bytes.
struct tcp_endpoint {
  sockaddr_storage address{};
  socklen_t length = 0;
};

//! "host:port" (an IPv6 literal in brackets: "[::1]:29500"), split into its parts; errors name the variable and value.
inline std::pair<std::string, std::uint16_t> split_host_port(std::string_view text, std::string_view variable) {
  auto colon = text.rfind(':');
  std::string_view host = colon == std::string_view::npos ? std::string_view{} : text.substr(0, colon);
  std::string_view port_text = colon == std::string_view::npos ? std::string_view{} : text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  unsigned port = 0;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (host.empty() || port_text.empty() || ec != std::errc{} || end != port_text.data() + port_text.size() ||
      port == 0 || port > 65535) {
    SYMM_THROW(errc::environment,
               "{}='{}' is not host:port (examples: node001:29500, 10.0.0.1:29500, [fe80::1]:29500), with a port in "
               "[1, 65535]",
               variable, text);
  }
  return {std::string(host), static_cast<std::uint16_t>(port)};
}

//! The first address `host` resolves to (IPv4 or IPv6).
inline tcp_endpoint resolve_tcp(const std::string& host, std::uint16_t port, std::string_view variable) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0 || found == nullptr) {
    SYMM_THROW(errc::bootstrap, "cannot resolve the host '{}' of {}: {}", host, variable, ::gai_strerror(rc));
  }
  tcp_endpoint out;
  std::memcpy(&out.address, found->ai_addr, found->ai_addrlen);
  out.length = found->ai_addrlen;
  ::freeaddrinfo(found);
  return out;
}

inline std::uint16_t port_of(const tcp_endpoint& e) noexcept {
  if (e.address.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6&>(e.address).sin6_port);
  return ntohs(reinterpret_cast<const sockaddr_in&>(e.address).sin_port);
}

inline void set_port(tcp_endpoint& e, std::uint16_t port) noexcept {
  if (e.address.ss_family == AF_INET6) reinterpret_cast<sockaddr_in6&>(e.address).sin6_port = htons(port);
  else reinterpret_cast<sockaddr_in&>(e.address).sin_port = htons(port);
}

//! "10.0.0.1:29500" / "[::1]:29500", for messages.
inline std::string to_string(const tcp_endpoint& e) {
  char text[INET6_ADDRSTRLEN] = "?";
  if (e.address.ss_family == AF_INET6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(e.address).sin6_addr, text, sizeof(text));
    return fmt::format("[{}]:{}", text, port_of(e));
  }
  ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(e.address).sin_addr, text, sizeof(text));
  return fmt::format("{}:{}", text, port_of(e));
}

inline tcp_endpoint loopback_endpoint() {
  tcp_endpoint e;
  auto& in = reinterpret_cast<sockaddr_in&>(e.address);
  in.sin_family = AF_INET;
  in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  e.length = sizeof(sockaddr_in);
  return e;
}

//! The local address of a connected or bound socket.
inline tcp_endpoint local_endpoint(int fd) {
  tcp_endpoint e;
  e.length = sizeof(e.address);
  SYMM_TRY_SYS(::getsockname(fd, reinterpret_cast<sockaddr*>(&e.address), &e.length));
  return e;
}

//! Small messages go out at once (no Nagle delay); a peer on a node that vanished without closing its connection is
//! noticed by keep-alive probes after about 25 s of silence.
inline void tune_tcp(int fd) {
  int on = 1, idle = 10, interval = 5, probes = 3;
  SYMM_TRY_SYS(::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on)));
  SYMM_TRY_SYS(::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on)));
  SYMM_TRY_SYS(::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle)));
  SYMM_TRY_SYS(::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof(interval)));
  SYMM_TRY_SYS(::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof(probes)));
}

//! A listening socket on `at`; with `wildcard_fallback`, on every interface at that port when `at` is not an address of
//! this machine (a host name that resolves to another interface's address). Returns -1 with errno set on failure.
inline int listen_tcp(const tcp_endpoint& at, bool wildcard_fallback) {
  unique_fd s(::socket(at.address.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s) return -1;
  int on = 1;
  ::setsockopt(s.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)); // a port left in TIME_WAIT by an earlier job
  if (::bind(s.get(), reinterpret_cast<const sockaddr*>(&at.address), at.length) != 0) {
    if (!wildcard_fallback || errno != EADDRNOTAVAIL) return -1;
    tcp_endpoint any;
    any.address.ss_family = at.address.ss_family;
    any.length = at.length;
    set_port(any, port_of(at));
    if (::bind(s.get(), reinterpret_cast<const sockaddr*>(&any.address), any.length) != 0) return -1;
  }
  if (::listen(s.get(), 4096) != 0) return -1;
  return s.release();
}

//! Connects to `to` without blocking past `deadline`. Returns the connected socket, or -1 with errno set (ECONNREFUSED
//! while nobody listens yet, ETIMEDOUT when the deadline passed).
inline int connect_tcp(const tcp_endpoint& to, deadline_clock::time_point deadline) {
  unique_fd s(::socket(to.address.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!s) return -1;
  if (::connect(s.get(), reinterpret_cast<const sockaddr*>(&to.address), to.length) != 0) {
    if (errno != EINPROGRESS) return -1;
    if (!poll_until(s.get(), POLLOUT, deadline)) {
      errno = ETIMEDOUT;
      return -1;
    }
    int error = 0;
    socklen_t length = sizeof(error);
    ::getsockopt(s.get(), SOL_SOCKET, SO_ERROR, &error, &length);
    if (error != 0) {
      errno = error;
      return -1;
    }
  }
  int flags = ::fcntl(s.get(), F_GETFL);
  ::fcntl(s.get(), F_SETFL, flags & ~O_NONBLOCK);
  tune_tcp(s.get());
  return s.release();
}

} // namespace detail
SYMM_END_NAMESPACE
