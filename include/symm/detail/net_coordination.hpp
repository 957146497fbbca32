// symm/detail/net_coordination.hpp: host barriers, collective agreement and liveness over the network, for a world
// whose PEs span several nodes (or SYMM_COORDINATION=network): what the control pages do on one node.
//
// A full mesh of TCP connections: each PE listens on an ephemeral port of the interface that reaches PE 0, the
// addresses travel through the bootstrap allgather with a secret of PE 0's, and PE i connects to every PE j > i,
// presenting that secret. A barrier of a team is a gather at its root (members[0]): every member sends an arrival on
// the team's channel, the root answers each with a release once all have come. Agreement is the same gather carrying
// each member's request, the release carrying the table of all of them. Messages from one peer arrive in order on its
// socket; a PE keeps per peer a queue of those read ahead (a fast peer may already be in its next barrier, or in
// another team's), and takes the first one of the kind and channel it waits for. A PE belongs to at most one live team
// per channel, so that one is the right one.
//
// Liveness: a PE that leaves by an exception first sends "failed: why" to every peer; a PE that finalizes sends
// "finalized"; a connection that closes without either means the PE exited or crashed (keep-alive probes notice a
// node that vanished). Every wait polls the sockets, so none hangs for a PE that is gone.
//
// Bounds, as on one node: an agreement may carry a deadline. The root, when it passes, sends the members that came a
// "timed out" naming those that did not (with their last arrival on the channel and whether they said they are in a
// wait for data); a member whose root says nothing waits a grace longer, then names the root. A PE in a host wait for
// data for longer than a liveness period says so ("host wait" on, then off), so that a release made while an
// exception propagates is abandoned, not waited for, when every PE that has not come is in such a wait.
#pragma once

#include <symm/detail/bootstrap/bootstrap.hpp>
#include <symm/detail/bootstrap/tcp.hpp>
#include <symm/detail/control_segment.hpp>
#include <symm/detail/job_layout.hpp>

#include <fcntl.h>
#include <sys/random.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

SYMM_BEGIN_NAMESPACE
namespace detail {

enum class net_kind : std::uint16_t { hello = 1, arrive, release, failed, finalized, host_wait, timed_out, abandon };

struct net_header {
  std::uint32_t magic = 0x4e4d5953; // "SYMN"
  net_kind kind{};
  std::uint16_t channel = 0;
  std::int32_t from = -1;
  std::uint32_t length = 0;
};

inline constexpr std::size_t mesh_secret_bytes = 32;

struct net_hello {
  net_header header{.kind = net_kind::hello, .length = 0};
  std::int32_t pe = -1;
  std::int32_t n_pes = 0;
  std::byte secret[mesh_secret_bytes]{};
};

//! A member that the root of an agreement waited for in vain, as a timeout reports it.
struct net_late_member {
  std::int32_t pe = -1;
  std::int32_t in_host_wait = 0;   //!< 1: it said it is in a host wait for data
  std::int32_t arrived_before = 0; //!< 1: `last` is its latest arrival on the channel, 0: it has not come on it yet
  std::int32_t unused = 0;
  collective_request last{};
};

//! How an agreement over the network ended.
struct net_meeting {
  enum class outcome {
    met,       //!< every member came: `table` holds the requests, in member order (empty for plain barriers)
    late,      //!< the deadline passed: `late` names who did not come, as `reported_by` (this PE or the root) saw it
    abandoned, //!< a release made while unwinding that the PEs not come would never join (they wait for data)
  } end = outcome::met;
  std::vector<collective_request> table;
  std::vector<net_late_member> late;
  int reported_by = -1;
};

class net_coordination final : public peer_monitor {
public:
  //! Collective over the job: builds the mesh. Throws on timeout naming the PEs that never connected.
  net_coordination(bootstrap& boot, job_layout layout, std::chrono::milliseconds timeout)
      : me_(boot.pe()), n_pes_(boot.n_pes()), layout_(std::move(layout)), peers_(static_cast<std::size_t>(n_pes_)) {
    if (n_pes_ == 1) return;
    allow_descriptors(n_pes_);
    struct card {
      tcp_endpoint endpoint;
      std::byte secret[mesh_secret_bytes];
    } mine{};
    tcp_endpoint here = boot.local_tcp_address();
    set_port(here, 0);
    unique_fd listener(listen_tcp(here, /*wildcard_fallback=*/false));
    if (!listener) {
      SYMM_THROW(errc::system, "PE {}: cannot listen at {} for network coordination: {}", me_, to_string(here),
                 std::strerror(errno));
    }
    mine.endpoint = local_endpoint(listener.get());
    if (me_ == 0 && ::getrandom(mine.secret, sizeof(mine.secret), 0) != static_cast<ssize_t>(sizeof(mine.secret))) {
      SYMM_THROW(errc::system, "PE 0: getrandom failed: {}", std::strerror(errno));
    }
    // The bootstrap is authenticated (job token or private directory): the secret it carries admits only this job.
    auto cards = boot.allgather_value(mine);
    std::memcpy(secret_, cards[0].secret, sizeof(secret_));
    auto deadline = deadline_clock::now() + timeout;
    for (int p = me_ + 1; p < n_pes_; ++p) {
      const tcp_endpoint& there = cards[static_cast<std::size_t>(p)].endpoint;
      unique_fd s(connect_tcp(there, deadline));
      if (!s) {
        SYMM_THROW(errc::bootstrap, "PE {} cannot connect to PE {} (node {}) at {} for network coordination: {}", me_,
                   p, layout_.nodes[static_cast<std::size_t>(p)], to_string(there), std::strerror(errno));
      }
      net_hello hello{};
      hello.pe = me_;
      hello.n_pes = n_pes_;
      std::memcpy(hello.secret, secret_, sizeof(secret_));
      if (send_all(s.get(), std::as_bytes(std::span(&hello, 1)), deadline) != io_status::ok) {
        SYMM_THROW(errc::bootstrap, "PE {} lost its new connection to PE {} (node {}) at {}", me_, p,
                   layout_.nodes[static_cast<std::size_t>(p)], to_string(there));
      }
      peers_[static_cast<std::size_t>(p)].fd = std::move(s);
    }
    accept_lower_pes(listener.get(), deadline, timeout);
    for (int p = 0; p < n_pes_; ++p) {
      if (p == me_) continue;
      int fd = peers_[static_cast<std::size_t>(p)].fd.get();
      SYMM_TRY_SYS(::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK));
    }
  }

  net_coordination(const net_coordination&) = delete;
  net_coordination& operator=(const net_coordination&) = delete;
  ~net_coordination() = default;

  [[nodiscard]] const job_layout& layout() const noexcept { return layout_; }

  //! Barrier of `members` (world PE numbers; members[0] is the root) on `channel`.
  void barrier(std::span<const int> members, int channel, std::string_view what) {
    std::lock_guard lock(mutex_);
    (void) meet(members, channel, nullptr, what, std::nullopt);
  }

  //! Barrier of `members` that also hands every member the requests of all, in member order. Past `deadline` (the
  //! root's; a member adds member_grace) it ends as late; a release made while unwinding (mine.unwinding) may end
  //! as abandoned.
  net_meeting exchange(std::span<const int> members, int channel, const collective_request& mine, std::string_view what,
                       std::optional<deadline_clock::time_point> deadline = std::nullopt) {
    std::lock_guard lock(mutex_);
    return meet(members, channel, &mine, what, deadline);
  }

  //! How much longer than its root a member waits: the root's report of who did not come arrives first.
  static constexpr std::chrono::milliseconds member_grace{2000};

  //! The counter of this PE's host threads in a wait for data (pe_control::host_waits), announced to the peers.
  void watch_host_waits(const std::uint32_t* host_waits) noexcept { host_waits_ = host_waits; }

  //! A host wait ended: says so at once if it had said it waits (a stale "in a wait" could abandon a release that
  //! this PE is about to join). Another thread in a barrier announces it instead when the mesh is busy.
  void host_wait_ended() noexcept override {
    std::unique_lock lock(mutex_, std::try_to_lock);
    if (lock.owns_lock()) announce_host_wait();
  }

  //! Tells every peer why this PE fails, so that their waits end with the reason. Best effort, bounded time.
  void mark_failed(std::string_view why) noexcept { tell_everyone(net_kind::failed, why); }

  //! Tells every peer this PE finalized its world: a peer still waiting for it then reports that, as on one node.
  void mark_finalized() noexcept { tell_everyone(net_kind::finalized, {}); }

  //! liveness::check over the network: reads what arrived without blocking; throws errc::peer_failed when a peer
  //! failed, finalized or is gone. Another thread of this PE inside a barrier reads for it meanwhile.
  void check(std::string_view what) override {
    std::unique_lock lock(mutex_, std::try_to_lock);
    if (!lock.owns_lock()) return;
    pump(0);
    announce_host_wait();
    throw_if_broken(what, [](int) { return true; });
  }

  //! The peer check() would throw for, or -1 (also while another thread of this PE holds the sockets: it reads for
  //! this PE meanwhile, and the next call looks again). For the failure monitor's thread: never throws.
  int failed_peer() noexcept override {
    std::unique_lock lock(mutex_, std::try_to_lock);
    if (!lock.owns_lock()) return -1;
    try {
      pump(0);
    } catch (...) {
      // a connection that broke is filed as lost by the read that found it; what was filed is still looked at
    }
    bool needed_one = false;
    return culprit([](int) { return true; }, needed_one);
  }

private:
  enum class peer_status { running, finalized, failed, lost };

  struct inbound {
    net_kind kind;
    int channel;
    std::vector<std::byte> payload;
  };

  struct peer {
    unique_fd fd;
    bool open = true; // false after the connection closed: nothing more to read
    std::vector<std::byte> received;
    std::deque<inbound> queue;
    peer_status status = peer_status::running;
    std::string why;           // a failed peer's reason
    std::uint64_t noticed = 0; // when this PE learnt the status (events_ then), to blame the earliest
    bool in_host_wait = false; // it said it is in a host wait for data
    std::vector<collective_request> last_arrival; // per channel, at this PE as a root: its latest arrival
  };

  //! A full mesh needs a descriptor per peer: raise the soft limit towards the hard one when the job is large.
  static void allow_descriptors(int n_pes) {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
    const rlim_t wanted = static_cast<rlim_t>(n_pes) + 256;
    if (limit.rlim_cur >= wanted) return;
    limit.rlim_cur = std::min(wanted, limit.rlim_max);
    (void) ::setrlimit(RLIMIT_NOFILE, &limit);
  }

  void accept_lower_pes(int listener, deadline_clock::time_point deadline, std::chrono::milliseconds timeout) {
    int joined = 0;
    while (joined < me_) {
      if (!poll_until(listener, POLLIN, deadline)) {
        std::string missing;
        for (int p = 0; p < me_; ++p) {
          if (!peers_[static_cast<std::size_t>(p)].fd) {
            missing += fmt::format("{}{} (node {})", missing.empty() ? "" : ", ", p,
                                   layout_.nodes[static_cast<std::size_t>(p)]);
          }
        }
        SYMM_THROW(errc::timeout,
                   "PE {} waited {} ms for the connections of network coordination; these PEs never connected: PE "
                   "{}. Can they reach this node ({}) over TCP (firewall)?",
                   me_, timeout.count(), missing, layout_.nodes[static_cast<std::size_t>(me_)]);
      }
      unique_fd conn(::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
      if (!conn) continue;
      tune_tcp(conn.get());
      net_hello hello{};
      auto hello_deadline = std::min(deadline, deadline_clock::now() + std::chrono::seconds(2));
      if (recv_all(conn.get(), std::as_writable_bytes(std::span(&hello, 1)), hello_deadline) != io_status::ok) continue;
      unsigned diff = 0; // constant time in the secret's content
      for (std::size_t i = 0; i < mesh_secret_bytes; ++i)
        diff |= static_cast<unsigned>(hello.secret[i] ^ secret_[i]);
      if (hello.header.magic != net_header{}.magic || hello.header.kind != net_kind::hello || diff != 0 ||
          hello.n_pes != n_pes_ || hello.pe < 0 || hello.pe >= me_ || peers_[static_cast<std::size_t>(hello.pe)].fd) {
        continue; // not one of this job's PEs: keep waiting for them
      }
      peers_[static_cast<std::size_t>(hello.pe)].fd = std::move(conn);
      ++joined;
    }
  }

  //! The gather at members[0] and the release; the table of requests when some member sent one.
  net_meeting meet(std::span<const int> members, int channel, const collective_request* mine, std::string_view what,
                   std::optional<deadline_clock::time_point> deadline) {
    const std::size_t n = members.size();
    net_meeting result;
    if (n == 1) {
      if (mine != nullptr) result.table.push_back(*mine);
      return result;
    }
    const int root = members[0];
    if (root != me_) return meet_as_member(root, n, channel, mine, what, deadline);
    // A member that sent no request (a plain barrier against others' agreement) shows as "nothing" in the table.
    std::vector<collective_request>& table = result.table;
    table.assign(n, collective_request{0, collective_kind::none, {0, 0, 0}, {}});
    bool any_request = mine != nullptr;
    if (mine != nullptr) table[0] = *mine;
    std::vector<bool> arrived(n, false);
    arrived[0] = true;
    std::size_t missing = n - 1;
    bool told_unwinding = false; // the unwinding members that came were told to abandon
    const auto not_arrived = [&](int p) {
      auto it = std::find(members.begin() + 1, members.end(), p);
      return it != members.end() && !arrived[static_cast<std::size_t>(it - members.begin())];
    };
    // A release made while unwinding is not waited for when every member that has not come waits for data: the
    // exception most likely ends that wait (the shared-memory rule of world_state::agree).
    const auto abandon = [&] {
      bool unwinding = false;
      for (std::size_t i = 0; i < n; ++i) {
        if (arrived[i] && table[i].unwinding != 0) unwinding = true;
        if (!arrived[i] && !peers_[static_cast<std::size_t>(members[i])].in_host_wait) return false;
      }
      return unwinding;
    };
    const bool met = wait_for(
        [&] {
          for (std::size_t i = 1; i < n; ++i) {
            if (arrived[i]) continue;
            auto arrival = take(members[i], net_kind::arrive, channel);
            if (!arrival) continue;
            arrived[i] = true;
            --missing;
            if (arrival->payload.size() == sizeof(collective_request)) {
              std::memcpy(&table[i], arrival->payload.data(), sizeof(collective_request));
              any_request = true;
              remember_arrival(members[i], channel, table[i]);
            }
          }
          if (missing == 0 || told_unwinding || !abandon()) return missing == 0;
          if (mine != nullptr && mine->unwinding != 0) {
            result.end = net_meeting::outcome::abandoned;
            return true;
          }
          for (std::size_t i = 1; i < n; ++i) // they end their wait and fail: this PE then sees that
            if (arrived[i] && table[i].unwinding != 0) send(members[i], net_kind::abandon, channel, {}, what);
          told_unwinding = true;
          return false;
        },
        not_arrived, what, deadline);
    if (result.end == net_meeting::outcome::abandoned) return result;
    if (!met) {
      result.end = net_meeting::outcome::late;
      result.reported_by = me_;
      for (std::size_t i = 1; i < n; ++i)
        if (!arrived[i]) result.late.push_back(late_member(members[i], channel));
      // The members that came hear who did not, so that they report the same instead of a silent root.
      for (std::size_t i = 1; i < n; ++i)
        if (arrived[i]) send(members[i], net_kind::timed_out, channel, std::as_bytes(std::span(result.late)), what);
      return result;
    }
    auto payload = any_request ? std::as_bytes(std::span(table)) : std::span<const std::byte>{};
    for (std::size_t i = 1; i < n; ++i)
      send(members[i], net_kind::release, channel, payload, what);
    if (!any_request) table.clear();
    return result;
  }

  //! A member's side of meet: its arrival at the root, then the root's answer (release, timed out or abandon).
  net_meeting meet_as_member(int root, std::size_t n, int channel, const collective_request* mine,
                             std::string_view what, std::optional<deadline_clock::time_point> deadline) {
    net_meeting result;
    send(root, net_kind::arrive, channel,
         mine != nullptr ? std::as_bytes(std::span(mine, 1)) : std::span<const std::byte>{}, what);
    std::optional<inbound> answer;
    bool root_waits_for_data = false; // and this is a release made while unwinding: abandoned (see meet)
    const bool answered = wait_for(
        [&] {
          for (net_kind kind : {net_kind::release, net_kind::timed_out, net_kind::abandon})
            if ((answer = take(root, kind, channel))) return true;
          root_waits_for_data =
              mine != nullptr && mine->unwinding != 0 && peers_[static_cast<std::size_t>(root)].in_host_wait;
          return root_waits_for_data;
        },
        [&](int p) { return p == root; }, what, deadline ? std::optional(*deadline + member_grace) : std::nullopt);
    if (root_waits_for_data) {
      result.end = net_meeting::outcome::abandoned;
      return result;
    }
    if (!answered) { // the root said nothing: it is the one that did not come, or is too slow to say
      result.end = net_meeting::outcome::late;
      result.reported_by = me_;
      result.late.push_back(late_member(root, channel));
      return result;
    }
    if (answer->kind == net_kind::abandon) {
      result.end = net_meeting::outcome::abandoned;
      return result;
    }
    if (answer->kind == net_kind::timed_out) {
      result.end = net_meeting::outcome::late;
      result.reported_by = root;
      result.late.resize(answer->payload.size() / sizeof(net_late_member));
      std::memcpy(result.late.data(), answer->payload.data(), result.late.size() * sizeof(net_late_member));
      return result;
    }
    if (!answer->payload.empty()) {
      if (answer->payload.size() != n * sizeof(collective_request)) {
        SYMM_THROW(errc::bootstrap, "PE {}: {}: PE {} released {} members with a table of {} bytes", me_, what, root, n,
                   answer->payload.size());
      }
      result.table.resize(n);
      std::memcpy(result.table.data(), answer->payload.data(), answer->payload.size());
    }
    return result;
  }

  void remember_arrival(int pe, int channel, const collective_request& request) {
    auto& last = peers_[static_cast<std::size_t>(pe)].last_arrival;
    if (last.empty()) last.resize(host_channels);
    last[static_cast<std::size_t>(channel)] = request;
  }

  [[nodiscard]] net_late_member late_member(int pe, int channel) const {
    const peer& other = peers_[static_cast<std::size_t>(pe)];
    net_late_member late{.pe = pe, .in_host_wait = other.in_host_wait ? 1 : 0};
    if (!other.last_arrival.empty() && other.last_arrival[static_cast<std::size_t>(channel)].sequence != 0) {
      late.arrived_before = 1;
      late.last = other.last_arrival[static_cast<std::size_t>(channel)];
    }
    return late;
  }

  //! Tells the peers when this PE's host threads enter or leave waits for data (pe_control::host_waits > 0). Lazy: a
  //! wait shorter than a liveness period says nothing. Best effort: a peer that is gone is noticed elsewhere.
  void announce_host_wait() noexcept {
    if (host_waits_ == nullptr) return;
    const bool waiting = std::atomic_ref(*const_cast<std::uint32_t*>(host_waits_)).load(std::memory_order_acquire) != 0;
    if (waiting == announced_host_wait_) return;
    announced_host_wait_ = waiting;
    const std::byte state{static_cast<unsigned char>(waiting ? 1 : 0)};
    for (int p = 0; p < n_pes_; ++p) {
      if (p == me_ || peers_[static_cast<std::size_t>(p)].status != peer_status::running) continue;
      try {
        send(p, net_kind::host_wait, 0, std::span(&state, 1), "announcing a host wait");
      } catch (...) {
        // It is gone or failed: the wait that matters reports that.
      }
    }
  }

  //! Removes and returns the first queued message of `kind` on `channel` from `from`.
  std::optional<inbound> take(int from, net_kind kind, int channel) {
    auto& queue = peers_[static_cast<std::size_t>(from)].queue;
    for (auto it = queue.begin(); it != queue.end(); ++it) {
      if (it->kind == kind && it->channel == channel) {
        inbound message = std::move(*it);
        queue.erase(it);
        return message;
      }
    }
    return std::nullopt;
  }

  //! Waits until `ready()` holds, reading every peer's socket meanwhile; false when `deadline` passed first. A peer
  //! the wait needs (`needed(pe)`: it still expects a message from it) that failed, vanished or finalized ends the
  //! wait at once. Another peer that failed or vanished ends it after a short grace: it may have passed this barrier
  //! just before failing, and the release this PE waits for may still be on its way (on one node, a release reaches
  //! every waiter at once; here it does not).
  template <class Ready, class Needed>
  bool wait_for(Ready&& ready, Needed&& needed, std::string_view what,
                std::optional<deadline_clock::time_point> deadline = std::nullopt) {
    std::optional<deadline_clock::time_point> grace_end;
    std::fflush(nullptr); // as in wait_on: a PE that blocks on its peers has its output out, once per wait
    for (;;) {
      pump(0);
      announce_host_wait(); // another thread's host wait began or ended meanwhile
      if (ready()) return true;
      bool needed_one = false;
      const auto now = deadline_clock::now();
      if (int p = culprit(needed, needed_one); p >= 0) {
        if (needed_one || (grace_end && now > *grace_end)) throw_broken(what, p);
        if (!grace_end) grace_end = now + std::chrono::milliseconds(200);
      }
      if (deadline && now >= *deadline) return false;
      // Every event that matters (a message, a closed connection) wakes poll; the bound only re-checks the state.
      pump(grace_end ? 10 : 100);
      if (ready()) return true;
    }
  }

  [[noreturn]] void throw_broken(std::string_view what, int p) const {
    const peer& other = peers_[static_cast<std::size_t>(p)];
    const std::string who = fmt::format("PE {} (pid {}, node {})", p, layout_.pids[static_cast<std::size_t>(p)],
                                        layout_.nodes[static_cast<std::size_t>(p)]);
    switch (other.status) {
      case peer_status::failed:
        SYMM_THROW(errc::peer_failed, "PE {} waited in {} but {} failed: {}", me_, what, who,
                   other.why.empty() ? "no reason given" : other.why);
      case peer_status::finalized:
        SYMM_THROW(errc::peer_failed,
                   "PE {} waited in {} but {} already finalized its world: the PEs ran different sequences of "
                   "collective operations",
                   me_, what, who);
      default:
        SYMM_THROW(errc::peer_failed,
                   "PE {} waited in {} but {} no longer exists: it exited or was killed (its connection closed)", me_,
                   what, who);
    }
  }

  //! The peer to blame for ending a wait, or -1: of those that failed or vanished (and those that finalized, when
  //! `needed`), the one noticed first, the likeliest root cause (a PE that fails because another did is noticed
  //! later). `needed_one`: whether any of them is needed.
  template <class Needed>
  int culprit(Needed&& needed, bool& needed_one) const {
    int first = -1;
    for (int p = 0; p < n_pes_; ++p) {
      const peer& other = peers_[static_cast<std::size_t>(p)];
      if (p == me_ || other.status == peer_status::running) continue;
      const bool is_needed = needed(p);
      if (other.status == peer_status::finalized && !is_needed) continue;
      needed_one = needed_one || is_needed;
      if (first < 0 || other.noticed < peers_[static_cast<std::size_t>(first)].noticed) first = p;
    }
    return first;
  }

  template <class Needed>
  void throw_if_broken(std::string_view what, Needed&& needed) const {
    bool needed_one = false;
    if (int p = culprit(needed, needed_one); p >= 0) throw_broken(what, p);
  }

  void set_status(peer& other, peer_status status) noexcept {
    other.status = status;
    other.noticed = ++events_;
  }

  //! Reads what the open connections have, waiting at most `timeout_ms` for the first byte (0: not at all).
  void pump(int timeout_ms) {
    std::vector<pollfd> fds;
    std::vector<int> owners;
    for (int p = 0; p < n_pes_; ++p) {
      peer& other = peers_[static_cast<std::size_t>(p)];
      if (p == me_ || !other.open) continue;
      fds.push_back(pollfd{other.fd.get(), POLLIN, 0});
      owners.push_back(p);
    }
    if (fds.empty()) return;
    int ready = ::poll(fds.data(), fds.size(), timeout_ms);
    if (ready < 0 && errno != EINTR) SYMM_TRY_SYS(ready);
    for (std::size_t i = 0; ready > 0 && i < fds.size(); ++i) {
      if (fds[i].revents != 0) receive(owners[i]);
    }
  }

  //! Reads everything `p` sent so far and files it: requests and releases into its queue, its state at once.
  void receive(int p) {
    peer& other = peers_[static_cast<std::size_t>(p)];
    std::byte chunk[65536];
    bool closed = false;
    for (;;) {
      ssize_t got = ::recv(other.fd.get(), chunk, sizeof(chunk), 0);
      if (got > 0) {
        other.received.insert(other.received.end(), chunk, chunk + got);
        continue;
      }
      if (got < 0 && errno == EINTR) continue;
      if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      closed = true; // closed (0) or broken (ECONNRESET, ETIMEDOUT of keep-alive)
      break;
    }
    std::size_t used = 0;
    while (other.received.size() - used >= sizeof(net_header)) {
      net_header h{};
      std::memcpy(&h, other.received.data() + used, sizeof(h));
      if (h.magic != net_header{}.magic) {
        SYMM_THROW(errc::bootstrap, "PE {}: the network coordination stream from PE {} is corrupt (magic {:#x})", me_,
                   p, h.magic);
      }
      if (other.received.size() - used < sizeof(h) + h.length) break;
      const std::byte* body = other.received.data() + used + sizeof(h);
      switch (h.kind) {
        case net_kind::failed:
          set_status(other, peer_status::failed);
          other.why.assign(reinterpret_cast<const char*>(body), h.length);
          break;
        case net_kind::finalized:
          if (other.status == peer_status::running) set_status(other, peer_status::finalized);
          break;
        case net_kind::host_wait: other.in_host_wait = h.length == 1 && body[0] != std::byte{0}; break;
        default: other.queue.push_back(inbound{h.kind, h.channel, std::vector<std::byte>(body, body + h.length)});
      }
      used += sizeof(h) + h.length;
    }
    other.received.erase(other.received.begin(), other.received.begin() + static_cast<std::ptrdiff_t>(used));
    // After the messages: what the peer said before it went ("finalized", "failed: why") is what counts.
    if (closed) {
      other.open = false;
      if (other.status == peer_status::running) set_status(other, peer_status::lost);
    }
  }

  //! Sends one message; while the peer's socket is full, keeps reading everyone (the peer may be sending to this PE).
  void send(int to, net_kind kind, int channel, std::span<const std::byte> payload, std::string_view what) {
    peer& other = peers_[static_cast<std::size_t>(to)];
    if (other.status != peer_status::running) throw_broken(what, to);
    std::vector<std::byte> message(sizeof(net_header) + payload.size());
    net_header h{.kind = kind,
                 .channel = static_cast<std::uint16_t>(channel),
                 .from = me_,
                 .length = static_cast<std::uint32_t>(payload.size())};
    std::memcpy(message.data(), &h, sizeof(h));
    std::copy(payload.begin(), payload.end(), message.begin() + sizeof(h));
    std::span<const std::byte> left(message);
    while (!left.empty()) {
      ssize_t n = ::send(other.fd.get(), left.data(), left.size(), MSG_NOSIGNAL);
      if (n >= 0) {
        left = left.subspan(static_cast<std::size_t>(n));
        continue;
      }
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        pollfd out{other.fd.get(), POLLOUT, 0};
        (void) ::poll(&out, 1, 10);
        pump(0);
        throw_if_broken(what, [&](int p) { return p == to; });
        continue;
      }
      if (errno == EPIPE || errno == ECONNRESET) {
        pump(0); // it may have said why before it went
        if (other.status == peer_status::running) set_status(other, peer_status::lost);
        other.open = false;
        throw_broken(what, to);
      }
      SYMM_TRY_SYS(n);
    }
  }

  void tell_everyone(net_kind kind, std::string_view text) noexcept {
    std::unique_lock lock(mutex_, std::defer_lock);
    // Another thread of this PE may be inside a barrier: wait for it a little, never forever.
    if (!lock.try_lock_for(std::chrono::seconds(1))) return;
    net_header h{
        .kind = kind, .from = me_, .length = static_cast<std::uint32_t>(std::min<std::size_t>(text.size(), 4096))};
    auto deadline = deadline_clock::now() + std::chrono::milliseconds(500);
    for (int p = 0; p < n_pes_; ++p) {
      peer& other = peers_[static_cast<std::size_t>(p)];
      if (p == me_ || !other.fd) continue;
      try {
        if (send_all(other.fd.get(), std::as_bytes(std::span(&h, 1)), deadline) == io_status::ok) {
          (void) send_all(other.fd.get(), std::as_bytes(std::span(text.data(), h.length)), deadline);
        }
      } catch (...) {
        // Best effort: the peer learns of this PE's end from its closed connection instead.
      }
    }
  }

  int me_;
  int n_pes_;
  job_layout layout_;
  std::vector<peer> peers_;
  std::byte secret_[mesh_secret_bytes]{};
  std::uint64_t events_ = 0;
  const std::uint32_t* host_waits_ = nullptr; // this PE's pe_control::host_waits
  bool announced_host_wait_ = false;          // what the peers were last told of it
  std::timed_mutex mutex_;                    // one thread of this PE reads and writes the sockets at a time
};

} // namespace detail
SYMM_END_NAMESPACE
