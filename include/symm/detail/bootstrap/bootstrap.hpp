// symm/detail/bootstrap/bootstrap.hpp: how the PEs of a job find each other and exchange what the backends need.
//
// A star over a Unix socket: PE 0 listens on <job_dir>/boot.sock, every other PE connects and presents the job's
// token and a digest of the job's identity (the launcher's job id, or the job directory): a PE of another job is
// refused, a second PE 0 finds the first one listening and stops, and two processes claiming one PE number fail the
// rendezvous of both, so that no two jobs ever form one world. Across nodes (SYMM_BOOTSTRAP_ADDR=host:port) the star is
// over TCP instead: PE 0 listens on that port, and the job token is required, since any process on the network could
// otherwise join; descriptors cannot travel then (allgather_fd refuses). Each message carries a sequence number and a
// step tag, so PEs that call the collective steps in different orders get an error naming both steps instead of
// exchanging the wrong data. Every wait has a deadline and the timeout message names the PEs that never came. Used at
// init and finalize only; barriers in between go through shared memory (control_segment) or the network mesh
// (net_coordination).
#pragma once

#include <symm/detail/bootstrap/socket.hpp>
#include <symm/detail/bootstrap/tcp.hpp>
#include <symm/detail/env.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

SYMM_BEGIN_NAMESPACE
namespace detail {

enum class boot_step : std::uint32_t { hello = 1, welcome, refused, allgather, fd, barrier };

inline const char* to_string(boot_step s) {
  switch (s) {
    case boot_step::hello: return "hello";
    case boot_step::welcome: return "welcome";
    case boot_step::refused: return "refused";
    case boot_step::allgather: return "allgather";
    case boot_step::fd: return "fd exchange";
    case boot_step::barrier: return "barrier";
  }
  return "?";
}

struct boot_header {
  std::uint32_t magic = 0x4d4d5953; // "SYMM"
  std::uint32_t seq = 0;
  boot_step step{};
  std::int32_t pe = -1;
  std::uint64_t length = 0;
};

//! Creates `dir` with mode 0700 when missing; refuses one that another user owns or others can enter.
inline void ensure_private_dir(const std::string& dir) {
  auto slash = dir.find_last_of('/');
  if (slash != std::string::npos && slash > 0) {
    std::string parent = dir.substr(0, slash);
    if (::access(parent.c_str(), F_OK) != 0) ensure_private_dir(parent);
  }
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    SYMM_THROW(errc::bootstrap, "cannot create the job directory {}: {}", dir, std::strerror(errno));
  }
  struct stat st {};
  SYMM_TRY_SYS(::lstat(dir.c_str(), &st));
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::getuid() || (st.st_mode & 077) != 0) {
    SYMM_THROW(errc::bootstrap,
               "job directory {} must be a directory owned by uid {} with mode 0700 (found uid {}, "
               "mode {:o}); refusing to rendezvous there",
               dir, ::getuid(), st.st_uid, st.st_mode & 07777);
  }
}

class bootstrap {
public:
  //! Joins the job described by `job`; returns when all PEs are connected. Throws on timeout, naming missing PEs.
  bootstrap(const job_info& job, std::chrono::milliseconds timeout)
      : pe_(job.pe), n_pes_(job.n_pes), timeout_(timeout), socket_path_(job.job_dir + "/boot.sock"),
        tcp_(!job.bootstrap_addr.empty()), identity_(job.identity.empty() ? job.job_dir : job.identity),
        digest_(identity_digest(identity_)) {
    where_ = tcp_ ? fmt::format("TCP address {}", job.bootstrap_addr) : socket_path_;
    if (tcp_) {
      if (job.token.empty()) {
        SYMM_THROW(errc::bootstrap,
                   "PE {}: a TCP rendezvous (at {}) needs a job token, or any process on the network could join the "
                   "job; export one to every PE before starting it, e.g. `export SYMM_JOB_TOKEN=$(openssl rand -hex "
                   "16)` before srun (mpirun: add -x SYMM_JOB_TOKEN)",
                   pe_, job.bootstrap_addr);
      }
      if (job.token.size() >= sizeof(hello_body{}.token)) {
        SYMM_THROW(errc::bootstrap, "PE {}: SYMM_JOB_TOKEN has {} characters; at most {} are allowed", pe_,
                   job.token.size(), sizeof(hello_body{}.token) - 1);
      }
      auto [host, port] = split_host_port(job.bootstrap_addr, "SYMM_BOOTSTRAP_ADDR");
      root_ = resolve_tcp(host, port, "SYMM_BOOTSTRAP_ADDR");
    }
    if (n_pes_ == 1) return;
    auto deadline = deadline_clock::now() + timeout_;
    if (pe_ == 0) listen_and_accept(job, deadline);
    else connect_to_root(job, deadline);
  }

  bootstrap(const bootstrap&) = delete;
  bootstrap& operator=(const bootstrap&) = delete;
  ~bootstrap() = default;

  [[nodiscard]] int pe() const noexcept { return pe_; }
  [[nodiscard]] int n_pes() const noexcept { return n_pes_; }
  //! Whether the PEs met over TCP (SYMM_BOOTSTRAP_ADDR) rather than the Unix socket of one node.
  [[nodiscard]] bool over_tcp() const noexcept { return tcp_; }
  //! Where the PEs meet, for messages: the socket path or "TCP address host:port".
  [[nodiscard]] const std::string& where() const noexcept { return where_; }
  //! This PE's address on the interface that reaches PE 0 (PE 0: the one the others reached it on); for the mesh of
  //! network coordination. Over the Unix socket, or with one PE, the loopback address.
  [[nodiscard]] tcp_endpoint local_tcp_address() const {
    if (!tcp_ || n_pes_ == 1) return loopback_endpoint();
    return local_endpoint(pe_ == 0 ? peers_[1].get() : peers_[0].get());
  }

  //! Every PE contributes `mine` (same length everywhere); every PE gets all contributions in PE order.
  std::vector<std::byte> allgather(std::span<const std::byte> mine) {
    std::vector<std::byte> all(mine.size() * static_cast<std::size_t>(n_pes_));
    std::copy(mine.begin(), mine.end(), all.begin() + static_cast<std::ptrdiff_t>(mine.size()) * pe_);
    if (n_pes_ == 1) return all;
    auto deadline = next_deadline();
    ++seq_;
    if (pe_ == 0) {
      for (int p = 1; p < n_pes_; ++p) {
        receive(p, boot_step::allgather, std::span(all).subspan(mine.size() * p, mine.size()), deadline);
      }
      for (int p = 1; p < n_pes_; ++p)
        transmit(p, boot_step::allgather, all, deadline);
    } else {
      transmit(0, boot_step::allgather, mine, deadline);
      receive(0, boot_step::allgather, all, deadline);
    }
    return all;
  }

  template <class T>
  std::vector<T> allgather_value(const T& mine) {
    static_assert(std::is_trivially_copyable_v<T>, "bootstrap values travel as bytes");
    auto bytes = allgather(std::as_bytes(std::span(&mine, 1)));
    std::vector<T> out(static_cast<std::size_t>(n_pes_));
    std::memcpy(out.data(), bytes.data(), bytes.size());
    return out;
  }

  //! Every PE contributes one descriptor; every PE receives all of them (its own duplicated) in PE order.
  std::vector<unique_fd> allgather_fd(int mine) {
    if (tcp_) {
      SYMM_THROW(errc::unsupported,
                 "PE {}: file descriptors cannot be passed over the TCP rendezvous ({}): only a Unix socket on one "
                 "node carries them, so a backend that shares its heap through them (host, cuda) cannot make a world "
                 "across nodes; use SYMM_BACKEND=nvshmem there, or unset SYMM_BOOTSTRAP_ADDR on one node",
                 pe_, where_);
    }
    std::vector<unique_fd> all(static_cast<std::size_t>(n_pes_));
    all[static_cast<std::size_t>(pe_)].reset(SYMM_TRY_SYS(::fcntl(mine, F_DUPFD_CLOEXEC, 0)));
    if (n_pes_ == 1) return all;
    auto deadline = next_deadline();
    ++seq_;
    if (pe_ == 0) {
      for (int p = 1; p < n_pes_; ++p) {
        expect_header(p, boot_step::fd, deadline);
        check_io(recv_fd(peers_[p].get(), all[static_cast<std::size_t>(p)], deadline), p, boot_step::fd);
      }
      for (int p = 1; p < n_pes_; ++p) {
        send_header(p, boot_step::fd, 0, deadline);
        for (int q = 0; q < n_pes_; ++q) {
          if (q != p)
            check_io(send_fd(peers_[p].get(), all[static_cast<std::size_t>(q)].get(), deadline), p, boot_step::fd);
        }
      }
    } else {
      send_header(0, boot_step::fd, 0, deadline);
      check_io(send_fd(peers_[0].get(), mine, deadline), 0, boot_step::fd);
      expect_header(0, boot_step::fd, deadline);
      for (int q = 0; q < n_pes_; ++q) {
        if (q != pe_) check_io(recv_fd(peers_[0].get(), all[static_cast<std::size_t>(q)], deadline), 0, boot_step::fd);
      }
    }
    return all;
  }

  //! A barrier over the sockets: for init and finalize, when no shared memory exists yet or any longer.
  void barrier() {
    std::byte none{};
    (void) allgather(std::span(&none, 1));
  }

private:
  struct hello_body {
    std::int32_t pe, n_pes;
    char token[64];
    char identity_digest[33]; // identity_digest(): 32 hex digits
    std::uint32_t pid;
  };

  //! PE 0's socket file, and the job directory when it was derived from the job's identity: removed when the
  //! rendezvous ends, whether it succeeded or threw (a member, so that a constructor that throws still cleans up).
  struct socket_file {
    std::string path, derived_dir;
    bool bound = false;
    socket_file() = default;
    socket_file(const socket_file&) = delete;
    socket_file& operator=(const socket_file&) = delete;
    void remove() noexcept {
      if (!bound) return;
      ::unlink(path.c_str());
      if (!derived_dir.empty()) ::rmdir(derived_dir.c_str()); // fails, harmlessly, if another world uses it
      bound = false;
    }
    ~socket_file() { remove(); }
  };

  deadline_clock::time_point next_deadline() const { return deadline_clock::now() + timeout_; }

  void listen_on_unix_socket(const job_info& job) {
    ensure_private_dir(job.job_dir);
    listener_.reset(SYMM_TRY_SYS(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)));
    sockaddr_un addr = unix_address(socket_path_);
    const auto bind_socket = [&] { return ::bind(listener_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)); };
    if (bind_socket() != 0) {
      if (errno != EADDRINUSE) SYMM_THROW(errc::system, "PE 0 cannot bind {}: {}", socket_path_, std::strerror(errno));
      // Someone's socket is there. A PE 0 that still listens on it is another job with this job's identity: taking
      // its place would send the PEs of both jobs to one world. A socket nobody listens on is a stale one.
      unique_fd probe(SYMM_TRY_SYS(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)));
      if (::connect(probe.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
        SYMM_THROW(errc::bootstrap,
                   "PE 0: another job's PE 0 is already waiting for its PEs at {}, with this job's identity ({}): two "
                   "jobs were started with the same identity, and their PEs would meet. Give each job its own (export "
                   "SYMM_JOB_ID=$(uuidgen) to every PE of one job), or start jobs with symmrun",
                   socket_path_, identity_);
      }
      ::unlink(socket_path_.c_str());
      SYMM_TRY_SYS(bind_socket());
    }
    socket_file_.path = socket_path_;
    if (job.derived_dir) socket_file_.derived_dir = job.job_dir;
    socket_file_.bound = true;
    SYMM_TRY_SYS(::chmod(socket_path_.c_str(), 0600));
    SYMM_TRY_SYS(::listen(listener_.get(), 4096));
  }

  void listen_on_tcp_port() {
    listener_.reset(listen_tcp(root_, /*wildcard_fallback=*/true));
    if (!listener_) {
      int error = errno;
      SYMM_THROW(errc::bootstrap, "PE 0 cannot listen at {} for the other PEs: {}{}", where_, std::strerror(error),
                 error == EADDRINUSE ? "; pick another port in SYMM_BOOTSTRAP_ADDR"
                                     : "; SYMM_BOOTSTRAP_ADDR must name "
                                       "the node where PE 0 runs");
    }
  }

  void listen_and_accept(const job_info& job, deadline_clock::time_point deadline) {
    if (tcp_) listen_on_tcp_port();
    else listen_on_unix_socket(job);
    peers_.resize(static_cast<std::size_t>(n_pes_));
    peer_pids_.assign(static_cast<std::size_t>(n_pes_), 0);
    int joined = 1;
    while (joined < n_pes_) {
      if (!poll_until(listener_.get(), POLLIN, deadline)) {
        std::string missing;
        for (int p = 1; p < n_pes_; ++p) {
          if (!peers_[p]) missing += fmt::format("{}{}", missing.empty() ? "" : ", ", p);
        }
        SYMM_THROW(errc::timeout,
                   "PE 0 waited {} ms at {} for all {} PEs to join; these never came: PE {}. Were they "
                   "started with the same job ({} variables)?",
                   timeout_.count(), where_, n_pes_, missing, job.source);
      }
      unique_fd conn(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (!conn) continue;
      if (tcp_) tune_tcp(conn.get());
      hello_body hello{};
      boot_header h{};
      // A real PE sends its hello at once; a stray connection (a port scanner) must not hold up the others.
      auto hello_deadline = std::min(deadline, deadline_clock::now() + std::chrono::seconds(2));
      if (recv_all(conn.get(), std::as_writable_bytes(std::span(&h, 1)), hello_deadline) != io_status::ok ||
          h.magic != boot_header{}.magic || h.step != boot_step::hello || h.length != sizeof(hello) ||
          recv_all(conn.get(), std::as_writable_bytes(std::span(&hello, 1)), hello_deadline) != io_status::ok) {
        continue; // not one of ours, or gone: keep waiting for the real PEs
      }
      std::string reason;
      if (!token_matches(job.token, hello.token)) reason = "wrong job token";
      else if (!digest_matches(hello.identity_digest)) {
        reason = fmt::format("it belongs to another job (PE 0's job is {})", identity_);
      } else if (hello.n_pes != n_pes_) reason = "different job size";
      else if (hello.pe <= 0 || hello.pe >= n_pes_) reason = "PE number out of range";
      if (!reason.empty()) {
        refuse(conn.get(),
               fmt::format("PE 0 refused PE {} (job size {}): {}; PE 0's job has {} PEs", hello.pe, hello.n_pes, reason,
                           n_pes_),
               deadline);
        continue;
      }
      if (peers_[hello.pe]) {
        // Two processes of this very job's identity claim one PE: two jobs share the identity, and whichever of them
        // this world took would mix them. Fail the rendezvous for everyone who came, loudly.
        std::string text = fmt::format(
            "PE 0: two processes claim PE {} of job {} (pids {} and {}): two jobs were started with the same identity. "
            "Give each job its own (export SYMM_JOB_ID=$(uuidgen) to every PE of one job), or start jobs with symmrun",
            hello.pe, identity_, peer_pids_[static_cast<std::size_t>(hello.pe)], hello.pid);
        refuse(conn.get(), text, deadline);
        for (int p = 1; p < n_pes_; ++p) {
          if (peers_[p]) refuse(peers_[p].get(), text, deadline);
        }
        SYMM_THROW(errc::bootstrap, "{}", text);
      }
      peers_[hello.pe] = std::move(conn);
      peer_pids_[static_cast<std::size_t>(hello.pe)] = hello.pid;
      ++joined;
    }
    for (int p = 1; p < n_pes_; ++p)
      send_header(p, boot_step::welcome, 0, deadline);
    // Everyone came: stop listening, so that a PE of this process's next world cannot reach this one's socket.
    socket_file_.remove();
    listener_.reset();
  }

  //! One attempt to reach PE 0; false (errno set) when it does not listen yet.
  bool try_connect(deadline_clock::time_point deadline) {
    if (tcp_) {
      peers_[0].reset(connect_tcp(root_, deadline));
      return static_cast<bool>(peers_[0]);
    }
    sockaddr_un addr = unix_address(socket_path_);
    unique_fd s(SYMM_TRY_SYS(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)));
    if (::connect(s.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return false;
    peers_[0] = std::move(s);
    return true;
  }

  void connect_to_root(const job_info& job, deadline_clock::time_point deadline) {
    peers_.resize(1);
    auto pause = std::chrono::microseconds(200);
    for (;;) {
      if (try_connect(deadline)) break;
      // Over TCP, PE 0's node may still be booting its network, or its process not listening yet.
      const bool not_yet = errno == ENOENT || errno == ECONNREFUSED || errno == EAGAIN || errno == EINTR ||
                           (tcp_ && (errno == ETIMEDOUT || errno == EHOSTUNREACH || errno == ENETUNREACH ||
                                     errno == ECONNRESET || errno == ECONNABORTED));
      if (!not_yet) {
        SYMM_THROW(errc::bootstrap, "PE {} cannot connect to {}: {}", pe_, where_, std::strerror(errno));
      }
      if (deadline_clock::now() > deadline) {
        SYMM_THROW(errc::timeout,
                   "PE {} waited {} ms for PE 0's rendezvous at {}; PE 0 never listened there. "
                   "Was PE 0 started, with the same job ({})?",
                   pe_, timeout_.count(), where_, job.source);
      }
      // Start-up only: PE 0 may not have bound its socket yet.
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(20000));
    }
    hello_body hello{pe_, n_pes_, {}, {}, static_cast<std::uint32_t>(::getpid())};
    std::memcpy(hello.token, job.token.data(), std::min(job.token.size(), sizeof(hello.token) - 1));
    std::memcpy(hello.identity_digest, digest_.data(), std::min(digest_.size(), sizeof(hello.identity_digest) - 1));
    send_header(0, boot_step::hello, sizeof(hello), deadline);
    check_io(send_all(peers_[0].get(), std::as_bytes(std::span(&hello, 1)), deadline), 0, boot_step::hello);
    boot_header h{};
    check_io(recv_all(peers_[0].get(), std::as_writable_bytes(std::span(&h, 1)), deadline), 0, boot_step::welcome);
    if (h.step == boot_step::refused) {
      std::string text(h.length, '\0');
      (void) recv_all(peers_[0].get(), std::as_writable_bytes(std::span(text.data(), text.size())), deadline);
      SYMM_THROW(errc::bootstrap, "PE {} was refused by the job at {}: {} (PE {}'s job is {})", pe_, where_, text, pe_,
                 identity_);
    }
    if (h.step != boot_step::welcome) {
      SYMM_THROW(errc::bootstrap, "PE {} expected a welcome from PE 0, got step '{}'", pe_, to_string(h.step));
    }
  }

  static void refuse(int conn, const std::string& text, deadline_clock::time_point deadline) {
    boot_header r{.seq = 0, .step = boot_step::refused, .pe = 0, .length = text.size()};
    (void) send_all(conn, std::as_bytes(std::span(&r, 1)), deadline);
    (void) send_all(conn, std::as_bytes(std::span(text.data(), text.size())), deadline);
  }

  bool digest_matches(const char (&given)[33]) const {
    return std::string_view(given, strnlen(given, sizeof(given))) == digest_;
  }

  static bool token_matches(const std::string& expected, const char (&given)[64]) {
    // Constant time in the token's content: a wrong guess learns nothing from the reply's timing.
    unsigned diff = 0;
    for (std::size_t i = 0; i < sizeof(given); ++i) {
      char e = i < expected.size() ? expected[i] : '\0';
      diff |= static_cast<unsigned char>(e ^ given[i]);
    }
    return diff == 0 && expected.size() < sizeof(given);
  }

  unique_fd& link(int p) { return pe_ == 0 ? peers_[static_cast<std::size_t>(p)] : peers_[0]; }

  void check_io(io_status s, int peer, boot_step step) {
    if (s == io_status::ok) return;
    if (s == io_status::closed) {
      SYMM_THROW(errc::peer_failed,
                 "PE {} lost its connection to PE {} during bootstrap step '{}' (step #{}): PE {} "
                 "exited or crashed",
                 pe_, peer, to_string(step), seq_, peer);
    }
    SYMM_THROW(errc::timeout,
               "PE {} waited {} ms for PE {} in bootstrap step '{}' (step #{}); PE {} did not reach it. "
               "Do all PEs create and destroy worlds and symmetric objects in the same order?",
               pe_, timeout_.count(), peer, to_string(step), seq_, peer);
  }

  void send_header(int peer, boot_step step, std::uint64_t length, deadline_clock::time_point deadline) {
    boot_header h{.seq = seq_, .step = step, .pe = pe_, .length = length};
    check_io(send_all(link(peer).get(), std::as_bytes(std::span(&h, 1)), deadline), peer, step);
  }

  void expect_header(int peer, boot_step step, deadline_clock::time_point deadline, std::uint64_t length = 0,
                     bool check_length = false) {
    boot_header h{};
    check_io(recv_all(link(peer).get(), std::as_writable_bytes(std::span(&h, 1)), deadline), peer, step);
    if (h.step != step || h.seq != seq_) {
      SYMM_THROW(errc::bootstrap,
                 "PE {} is at bootstrap step '{}' (#{}) but PE {} sent step '{}' (#{}): the PEs ran "
                 "collective operations in different orders",
                 pe_, to_string(step), seq_, h.pe, to_string(h.step), h.seq);
    }
    if (check_length && h.length != length) {
      SYMM_THROW(errc::bootstrap, "PE {} expected {} bytes from PE {} in step '{}' but PE {} sent {}", pe_, length,
                 h.pe, to_string(step), h.pe, h.length);
    }
  }

  void transmit(int peer, boot_step step, std::span<const std::byte> bytes, deadline_clock::time_point deadline) {
    send_header(peer, step, bytes.size(), deadline);
    check_io(send_all(link(peer).get(), bytes, deadline), peer, step);
  }

  void receive(int peer, boot_step step, std::span<std::byte> bytes, deadline_clock::time_point deadline) {
    expect_header(peer, step, deadline, bytes.size(), true);
    check_io(recv_all(link(peer).get(), bytes, deadline), peer, step);
  }

  int pe_;
  int n_pes_;
  std::chrono::milliseconds timeout_;
  std::string socket_path_;
  bool tcp_ = false;
  tcp_endpoint root_; // over TCP: where PE 0 listens
  std::string where_;
  std::string identity_; // the launcher's job identity, or the job directory (symmrun, symm::launch)
  std::string digest_;   // identity_digest(identity_)
  socket_file socket_file_;
  unique_fd listener_;
  std::vector<unique_fd> peers_;         // PE 0: one per PE (index 0 unused); others: [0] is PE 0
  std::vector<std::uint32_t> peer_pids_; // PE 0: the process id each joined PE gave
  std::uint32_t seq_ = 0;
};

} // namespace detail
SYMM_END_NAMESPACE
