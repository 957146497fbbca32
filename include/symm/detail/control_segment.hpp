// symm/detail/control_segment.hpp: the per-PE page of host shared memory that makes barriers, collective
// allocation checks and failure detection work between processes without the sockets.
#pragma once

#include <symm/detail/check.hpp>
#include <symm/detail/process_state.hpp>

#include <linux/futex.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

SYMM_BEGIN_NAMESPACE
namespace detail {

enum class pe_state : std::uint32_t { joining = 0, running = 1, finalized = 2, failed = 3 };

//! Which collective operation a PE asked for.
enum class collective_kind : std::uint64_t {
  none = 0,
  allocate = 1,        //!< args: bytes, alignment
  free = 2,            //!< args: the offset freed
  split_strided = 3,   //!< args: start, stride, size (in the parent team)
  split_2d = 4,        //!< args: x_range
  destroy_team = 5,    //!< no args
  team_collective = 6, //!< a collective of symm/collectives.hpp; args: what (see describe_collective_call), src size,
                       //!< dst size
  barrier = 7,         //!< a host barrier user code asked for (barrier_all, sync_all, a team's, barrier_scope)
  finalize = 8,        //!< the world's finalize
  team_alltoallv = 9,  //!< symm::alltoallv; args: the element (see describe_alltoallv_element), row length, 0
  mdarray_shape = 10,  //!< a symm::mdarray's shape, two extents a step; args: see mdarray_shape_code, the extents
};

//! args[0] of an mdarray_shape step: the array's rank, its layout (0 right, 1 left) and the first extent of the step.
[[nodiscard]] constexpr std::int64_t mdarray_shape_code(std::size_t rank, bool layout_left, std::size_t first) noexcept {
  return static_cast<std::int64_t>(rank | (layout_left ? 1u : 0u) << 8 | first << 16);
}

//! Teams a PE can belong to at once besides the world: each live team takes one host barrier channel of the control
//! page, channel 0 being the world's. SYMM_MAX_TEAMS (config.hpp: 128 unless defined for the build); every PE of a job
//! must use the same value (world creation checks it).
inline constexpr int max_teams = SYMM_MAX_TEAMS;
static_assert(max_teams >= 1 && max_teams <= 4095, "SYMM_MAX_TEAMS must be in [1, 4095]");
//! Host barrier channels: the world's and one per team.
inline constexpr int host_channels = max_teams + 1;
//! Device barrier channels of the world and of every team (symm::device_barrier_channels): the device barriers' flags.
inline constexpr int device_channels = 64;

//! A set of host barrier channels (channel c: bit c % 64 of word c / 64), trivially copyable so that it travels in a
//! collective_request through control pages and sockets.
struct channel_set {
  std::uint64_t words[(host_channels + 63) / 64] = {};

  [[nodiscard]] constexpr bool contains(int channel) const noexcept {
    return (words[channel / 64] >> (channel % 64) & 1) != 0;
  }
  constexpr void insert(int channel) noexcept { words[channel / 64] |= std::uint64_t{1} << (channel % 64); }
  constexpr void erase(int channel) noexcept { words[channel / 64] &= ~(std::uint64_t{1} << (channel % 64)); }
  constexpr channel_set& operator|=(const channel_set& other) noexcept {
    for (std::size_t i = 0; i < std::size(words); ++i)
      words[i] |= other.words[i];
    return *this;
  }
  [[nodiscard]] constexpr int size() const noexcept {
    int n = 0;
    for (std::uint64_t w : words)
      n += std::popcount(w);
    return n;
  }
  //! The lowest team channel (1 to max_teams) not in the set, or -1.
  [[nodiscard]] constexpr int first_free_team_channel() const noexcept {
    for (int c = 1; c < host_channels; ++c)
      if (!contains(c)) return c;
    return -1;
  }
};

//! The world's channel alone: the channels of a PE that belongs to no team.
constexpr channel_set world_channel_only() noexcept {
  channel_set set;
  set.insert(0);
  return set;
}

//! One collective operation (an allocation, a free, a team split), as each PE of the team asked for it; compared
//! across the team's PEs before anything runs.
struct collective_request {
  std::uint64_t sequence; //!< how many collective operations this PE has done on this team, this one included
  collective_kind kind;
  std::int64_t args[3];        //!< what was asked (compared)
  channel_set channels;        //!< not compared: the host barrier channels of the teams this PE belongs to
  std::uint64_t unwinding = 0; //!< not compared: 1 for a release made while an exception propagates on this PE
};
// Requests travel as bytes, through control pages and sockets (net_coordination.hpp).
static_assert(std::is_trivially_copyable_v<collective_request> &&
              std::has_unique_object_representations_v<collective_request>);

//! A centralized sense-reversing barrier: arrivals count up, the last one bumps the generation and wakes sleepers.
struct alignas(64) barrier_channel {
  alignas(64) std::uint32_t arrived;
  alignas(64) std::uint32_t generation;
};

//! Layout of each PE's control page. Everything is accessed through std::atomic_ref: other processes write it.
struct pe_control {
  alignas(64) std::uint32_t pid;
  std::uint32_t state;
  std::uint32_t failure_written;
  // [channel of the team][sequence parity]: a PE belongs to at most one live team per channel (channel 0: the world)
  alignas(64) collective_request requests[host_channels][2];
  alignas(64) char failure[1024];                      // why this PE failed, for the others' messages
  alignas(64) barrier_channel barriers[host_channels]; // used on the page of the barrier's root PE
  alignas(64) std::uint32_t sleepers;   // host threads asleep on a futex in this PE's heap (symm/wait.hpp): writers
                                        // of 4-byte words wake them only while it is not 0
  alignas(64) std::uint32_t host_waits; // this PE's host threads in a wait for data (wait_until and the like), not in a
                                        // collective: a PE releasing objects while unwinding does not wait for them
};

inline constexpr std::size_t control_page_bytes = (sizeof(pe_control) + 4095) / 4096 * 4096;

template <class T>
std::atomic_ref<T> atomic_at(T& object) {
  return std::atomic_ref<T>(object);
}

inline void futex_wake_all(std::uint32_t* word) {
  ::syscall(SYS_futex, word, FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
}

//! Sleeps while *word == expected, at most `timeout` (shared futex: works across processes).
inline void futex_wait(std::uint32_t* word, std::uint32_t expected, std::chrono::microseconds timeout) {
  timespec ts{static_cast<time_t>(timeout.count() / 1000000), static_cast<long>(timeout.count() % 1000000) * 1000};
  ::syscall(SYS_futex, word, FUTEX_WAIT, expected, &ts, nullptr, 0);
}

//! Where liveness looks when the PEs coordinate over the network (detail/net_coordination.hpp): the other PEs' state
//! arrives as messages on sockets, not in control pages (which may be on other nodes).
class peer_monitor {
public:
  //! Reads what the peers sent without blocking; throws errc::peer_failed as liveness::check does.
  virtual void check(std::string_view what) = 0;
  //! A host wait for data of this PE ended (host_wait_mark): the peers may have been told it waits.
  virtual void host_wait_ended() noexcept = 0;
  //! The PE check() would throw for, or -1; never throws, never blocks (-1 when another thread of this PE holds the
  //! sockets): what the failure monitor's thread asks (detail/failure_monitor.hpp).
  virtual int failed_peer() noexcept = 0;

protected:
  ~peer_monitor() = default;
};

//! Everything a waiting PE checks so that it never waits forever for a PE that is gone.
class liveness {
public:
  liveness() = default;
  liveness(std::span<pe_control* const> pages, int my_pe, peer_monitor* network = nullptr)
      : pages_(pages), my_pe_(my_pe), network_(network) {}

  //! Throws errc::peer_failed when some PE failed, finalized early or no longer exists. `what` names the wait.
  void check(std::string_view what) const {
    if (network_ != nullptr) return network_->check(what);
    for (int p = 0; p < static_cast<int>(pages_.size()); ++p) {
      if (p == my_pe_) continue;
      pe_control& page = *pages_[static_cast<std::size_t>(p)];
      auto state = static_cast<pe_state>(atomic_at(page.state).load(std::memory_order_acquire));
      std::uint32_t pid = atomic_at(page.pid).load(std::memory_order_relaxed);
      if (state != pe_state::running && state != pe_state::joining) {
        std::fflush(nullptr); // this PE fails next: what it printed comes out before the launcher stops the job
      }
      if (state == pe_state::failed) {
        std::string why(page.failure, strnlen(page.failure, sizeof(page.failure)));
        SYMM_THROW(errc::peer_failed, "PE {} waited in {} but PE {} (pid {}) failed: {}", my_pe_, what, p, pid,
                   why.empty() ? "no reason given" : why);
      }
      if (state == pe_state::finalized) {
        SYMM_THROW(errc::peer_failed,
                   "PE {} waited in {} but PE {} (pid {}) already finalized its world: the PEs "
                   "ran different sequences of collective operations",
                   my_pe_, what, p, pid);
      }
      if (pid != 0 && pid != static_cast<std::uint32_t>(::getpid()) && ::kill(static_cast<pid_t>(pid), 0) != 0 &&
          errno == ESRCH) {
        std::fflush(nullptr);
        SYMM_THROW(errc::peer_failed, "PE {} waited in {} but PE {} (pid {}) no longer exists: it exited or was killed",
                   my_pe_, what, p, pid);
      }
    }
  }

  //! The first other PE that check() would throw for (failed, finalized early, no longer exists), or -1. Never throws
  //! and prints nothing: the failure monitor's thread asks it every few milliseconds (detail/failure_monitor.hpp).
  [[nodiscard]] int failed_peer() const noexcept {
    if (network_ != nullptr) return network_->failed_peer();
    for (int p = 0; p < static_cast<int>(pages_.size()); ++p) {
      if (p == my_pe_) continue;
      pe_control& page = *pages_[static_cast<std::size_t>(p)];
      auto state = static_cast<pe_state>(atomic_at(page.state).load(std::memory_order_acquire));
      if (state == pe_state::failed || state == pe_state::finalized) return p;
      std::uint32_t pid = atomic_at(page.pid).load(std::memory_order_relaxed);
      if (pid != 0 && pid != static_cast<std::uint32_t>(::getpid()) && ::kill(static_cast<pid_t>(pid), 0) != 0 &&
          errno == ESRCH) {
        return p;
      }
    }
    return -1;
  }

  [[nodiscard]] int my_pe() const noexcept { return my_pe_; }

private:
  std::span<pe_control* const> pages_;
  int my_pe_ = -1;
  peer_monitor* network_ = nullptr; // set when the PEs coordinate over the network: then it alone is asked
};

//! A bound on a wait: none (wait while the peers live), or a time after which the wait gives up.
using wait_deadline = std::optional<std::chrono::steady_clock::time_point>;

//! Counts the calling thread as in a host wait for data (pe_control::host_waits) for its lifetime; over the network
//! the peers learn of it from `network` (lazily, at its liveness checks) and of its end at once.
class host_wait_mark {
public:
  host_wait_mark(pe_control& mine, peer_monitor* network) noexcept : count_(&mine.host_waits), network_(network) {
    atomic_at(*count_).fetch_add(1, std::memory_order_release);
  }
  host_wait_mark(const host_wait_mark&) = delete;
  host_wait_mark& operator=(const host_wait_mark&) = delete;
  ~host_wait_mark() {
    atomic_at(*count_).fetch_sub(1, std::memory_order_release);
    if (network_ != nullptr) network_->host_wait_ended();
  }

private:
  std::uint32_t* count_;
  peer_monitor* network_;
};

//! Waits until `done()` holds; spins briefly, then sleeps on the futex at `word` (woken by whoever changes it), and
//! checks the other PEs' health between sleeps. No fixed delays: a wake-up comes as soon as the word changes. Returns
//! false when `deadline` passed first (a PE that is alive but slow, paused or elsewhere: the caller words the error),
//! or when `give_up` (checked between sleeps) says to.
template <class Done, class GiveUp = bool (*)()>
bool wait_on(
    std::uint32_t* word, Done&& done, const liveness& peers, std::string_view what,
    wait_deadline deadline = std::nullopt, GiveUp&& give_up = [] { return false; }) {
  for (int spin = 0; spin < 4096; ++spin) {
    if (done()) return true;
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
  }
  // A PE that sleeps on its peers has its output out: should a peer fail meanwhile, the launcher stops this PE at
  // once, and a pipe's buffer would be lost with it.
  std::fflush(nullptr);
  for (;;) {
    std::uint32_t seen = atomic_at(*word).load(std::memory_order_acquire);
    if (done()) return true;
    futex_wait(word, seen, std::chrono::milliseconds(20));
    if (done()) return true;
    peers.check(what);
    if (deadline && std::chrono::steady_clock::now() >= *deadline) return false;
    if (give_up()) return false;
  }
}

//! Arrive at `channel` on the root's page and wait for all `count` participants. False when `deadline` passed first;
//! the arrival then stays counted, so the caller must not use the channel again (it marks its PE failed).
template <class GiveUp = bool (*)()>
bool barrier_wait(
    barrier_channel& channel, std::uint32_t count, const liveness& peers, std::string_view what,
    wait_deadline deadline = std::nullopt, GiveUp&& give_up = [] { return false; }) {
  auto generation = atomic_at(channel.generation);
  std::uint32_t my_generation = generation.load(std::memory_order_acquire);
  if (atomic_at(channel.arrived).fetch_add(1, std::memory_order_acq_rel) + 1 == count) {
    atomic_at(channel.arrived).store(0, std::memory_order_relaxed);
    generation.store(my_generation + 1, std::memory_order_release);
    futex_wake_all(&channel.generation);
    return true;
  }
  return wait_on(
      &channel.generation, [&] { return generation.load(std::memory_order_acquire) != my_generation; }, peers, what,
      deadline, give_up);
}

//! How a PE that has not arrived looks from its node: "stopped (SIGSTOP, or a debugger)" when the kernel says so,
//! else "running" or "asleep" (a PE in another wait, or in a long computation); empty when unknown.
inline std::string process_condition(std::uint32_t pid) {
  switch (process_state_code(pid)) {
    case 'T': return "stopped (SIGSTOP or ^Z)";
    case 't': return "stopped by a debugger";
    case 'R': return "running";
    case 'S': return "asleep";
    case 'D': return "in an uninterruptible wait (paging, I/O)";
    default: return {};
  }
}

} // namespace detail
SYMM_END_NAMESPACE
