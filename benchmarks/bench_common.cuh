// bench_common.cuh — the harness shared by every bench_*.cu of the comparison suite (symm, raw CUDA, NVSHMEM).
//
// What it gives an implementation file:
//   - bench::start(argc, argv, impl): options (argv and BENCH_* environment), the device probe (prints
//     "SKIP: no CUDA device" and exits 77 without a GPU), the fork into --pes N PEs (default 2) connected by
//     socketpairs in a star (PE 0 is the parent and holds one socket per child PE 1..N-1; fork happens BEFORE any
//     CUDA call, each process initialises CUDA itself), the device choice (PE k uses device k % device_count; PEs
//     that share a GPU need MPS), the L2 size, a stream, a grid-step counter and a watchdog;
//   - bench::measure(): times one launch of a kernel that loops over `iters` iterations with a CUDA event
//     pair, as NVSHMEM's perftest does; calibrates `iters` to a target time (never fewer than min_iters: a point
//     calibrated to one iteration would time a launch, not the operation), warms up, repeats `reps` times and reports
//     median / min / p90 per iteration;
//   - bench::one_sided(): a point where the issuing PEs (PE 0 of 2; every even PE of 4 or 8, each towards PE + 1, all
//     pairs at once) issue operations, with the target buffer cleared before and verified (on the GPU) after, so a
//     broken implementation prints an error instead of a fast number; bench::two_sided_bw(): both PEs of a pair put
//     into each other at once (bidir_put_bw), both targets verified;
//   - bench::bulk_plan and bench::grid_step(): the per-iteration work of a bulk copy, the same for every
//     implementation: block b copies chunk b of the iteration's slot, then the grid meets in a grid-wide step (a
//     counter in device memory; the grid is capped at the blocks that can be resident, so the step cannot deadlock),
//     as perftest's shmem_put_bw does; L2-cold scopes (*_cold) rotate over slots that span at least 4 x the L2;
//   - bench::strided_points(): column_put_bw and tile_put_bw, a column and a tile of a row-major grid put into the
//     partner's grid (scopes block, warp, stream), the cells of the target checked, and nothing around them written;
//   - bench::collective_sweep(): the collective bandwidth points (broadcast_bw, fcollect_bw, alltoall_bw,
//     allreduce_bw, reduce_scatter_bw; scope "stream": host-issued, or "block": device-side, one block per PE), the
//     same for every implementation: input pattern, size sweep, lockstep timing of all PEs, verification of every PE's
//     result after the timed launches;
//   - bench::halo_step_points(): a put to the right neighbour and a barrier of all PEs on a stream, issued per step
//     (scope "eager") or replayed from a CUDA graph recorded once (scope "graph"), per-step time at any PE count;
//   - bench::context::row(): the one CSV row format of the suite, on stdout of PE 0:
//       impl,benchmark,scope,pes,bytes,iters,median_us,min_us,p90_us,gbps,round,grid,threads,note
//     median/min/p90 are microseconds per iteration; gbps = payload bytes / median (1 GB = 1e9 B), 0 for latencies
//     (bidir_put_bw counts both directions: 2 x bytes); pes is the number of PEs of the run; round is --round (the
//     run's number in run_all.sh's interleaved rounds); grid x threads the launch shape of the row (0 x 0: host-
//     issued); note a comma-free label of the variant ("nbi", "1cta-no-nvls", "cudaMemcpyAsync", ...) or empty.
//     Ratios are computed from median_us by report.py, never from the rounded gbps.
//
// Only nvcc compiles this (kernels and <<<>>> launches), hence .cuh. It is self-contained: it needs neither
// symm nor NVSHMEM, so bench_symm.cu can use it exactly as bench_raw.cu does.
#pragma once

#if !defined(__CUDACC__)
#  error "bench_common.cuh is CUDA code: compile it with nvcc"
#endif

#include <cuda_runtime.h>

#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bench {

inline constexpr int exit_skip = 77; // the automake / meson "skipped" exit status
inline constexpr std::size_t KiB = 1024, MiB = 1024 * KiB, GiB = 1024 * MiB;

// atomic_fetch_add_lat cycles over this many words, this many ints apart (4 KiB), in every implementation: the latency
// on one word moved between runs of the same code (0.16 to 0.25 us on the H200), as the word's L2 home (the near or
// far partition) would make it, and each implementation's word lies elsewhere; over a spread of words all average
// alike.
inline constexpr int lat_spread_words = 32, lat_spread_stride = 1024;

// g_lat cycles over this many words (a power of two), one per 128-byte line: 1 MiB of lines, more than an SM's L1
// (256 KiB on the H200) holds, so that every implementation's g (a weak load: symm's remote(x, pe)[i], nvshmem_int_g,
// raw's plain load) misses L1 every time and reaches the peer's memory, instead of timing an L1 hit.
inline constexpr int g_spread_words = 8192, g_spread_stride = 32;

// ---- messages and checks ------------------------------------------------------------------------------------------
inline constexpr int max_pes = 32;    // --pes upper bound (one node; the raw kernels' peer tables have this size)
inline int g_pe = -1;                 // this process's PE, for messages (-1 before the fork)
inline pid_t g_children[max_pes];     // PE 0 only: pid of PE k in g_children[k] (0: none or reaped), killed by the
inline int g_npes = 0;                //   watchdog; g_npes entries
inline char g_step[160] = "start-up"; // what the process is doing, named by the watchdog

[[noreturn]] inline void die(int code, const char* fmt, ...) {
  std::fflush(stdout);
  std::fprintf(stderr, "[pe %d] error: ", g_pe);
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
  std::fprintf(stderr, "\n");
  std::fflush(stderr);
  // _exit, not exit: a kernel may still spin on a peer that is gone, and exit() would wait for it in teardown.
  _exit(code);
}

inline void check_cuda(cudaError_t e, const char* call, const char* file, int line) {
  if (e != cudaSuccess)
    die(2, "%s:%d: %s failed: %s (%s) [during: %s]", file, line, call, cudaGetErrorName(e), cudaGetErrorString(e),
        g_step);
}
// Every CUDA runtime call of the suite goes through this: it prints the call and exits non-zero on failure.
#define BENCH_CUDA(call) ::bench::check_cuda((call), #call, __FILE__, __LINE__)
// A kernel launch: the launch error now, the execution error at the next synchronisation.
#define BENCH_LAUNCH_CHECK() ::bench::check_cuda(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)

inline void set_step(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(g_step, sizeof g_step, fmt, ap);
  va_end(ap);
}

// ---- options ------------------------------------------------------------------------------------------------------
// Parses "4096", "64K", "256M", "1G" (binary multiples). Returns 0 on a malformed value.
inline std::size_t parse_size(const char* s) {
  char* end = nullptr;
  double v = std::strtod(s, &end);
  if (end == s || v < 0) return 0;
  switch (*end) {
    case 'k':
    case 'K': v *= double(KiB); break;
    case 'm':
    case 'M': v *= double(MiB); break;
    case 'g':
    case 'G': v *= double(GiB); break;
    case '\0': break;
    default: return 0;
  }
  return std::size_t(v);
}

struct options {
  std::size_t min_bytes = 8;
  std::size_t max_bytes = 256 * MiB;     // sweep end for block / stream scopes
  std::size_t small_max_bytes = 1 * MiB; // sweep end for warp / thread scopes (one warp or thread copies it all)
  int reps = 7;                          // timed repetitions per point (median, min, p90 over these)
  double target_ms = 2.0;                // calibrated length of one timed launch, bandwidth points
  double lat_target_ms = 5.0;            // same for latency points (longer: launch skew of two-sided points)
  long long max_iters = 1 << 20;
  long long min_iters = 10;          // a calibration that gives fewer is raised to this (one iteration times a launch)
  int timeout_s = 150;               // watchdog: a process still running after this exits with 124
  int pes = 2;                       // PEs forked (2..max_pes); above 2 the pair points and the collective points run
  int round = 1;                     // the round column (run_all.sh interleaves the implementations round by round)
  int sweep_factor = 2;              // sizes grow by this factor (a power of two)
  std::size_t cold_span = 256 * MiB; // L2-cold scopes rotate over slots spanning this much (>= 4 x L2)
  std::size_t coll_max_bytes = 256 * MiB;     // sweep end for the host-issued collectives
  std::size_t coll_block_max_bytes = 4 * MiB; // sweep end for the device-side (one block per PE) collectives
  std::string filter;                         // comma-separated substrings of "benchmark/scope"; empty: all

  // Whether the point "benchmark/scope" is selected by the filter.
  bool wants(std::string_view benchmark, std::string_view scope) const {
    if (filter.empty()) return true;
    std::string key = std::string(benchmark) + "/" + std::string(scope);
    std::size_t pos = 0;
    while (pos <= filter.size()) {
      std::size_t comma = filter.find(',', pos);
      if (comma == std::string::npos) comma = filter.size();
      std::string part = filter.substr(pos, comma - pos);
      if (!part.empty() && key.find(part) != std::string::npos) return true;
      pos = comma + 1;
    }
    return false;
  }
};

inline void usage(const char* prog) {
  std::printf(
      "usage: %s [--pes N] [--max-bytes N] [--small-max-bytes N] [--min-bytes N] [--reps R] [--target-ms T]\n"
      "          [--lat-target-ms T] [--max-iters N] [--min-iters N] [--timeout S] [--filter a,b] [--round R]\n"
      "          [--sweep-factor F] [--cold-span N] [--coll-max-bytes N] [--coll-block-max-bytes N]\n"
      "N PEs (fork; --pes, default 2, at most %d; PE k uses device k %% device count, PEs sharing a GPU need MPS).\n"
      "CSV rows on stdout: impl,benchmark,scope,pes,bytes,iters,median_us,min_us,p90_us,gbps,round,grid,threads,note\n"
      "With 2 PEs every point runs; with --pes > 2 (even) the pair points (put_bw/block, pingpong: PE 2k with\n"
      "  PE 2k+1, all pairs at once) and the collective points (broadcast_bw, fcollect_bw, alltoall_bw,\n"
      "  allreduce_bw, reduce_scatter_bw; scopes stream and block).\n"
      "Bulk copies: the grid is capped at the resident blocks and meets in a grid-wide step after every iteration;\n"
      "  *_cold scopes rotate over slots spanning --cold-span (default 256M, at least 4 x L2) so L2 never holds them.\n"
      "Collective bytes (nccl-tests' convention; sweeps from max(min-bytes, 1K) to --coll-max-bytes, scope block\n"
      "  to --coll-block-max-bytes): broadcast and\n"
      "  allreduce the vector; fcollect the gathered dst (N x src); alltoall the src (= dst, N blocks);\n"
      "  reduce_scatter the src (N x dst). gbps = bytes / median (algorithm bandwidth).\n"
      "column_put_bw, tile_put_bw (2 PEs; scopes block, warp, stream): column 1 of rows [0, n) (n from 16 to 16384)\n"
      "  and the n x n tile at column 64 (n from 4 to 1024) of a row-major float grid of 2048 columns; bytes = cells.\n"
      "halo_step (any PE count; scopes eager and graph): a put of 8 B, 4K or 64K to PE (pe + 1) %% N and a barrier\n"
      "  of all PEs on a stream, issued per step or replayed from a CUDA graph; microseconds per step.\n"
      "Environment equivalents: BENCH_PES BENCH_MAX_BYTES BENCH_SMALL_MAX_BYTES BENCH_MIN_BYTES BENCH_REPS\n"
      "  BENCH_TARGET_MS BENCH_LAT_TARGET_MS BENCH_MAX_ITERS BENCH_MIN_ITERS BENCH_TIMEOUT_S BENCH_FILTER BENCH_ROUND\n"
      "  BENCH_SWEEP_FACTOR BENCH_COLD_SPAN BENCH_COLL_MAX_BYTES BENCH_COLL_BLOCK_MAX_BYTES (argv wins).\n"
      "  Sizes take K/M/G suffixes.\n"
      "--filter selects points whose \"benchmark/scope\" contains one of the substrings (put_bw/block,pingpong).\n"
      "Exit status: 0 ok, 77 no CUDA device, 124 watchdog timeout, other: failure.\n",
      prog, max_pes);
}

inline options parse_options(int argc, char** argv) {
  options o;
  auto apply = [&](std::string_view key, const char* val) {
    auto size = [&](std::size_t& dst) {
      std::size_t v = parse_size(val);
      if (v == 0) die(64, "bad size for %.*s: '%s'", int(key.size()), key.data(), val);
      dst = v;
    };
    if (key == "max-bytes") size(o.max_bytes);
    else if (key == "small-max-bytes") size(o.small_max_bytes);
    else if (key == "min-bytes") size(o.min_bytes);
    else if (key == "reps") o.reps = std::max(1, std::atoi(val));
    else if (key == "target-ms") o.target_ms = std::max(0.05, std::atof(val));
    else if (key == "min-iters") o.min_iters = std::max(1, std::atoi(val));
    else if (key == "round") o.round = std::max(0, std::atoi(val));
    else if (key == "sweep-factor") o.sweep_factor = std::clamp(std::atoi(val), 2, 64);
    else if (key == "cold-span") size(o.cold_span);
    else if (key == "coll-max-bytes") size(o.coll_max_bytes);
    else if (key == "coll-block-max-bytes") size(o.coll_block_max_bytes);
    else if (key == "lat-target-ms") o.lat_target_ms = std::max(0.05, std::atof(val));
    else if (key == "max-iters") o.max_iters = std::max(1LL, std::atoll(val));
    else if (key == "timeout") o.timeout_s = std::max(1, std::atoi(val));
    else if (key == "pes") {
      char* end = nullptr;
      long n = std::strtol(val, &end, 10);
      if (end == val || *end != '\0' || n < 2 || n > max_pes)
        die(64, "--pes needs a count from 2 to %d, not '%s'", max_pes, val);
      o.pes = int(n);
    } else if (key == "filter") o.filter = val;
    else die(64, "unknown option --%.*s (see --help)", int(key.size()), key.data());
  };
  const std::pair<const char*, const char*> env[] = {
      {"BENCH_MAX_BYTES", "max-bytes"},
      {"BENCH_SMALL_MAX_BYTES", "small-max-bytes"},
      {"BENCH_MIN_BYTES", "min-bytes"},
      {"BENCH_REPS", "reps"},
      {"BENCH_TARGET_MS", "target-ms"},
      {"BENCH_LAT_TARGET_MS", "lat-target-ms"},
      {"BENCH_MAX_ITERS", "max-iters"},
      {"BENCH_TIMEOUT_S", "timeout"},
      {"BENCH_FILTER", "filter"},
      {"BENCH_PES", "pes"},
      {"BENCH_MIN_ITERS", "min-iters"},
      {"BENCH_ROUND", "round"},
      {"BENCH_SWEEP_FACTOR", "sweep-factor"},
      {"BENCH_COLD_SPAN", "cold-span"},
      {"BENCH_COLL_MAX_BYTES", "coll-max-bytes"},
      {"BENCH_COLL_BLOCK_MAX_BYTES", "coll-block-max-bytes"}};
  for (auto [var, key] : env)
    if (const char* v = std::getenv(var); v && *v) apply(key, v);
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "-h" || a == "--help") {
      usage(argv[0]);
      std::exit(0);
    }
    if (a.substr(0, 2) != "--") die(64, "unexpected argument '%s' (see --help)", argv[i]);
    a.remove_prefix(2);
    if (auto eq = a.find('='); eq != std::string_view::npos) {
      std::string key(a.substr(0, eq));
      apply(key, argv[i] + 2 + eq + 1);
    } else {
      if (i + 1 >= argc) die(64, "--%s needs a value", argv[i] + 2);
      apply(a, argv[++i]);
    }
  }
  o.min_bytes = std::max<std::size_t>(o.min_bytes, 4);
  o.small_max_bytes = std::min(o.small_max_bytes, o.max_bytes);
  o.coll_max_bytes = std::min(o.coll_max_bytes, o.max_bytes);
  o.coll_block_max_bytes = std::min(o.coll_block_max_bytes, o.coll_max_bytes);
  while (o.sweep_factor & (o.sweep_factor - 1)) // a power of two: every program sweeps the same sizes
    --o.sweep_factor;
  return o;
}

// The bytes each of src and dst holds per PE in every program: the largest sweep and the L2-cold span.
inline std::size_t region_bytes(const options& o) {
  std::size_t r = std::max(o.max_bytes, o.cold_span);
  return (r + 2 * MiB - 1) / (2 * MiB) * (2 * MiB);
}

// Powers of two from lo to hi inclusive, growing by `factor` (a power of two); hi itself always ends the sweep.
inline std::vector<std::size_t> sweep(std::size_t lo, std::size_t hi, int factor = 2) {
  std::vector<std::size_t> v;
  std::size_t s = 1;
  while (s < lo)
    s <<= 1;
  for (; s <= hi; s *= std::size_t(factor))
    v.push_back(s);
  std::size_t top = 1;
  while (top * 2 <= hi)
    top <<= 1;
  if (top >= lo && (v.empty() || v.back() != top)) v.push_back(top);
  return v;
}

// ---- N processes over socketpairs (a star around PE 0) -------------------------------------------------------------
// PE 0 holds one socket per child PE (fds_[k] for PE k); a child PE k holds one, to PE 0 (fds_[0]). Collective
// helpers (barrier, broadcast, allgather) go through PE 0; exchange(), send_fd() and recv_fd() are the 2-PE forms
// the point-to-point points use. With 2 PEs every helper does exactly what the 2-PE harness did.
class pe_link {
public:
  pe_link() = default;
  pe_link(int pe, int npes, std::vector<int> fds) : pe_(pe), npes_(npes), fds_(std::move(fds)) {}
  pe_link(const pe_link&) = delete;
  pe_link& operator=(const pe_link&) = delete;
  pe_link(pe_link&& o) noexcept : pe_(o.pe_), npes_(o.npes_), fds_(std::exchange(o.fds_, {})) {}
  pe_link& operator=(pe_link&& o) noexcept {
    close_all();
    pe_ = o.pe_;
    npes_ = o.npes_;
    fds_ = std::exchange(o.fds_, {});
    return *this;
  }
  ~pe_link() { close_all(); }

  int pe() const { return pe_; }
  int npes() const { return npes_; }
  // The other PE of a 2-PE run (point-to-point points only).
  int peer() const { return 1 - pe_; }

  // Raw bytes to / from PE `to` (PE 0 reaches every PE, the others only PE 0).
  void send_to(int to, const void* p, std::size_t n) {
    int fd = fd_of(to);
    auto* c = static_cast<const char*>(p);
    while (n > 0) {
      ssize_t k = ::send(fd, c, n, MSG_NOSIGNAL);
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) die(3, "PE %d is gone (send: %s) [during: %s]", to, std::strerror(errno), g_step);
      c += k;
      n -= std::size_t(k);
    }
  }
  void recv_from(int from, void* p, std::size_t n) {
    int fd = fd_of(from);
    auto* c = static_cast<char*>(p);
    while (n > 0) {
      ssize_t k = ::recv(fd, c, n, 0);
      if (k < 0 && errno == EINTR) continue;
      if (k == 0) die(3, "PE %d exited early (see its message above) [during: %s]", from, g_step);
      if (k < 0) die(3, "recv from PE %d: %s", from, std::strerror(errno));
      c += k;
      n -= std::size_t(k);
    }
  }
  // 2 PEs: sends `n` bytes and receives the peer's `n` (small messages: the socket buffer holds both directions).
  void exchange(const void* mine, void* theirs, std::size_t n) {
    require_two("exchange");
    send_to(peer(), mine, n);
    recv_from(peer(), theirs, n);
  }
  template <class T>
  T exchange(const T& mine) {
    T theirs{};
    exchange(&mine, &theirs, sizeof(T));
    return theirs;
  }
  // Every PE gets every PE's `n` bytes, PE k's at all + k * n (small messages).
  void allgather(const void* mine, void* all, std::size_t n) {
    auto* a = static_cast<char*>(all);
    if (pe_ == 0) {
      std::memcpy(a, mine, n);
      for (int k = 1; k < npes_; ++k)
        recv_from(k, a + std::size_t(k) * n, n);
      for (int k = 1; k < npes_; ++k)
        send_to(k, a, n * std::size_t(npes_));
    } else {
      send_to(0, mine, n);
      recv_from(0, a, n * std::size_t(npes_));
    }
  }
  template <class T>
  std::vector<T> allgather(const T& mine) {
    std::vector<T> all(static_cast<std::size_t>(npes_));
    allgather(&mine, all.data(), sizeof(T));
    return all;
  }
  // Every PE returns `v` as `root` passed it (through PE 0 when the root is another PE).
  template <class T>
  T broadcast(T v, int root = 0) {
    if (pe_ == root && root != 0) {
      send_to(0, &v, sizeof v);
      return v;
    }
    if (pe_ == 0) {
      if (root != 0) recv_from(root, &v, sizeof v);
      for (int k = 1; k < npes_; ++k)
        if (k != root) send_to(k, &v, sizeof v);
      return v;
    }
    recv_from(0, &v, sizeof v);
    return v;
  }
  void barrier() {
    char c = 0;
    if (npes_ == 2) {
      (void) exchange(c);
      return;
    }
    if (pe_ == 0) {
      for (int k = 1; k < npes_; ++k)
        recv_from(k, &c, 1);
      for (int k = 1; k < npes_; ++k)
        send_to(k, &c, 1);
    } else {
      send_to(0, &c, 1);
      recv_from(0, &c, 1);
    }
  }
  // File descriptors (SCM_RIGHTS), for VMM heaps exported as POSIX fds.
  void send_fd_to(int to, int fd) {
    char byte = 0;
    iovec iov{&byte, 1};
    alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int))] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = ctl;
    msg.msg_controllen = sizeof ctl;
    cmsghdr* cm = CMSG_FIRSTHDR(&msg);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(cm), &fd, sizeof fd);
    if (::sendmsg(fd_of(to), &msg, MSG_NOSIGNAL) != 1) die(3, "sendmsg(SCM_RIGHTS): %s", std::strerror(errno));
  }
  int recv_fd_from(int from) {
    char byte = 0;
    iovec iov{&byte, 1};
    alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int))] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = ctl;
    msg.msg_controllen = sizeof ctl;
    if (::recvmsg(fd_of(from), &msg, 0) != 1) die(3, "recvmsg(SCM_RIGHTS): %s", std::strerror(errno));
    cmsghdr* cm = CMSG_FIRSTHDR(&msg);
    if (!cm || cm->cmsg_type != SCM_RIGHTS) die(3, "recvmsg: no file descriptor in the message");
    int fd = -1;
    std::memcpy(&fd, CMSG_DATA(cm), sizeof fd);
    return fd;
  }
  void send_fd(int fd) { send_fd_to(peer(), fd); }
  int recv_fd() { return recv_fd_from(peer()); }
  // Every PE gets every PE's descriptor: entry k is PE k's (this PE's own `fd` at entry pe(); the others are new
  // descriptors the caller closes). Children send theirs to PE 0, which hands every child all the others.
  std::vector<int> allgather_fds(int fd) {
    std::vector<int> all(static_cast<std::size_t>(npes_), -1);
    all[std::size_t(pe_)] = fd;
    if (pe_ == 0) {
      for (int k = 1; k < npes_; ++k)
        all[std::size_t(k)] = recv_fd_from(k);
      for (int k = 1; k < npes_; ++k)
        for (int j = 0; j < npes_; ++j)
          if (j != k) send_fd_to(k, all[std::size_t(j)]);
    } else {
      send_fd_to(0, fd);
      for (int j = 0; j < npes_; ++j)
        if (j != pe_) all[std::size_t(j)] = recv_fd_from(0);
    }
    return all;
  }

  // A child PE returns rc (main returns it and the child exits); PE 0 waits for every child and returns the first
  // non-zero of its own rc and the children's statuses.
  int finish(int rc) {
    std::fflush(stdout);
    std::fflush(stderr);
    close_all();
    if (pe_ != 0) return rc;
    for (int k = 1; k < g_npes; ++k) {
      if (g_children[k] <= 0) continue;
      int status = 0;
      while (::waitpid(g_children[k], &status, 0) < 0 && errno == EINTR) {
      }
      g_children[k] = 0;
      int child_rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      if (child_rc != 0) std::fprintf(stderr, "[pe 0] PE %d exited with status %d\n", k, child_rc);
      if (rc == 0) rc = child_rc;
    }
    return rc;
  }

private:
  int fd_of(int other) const {
    int fd = other >= 0 && std::size_t(other) < fds_.size() ? fds_[std::size_t(other)] : -1;
    if (other == pe_ || fd < 0) die(3, "PE %d has no link to PE %d [during: %s]", pe_, other, g_step);
    return fd;
  }
  void require_two(const char* what) const {
    if (npes_ != 2) die(3, "pe_link::%s is a 2-PE helper, called with %d PEs [during: %s]", what, npes_, g_step);
  }
  void close_all() {
    for (int& fd : fds_)
      if (fd >= 0) ::close(std::exchange(fd, -1));
  }

  int pe_ = -1;
  int npes_ = 0;
  std::vector<int> fds_;
};

// Forks `npes` PEs (this process is PE 0) connected to PE 0 by one socketpair each. Must run before any CUDA call (a
// CUDA context does not survive fork).
inline pe_link spawn_pes(int npes) {
  std::vector<int> mine(std::size_t(npes), -1); // PE 0's end of each child's socketpair
  g_npes = npes;
  for (int k = 1; k < npes; ++k) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) die(3, "socketpair: %s", std::strerror(errno));
    std::fflush(stdout);
    std::fflush(stderr);
    pid_t pid = ::fork();
    if (pid < 0) die(3, "fork: %s", std::strerror(errno));
    if (pid == 0) {
      ::close(sv[0]);
      for (int j = 1; j < k; ++j) // the parent's sockets to earlier children: not ours
        ::close(mine[std::size_t(j)]);
      ::prctl(PR_SET_PDEATHSIG, SIGKILL); // PE 0 gone (crash, watchdog): the child goes too, never lingers on the GPU
      g_pe = k;
      g_npes = 0;
      std::vector<int> fds(std::size_t(npes), -1);
      fds[0] = sv[1];
      return pe_link(k, npes, std::move(fds));
    }
    ::close(sv[1]);
    mine[std::size_t(k)] = sv[0];
    g_children[k] = pid;
  }
  g_pe = 0;
  return pe_link(0, npes, std::move(mine));
}

// ---- device probe and watchdog ------------------------------------------------------------------------------------
// Counts CUDA devices in a throwaway child process, so that the parent stays free of CUDA state until it forks.
// Returns the count (0: no device or no driver); exits non-zero on any other CUDA error.
inline int probe_device_count() {
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = ::fork();
  if (pid < 0) die(3, "fork: %s", std::strerror(errno));
  if (pid == 0) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) {
      std::fprintf(stderr, "(cudaGetDeviceCount: %s)\n", cudaGetErrorName(e));
      _exit(0);
    }
    if (e != cudaSuccess) {
      std::fprintf(
          stderr, "error: cudaGetDeviceCount failed: %s (%s)%s\n", cudaGetErrorName(e), cudaGetErrorString(e),
          std::getenv("CUDA_MPS_PIPE_DIRECTORY") ? " -- is the MPS daemon of CUDA_MPS_PIPE_DIRECTORY running?" : "");
      _exit(200);
    }
    _exit(std::min(n, 199));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status)) die(3, "the device probe process died (signal %d)", WTERMSIG(status));
  int code = WEXITSTATUS(status);
  if (code == 200) std::exit(1);
  return code;
}

extern "C" inline void watchdog_handler(int) {
  char msg[300];
  int n = std::snprintf(msg, sizeof msg, "[pe %d] TIMEOUT: watchdog fired during: %s\n", g_pe, g_step);
  if (n > 0) (void) !::write(2, msg, std::size_t(std::min(n, int(sizeof msg) - 1)));
  for (int k = 1; k < g_npes; ++k)
    if (g_children[k] > 0) ::kill(g_children[k], SIGKILL);
  _exit(124);
}

// ---- per-run context ----------------------------------------------------------------------------------------------
// What a row says besides the timing: the launch shape that gave it (0 x 0: host-issued), a comma-free label of the
// variant, and how many times `bytes` of payload one iteration moves (2 for bidirectional points).
struct row_info {
  int grid = 0, threads = 0;
  std::string note;
  double payload_factor = 1.0;
  row_info() = default;
  row_info(int grid_, int threads_, std::string note_ = {}, double payload_factor_ = 1.0)
      : grid(grid_), threads(threads_), note(std::move(note_)), payload_factor(payload_factor_) {}
};

// The grid-wide step's counter and error flag (device memory of this PE, one per process): bulk kernels count
// arrivals into a monotonic 64-bit counter, so it never needs resetting; the host keeps the count (`base`).
struct grid_counter {
  unsigned long long* counter = nullptr; // [0]: arrivals; [1]: set to 1 by a step that timed out
  unsigned long long base = 0;           // arrivals of every launch so far
  // The base of a launch of `grid` blocks doing `iters` steps, and the count after it.
  unsigned long long next(int grid, long long iters) {
    unsigned long long b = base;
    base += static_cast<unsigned long long>(grid) * static_cast<unsigned long long>(iters);
    return b;
  }
};

struct context {
  options opt;
  pe_link link;
  std::string impl;
  int pe = -1;
  int device = 0;
  int device_count = 0;
  int sm_count = 0;         // of PE 0's device (broadcast, so all PEs build the same launch configurations)
  std::size_t l2_bytes = 0; // of PE 0's device (cudaDevAttrL2CacheSize)
  std::string device_name;
  cudaStream_t stream = nullptr;
  grid_counter steps;
  int rc = 0; // becomes non-zero on a failed verification; main returns finish()

  int npes() const { return link.npes(); }
  // Whether the point-to-point points (put/get, latencies, ping-pong, barrier: 2-PE points) run: 2 PEs only.
  bool pairwise() const { return link.npes() == 2; }
  // The pair points (put_bw/block, pingpong) at any even PE count: PE 2k with PE 2k+1, all pairs at once.
  bool pairs() const { return link.npes() % 2 == 0; }
  int partner() const { return pe ^ 1; }
  bool issuer() const { return pe % 2 == 0; }
  // PEs that share this PE's GPU (PE k on device k % device_count): kernels that spin on their peers must leave room
  // for all of them at once.
  int pes_per_device() const { return (link.npes() + device_count - 1) / device_count; }

  // One CSV row (PE 0 only). `bandwidth`: gbps = payload_factor x bytes / median; otherwise gbps is 0.
  void row(std::string_view benchmark, std::string_view scope, std::size_t bytes, long long iters, double median_us,
           double min_us, double p90_us, bool bandwidth, const row_info& info = {}) const {
    if (pe != 0) return;
    double gbps = bandwidth && median_us > 0 ? info.payload_factor * double(bytes) / (median_us * 1e3) : 0.0;
    std::string note = info.note;
    std::replace(note.begin(), note.end(), ',', ';'); // one CSV field
    std::printf("%s,%.*s,%.*s,%d,%zu,%lld,%.4f,%.4f,%.4f,%.4f,%d,%d,%d,%s\n", impl.c_str(), int(benchmark.size()),
                benchmark.data(), int(scope.size()), scope.data(), link.npes(), bytes, iters, median_us, min_us, p90_us,
                gbps, opt.round, info.grid, info.threads, note.c_str());
    std::fflush(stdout);
  }
  // Informational line on stderr, PE 0 only (stdout stays pure CSV).
  void note(const char* fmt, ...) const {
    if (pe != 0) return;
    va_list ap;
    va_start(ap, fmt);
    std::fprintf(stderr, "# %s: ", impl.c_str());
    std::vfprintf(stderr, fmt, ap);
    std::fprintf(stderr, "\n");
    va_end(ap);
  }
  int finish() {
    if (stream) cudaStreamDestroy(std::exchange(stream, nullptr));
    alarm(0);
    return link.finish(rc);
  }
};

inline void print_header() {
  std::printf("impl,benchmark,scope,pes,bytes,iters,median_us,min_us,p90_us,gbps,round,grid,threads,note\n");
  std::fflush(stdout);
}

// Options, device probe (exit 77 without a device), fork, device choice, stream, watchdog. Environment variables
// meant for both PEs (NVSHMEM_*) must be set before this call: it forks.
inline context start(int argc, char** argv, const char* impl) {
  context c;
  c.opt = parse_options(argc, argv);
  c.impl = impl;
  // Every implementation's kernels spin on the peer's: with lazy loading a first launch can wait for them (a
  // deadlock, see symm/detail/backend/cuda/module_loading.hpp). Eager for all three, before CUDA initialises.
  ::setenv("CUDA_MODULE_LOADING", "EAGER", 0);
  int ndev = probe_device_count();
  if (ndev <= 0) {
    std::printf("SKIP: no CUDA device\n");
    std::fflush(stdout);
    std::exit(exit_skip);
  }
  print_header();
  c.link = spawn_pes(c.opt.pes);
  c.pe = c.link.pe();
  std::signal(SIGALRM, watchdog_handler);
  alarm(unsigned(c.opt.timeout_s)); // after the fork: pending alarms are not inherited
  c.device_count = ndev;
  c.device = c.pe % ndev;
  set_step("cudaSetDevice(%d)", c.device);
  BENCH_CUDA(cudaSetDevice(c.device));
  cudaDeviceProp prop{};
  BENCH_CUDA(cudaGetDeviceProperties(&prop, c.device));
  c.device_name = prop.name;
  c.sm_count = c.link.broadcast(prop.multiProcessorCount);
  int l2 = 0;
  BENCH_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, c.device));
  c.l2_bytes = c.link.broadcast(std::size_t(l2));
  BENCH_CUDA(cudaStreamCreateWithFlags(&c.stream, cudaStreamNonBlocking));
  BENCH_CUDA(cudaMalloc(&c.steps.counter, 2 * sizeof(unsigned long long)));
  BENCH_CUDA(cudaMemset(c.steps.counter, 0, 2 * sizeof(unsigned long long)));
  std::vector<int> devs = c.link.allgather(c.device);
  const char* mps = std::getenv("CUDA_MPS_PIPE_DIRECTORY");
  std::string others;
  for (int k = 1; k < c.npes(); ++k)
    others += (k > 1 ? ", PE " : "PE ") + std::to_string(k) + " on device " + std::to_string(devs[std::size_t(k)]);
  c.note("%d device(s); PE 0 on device %d (%s, %d SMs, cc %d.%d), %s; MPS pipe dir: %s", ndev, c.device, prop.name,
         prop.multiProcessorCount, prop.major, prop.minor, others.c_str(),
         mps ? mps : "(unset: default /tmp/nvidia-mps if a daemon runs)");
  c.note("L2 %zu bytes; L2-cold scopes rotate over %zu bytes%s; round %d", c.l2_bytes, c.opt.cold_span,
         c.opt.cold_span < 4 * c.l2_bytes ? " (LESS than 4 x L2: raise --cold-span)" : "", c.opt.round);
  if (!c.pairwise())
    c.note("%d PEs: pair points (PE 2k with 2k+1, all pairs at once) and collective points only", c.npes());
  if (c.npes() % 2 != 0) c.note("%d PEs (odd): collective points only", c.npes());
  return c;
}

// ---- timing ---------------------------------------------------------------------------------------------------------
struct stats {
  double median_us = 0, min_us = 0, p90_us = 0;
};

inline stats summarize(std::vector<double> us) {
  stats s;
  if (us.empty()) return s;
  std::sort(us.begin(), us.end());
  std::size_t n = us.size();
  s.median_us = n % 2 ? us[n / 2] : 0.5 * (us[n / 2 - 1] + us[n / 2]);
  s.min_us = us.front();
  s.p90_us = us[std::size_t(std::ceil(0.9 * double(n))) - 1];
  return s;
}

struct measurement {
  long long iters = 0;
  stats st;
};

class event_pair {
public:
  event_pair() {
    BENCH_CUDA(cudaEventCreate(&a_));
    BENCH_CUDA(cudaEventCreate(&b_));
  }
  ~event_pair() {
    cudaEventDestroy(a_);
    cudaEventDestroy(b_);
  }
  event_pair(const event_pair&) = delete;
  event_pair& operator=(const event_pair&) = delete;
  // Milliseconds of what `enqueue()` puts on `s` (one kernel looping over the iterations, or n async copies).
  template <class Enqueue>
  double time(Enqueue&& enqueue, cudaStream_t s) {
    BENCH_CUDA(cudaEventRecord(a_, s));
    enqueue();
    BENCH_LAUNCH_CHECK();
    BENCH_CUDA(cudaEventRecord(b_, s));
    wait_for(b_);
    float ms = 0;
    BENCH_CUDA(cudaEventElapsedTime(&ms, a_, b_));
    return double(ms);
  }

  // Waits for `e` like cudaEventSynchronize, but fails fast instead of hanging: when a child PE is gone (PE 0 checks)
  // or when one launch runs past launch_timeout_s (a peer kernel that never ran: no MPS, a crashed PE).
  static void wait_for(cudaEvent_t e) {
    static constexpr double launch_timeout_s = 20;
    timespec t0{}, now{};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (unsigned spins = 1;; ++spins) {
      cudaError_t q = cudaEventQuery(e);
      if (q == cudaSuccess) return;
      if (q != cudaErrorNotReady) check_cuda(q, "cudaEventQuery (kernel execution)", __FILE__, __LINE__);
      if (spins % 1024 != 0) continue;
      for (int k = 1; g_pe == 0 && k < g_npes; ++k) {
        int status = 0;
        if (g_children[k] > 0 && ::waitpid(g_children[k], &status, WNOHANG) == g_children[k]) {
          g_children[k] = 0;
          die(3, "PE %d exited (status %d) while PE 0 waited for the GPU [during: %s]", k,
              WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), g_step);
        }
      }
      clock_gettime(CLOCK_MONOTONIC, &now);
      double waited = double(now.tv_sec - t0.tv_sec) + 1e-9 * double(now.tv_nsec - t0.tv_nsec);
      if (waited > launch_timeout_s)
        die(124,
            "a timed launch has not finished after %.0f s: a kernel waits for a peer that does not run "
            "(PEs sharing a GPU need MPS) [during: %s]",
            launch_timeout_s, g_step);
    }
  }

private:
  cudaEvent_t a_{}, b_{};
};

// Times `launch(iters)`, which enqueues on `s` the work of `iters` iterations (normally one kernel that loops).
// `iters == 0`: calibrate it, growing 8x until one launch takes target_ms/8, then scaling to target_ms, and never
// below opt.min_iters (a slow point is re-measured with more iterations rather than timed over one).
// One warm-up launch, then opt.reps timed launches (3 if one launch takes over 5x the target); the stats are
// microseconds per iteration.
// `both`: a two-sided or collective point (ping-pong, barrier, bidirectional puts, collectives) that every PE runs in
// lockstep: every launch is preceded by a socket barrier of all PEs and PE 0's calibration decisions are broadcast, so
// all PEs launch the same iteration counts. A launch's time is its slowest PE's: the work is done when every PE is
// (two kernels sharing one GPU seldom split its bandwidth evenly, and the faster one alone would count both PEs'
// bytes over less than the time they took).
template <class Launch>
measurement measure(Launch&& launch, cudaStream_t s, const options& opt, double target_ms, pe_link* both = nullptr,
                    long long iters = 0) {
  event_pair ev;
  auto run = [&](long long n) {
    if (!both) return ev.time([&] { launch(n); }, s);
    both->barrier();
    const double mine = ev.time([&] { launch(n); }, s);
    const std::vector<double> all = both->allgather(mine);
    return *std::max_element(all.begin(), all.end());
  };
  if (iters <= 0) {
    run(1); // first launch of the kernel: lazy module loading must not enter the calibration
    long long n = 1;
    for (;;) {
      double ms = std::max(run(n), 1e-4);
      long long next = 0, chosen = 0;
      if (ms < target_ms / 8 && n < opt.max_iters) next = std::min(n * 8, opt.max_iters);
      else
        chosen = std::clamp<long long>(
            std::llround(double(n) * target_ms / ms), std::min(opt.min_iters, opt.max_iters), opt.max_iters);
      if (both) {
        next = both->broadcast(next);
        chosen = both->broadcast(chosen);
      }
      if (next == 0) {
        iters = chosen;
        break;
      }
      n = next;
    }
  }
  double warm_ms = run(iters); // warm-up
  // A point whose single iteration already takes 5x the target (one thread copying a MiB) gets 3 repetitions: the
  // whole suite must fit in a few minutes. PE 0 decides for all.
  int reps = opt.reps;
  bool slow = warm_ms > 5 * target_ms;
  if (both) slow = both->broadcast(slow);
  if (slow) reps = std::min(reps, 3);
  std::vector<double> us;
  us.reserve(std::size_t(reps));
  for (int r = 0; r < reps; ++r)
    us.push_back(run(iters) * 1e3 / double(iters));
  return {iters, summarize(std::move(us))};
}

// ---- data pattern and verification ----------------------------------------------------------------------------------
__host__ __device__ inline std::uint32_t pattern_word(std::size_t i, std::uint32_t seed) {
  return std::uint32_t(i) * 2654435761u + seed * 0x9E3779B9u + 1u;
}

__global__ void fill_pattern_kernel(std::uint32_t* p, std::size_t nwords, std::uint32_t seed) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < nwords;
       i += std::size_t(gridDim.x) * blockDim.x)
    p[i] = pattern_word(i, seed);
}

__global__ void
count_mismatch_kernel(const std::uint32_t* p, std::size_t nwords, std::uint32_t seed, unsigned long long* bad) {
  unsigned long long mine = 0;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < nwords;
       i += std::size_t(gridDim.x) * blockDim.x)
    mine += p[i] != pattern_word(i, seed);
  if (mine) atomicAdd(bad, mine);
}

// Fills `bytes` (a multiple of 4) of device memory with the pattern of `seed`, synchronously.
inline void fill_pattern(void* p, std::size_t bytes, std::uint32_t seed, cudaStream_t s) {
  fill_pattern_kernel<<<1024, 256, 0, s>>>(static_cast<std::uint32_t*>(p), bytes / 4, seed);
  BENCH_LAUNCH_CHECK();
  BENCH_CUDA(cudaStreamSynchronize(s));
}

// The count of a check on the GPU: `launch(bad)` enqueues on `s` a kernel that adds its wrong words to *bad (device
// memory, zeroed first); returns the sum once the kernel is done.
template <class Launch>
unsigned long long count_on_device(cudaStream_t s, Launch&& launch) {
  static unsigned long long* bad = nullptr; // one per call site, never freed (lives as long as the process)
  if (!bad) BENCH_CUDA(cudaMalloc(&bad, sizeof *bad));
  BENCH_CUDA(cudaMemsetAsync(bad, 0, sizeof *bad, s));
  launch(bad);
  BENCH_LAUNCH_CHECK();
  unsigned long long h = 0;
  BENCH_CUDA(cudaMemcpyAsync(&h, bad, sizeof h, cudaMemcpyDeviceToHost, s));
  BENCH_CUDA(cudaStreamSynchronize(s));
  return h;
}

// Blocks of 256 threads for a check of `nwords` words: one word a thread, at most 1024 blocks (they stride).
inline unsigned check_blocks(std::size_t nwords) {
  return unsigned(std::clamp<std::size_t>((nwords + 255) / 256, 1, 1024));
}

// Number of 4-byte words of the first `bytes` of `p` that differ from the pattern of `seed` (checked on the GPU).
inline unsigned long long count_mismatches(const void* p, std::size_t bytes, std::uint32_t seed, cudaStream_t s) {
  const std::size_t nwords = bytes / 4;
  return count_on_device(s, [&](unsigned long long* bad) {
    count_mismatch_kernel<<<check_blocks(nwords), 256, 0, s>>>(static_cast<const std::uint32_t*>(p), nwords, seed, bad);
  });
}

enum class direction { put, get };

// Whether this PE owns the target of one-sided point `d`: the partner of an issuer for a put, the issuer for a get.
// Either way the owner's target receives the partner's src, the pattern of seed partner() + 1.
inline bool owns_target(const context& c, direction d) {
  return d == direction::put ? !c.issuer() : c.issuer();
}

// Every PE's count of wrong words; prints VERIFY FAILED for each PE with some and sets c.rc. True when all are 0.
inline bool verify_all(context& c, unsigned long long mine, std::size_t words) {
  std::vector<unsigned long long> all = c.link.allgather(mine);
  bool ok = true;
  for (int k = 0; k < c.npes(); ++k) {
    if (all[std::size_t(k)] == 0) continue;
    ok = false;
    if (c.pe == 0)
      std::fprintf(stderr, "[pe 0] VERIFY FAILED: %s: PE %d: %llu of %zu words wrong after the copy\n", g_step, k,
                   all[std::size_t(k)], words);
  }
  if (!ok) c.rc = 1;
  return ok;
}

// Dies when a grid-wide step of the last launches timed out (its blocks were not all resident: a bug of the caps).
inline void check_steps(context& c) {
  unsigned long long flag = 0;
  BENCH_CUDA(cudaMemcpy(&flag, c.steps.counter + 1, sizeof flag, cudaMemcpyDeviceToHost));
  if (flag)
    die(1,
        "a grid-wide step waited 10 s for blocks that never arrived: the grid was larger than the resident blocks "
        "[during: %s]",
        g_step);
}

// one_sided's protocol with the target's check given: on the owner (`owner`), `clear()` enqueues the clearing of the
// target on c.stream before the point and `count()` returns its wrong words (of `words`) after it.
template <class Clear, class Count, class Launch>
std::optional<measurement> one_sided_checked(context& c, bool owner, Clear&& clear, Count&& count, std::size_t words,
                                             double target_ms, Launch&& launch) {
  if (owner) {
    clear();
    BENCH_CUDA(cudaStreamSynchronize(c.stream));
  }
  c.link.barrier();
  measurement m;
  if (c.npes() == 2) {
    if (c.pe == 0) m = measure(launch, c.stream, c.opt, target_ms);
  } else {
    m = measure(
        [&](long long n) {
          if (c.issuer()) launch(n);
        },
        c.stream, c.opt, target_ms, &c.link);
  }
  if (c.issuer()) check_steps(c);
  c.link.barrier();
  const unsigned long long bad = owner ? count() : 0;
  if (!verify_all(c, bad, words)) return std::nullopt;
  return m;
}

// A point where the issuing PEs operate and their partners wait (put_bw, get_bw, p_lat, ...). Every PE calls it with
// the same arguments except the pointers. `local_target`: where the data lands if this PE owns it (owns_target), or
// nullptr for points without a payload check; `seed`: the pattern it must then hold (normally partner() + 1). The
// owners clear it, the issuers measure (2 PEs: PE 0 alone; 4 or 8: every pair at once, in lockstep, PE 0's
// calibration for all, each launch timed by its slowest pair), the owners check the first `bytes`. Returns nothing
// (and sets c.rc) when a check fails; the measurement is PE 0's (the others get one they must ignore).
template <class Launch>
std::optional<measurement> one_sided(context& c, direction d, void* local_target, std::size_t bytes, std::uint32_t seed,
                                     double target_ms, Launch&& launch) {
  if (!local_target)
    return one_sided_checked(
        c, false, [] {}, [] { return 0ull; }, 0, target_ms, launch);
  return one_sided_checked(
      c, owns_target(c, d), [&] { BENCH_CUDA(cudaMemsetAsync(local_target, 0, bytes, c.stream)); },
      [&] { return count_mismatches(local_target, bytes, seed, c.stream); }, bytes / 4, target_ms, launch);
}

// bidir_put_bw: both PEs of every pair put `bytes` into each other at once (lockstep launches); each checks that its
// `local_target` holds its partner's pattern afterwards.
template <class Launch>
std::optional<measurement>
two_sided_bw(context& c, void* local_target, std::size_t bytes, double target_ms, Launch&& launch) {
  BENCH_CUDA(cudaMemsetAsync(local_target, 0, bytes, c.stream));
  BENCH_CUDA(cudaStreamSynchronize(c.stream));
  c.link.barrier();
  measurement m = measure(launch, c.stream, c.opt, target_ms, &c.link);
  check_steps(c);
  c.link.barrier();
  unsigned long long bad = count_mismatches(local_target, bytes, std::uint32_t(c.partner() + 1), c.stream);
  if (!verify_all(c, bad, bytes / 4)) return std::nullopt;
  return m;
}

// ---- bulk copies: the work of one iteration -------------------------------------------------------------------------
__device__ inline unsigned long long globaltimer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

constexpr unsigned long long step_timeout_ns = 10'000'000'000ull;

// The grid-wide step: every block's thread 0 counts its arrival and waits until the whole grid has arrived (`target`
// arrivals since the counter's creation), as perftest's bandwidth kernels do between iterations, so that no block
// runs ahead into an iteration whose data another block still brings into L2. A step waiting 10 s sets counter[1]
// and gives up (check_steps reports it).
__device__ inline void grid_step(unsigned long long* counter, unsigned long long target) {
  __syncthreads(); // the block has issued this iteration's copy
  if (threadIdx.x == 0) {
    atomicAdd(counter, 1ull);
    auto* seen = reinterpret_cast<volatile unsigned long long*>(counter);
    unsigned spins = 0;
    unsigned long long t0 = 0;
    while (seen[0] < target) {
      if ((++spins & 4095u) != 0) continue;
      if (seen[1] != 0) break;
      unsigned long long t = globaltimer_ns();
      if (t0 == 0) t0 = t;
      else if (t - t0 > step_timeout_ns) {
        seen[1] = 1;
        break;
      }
    }
  }
  __syncthreads();
}

// What one iteration of a bulk copy covers, the same for every implementation: block b copies bytes [b*chunk,
// (b+1)*chunk) of the iteration's slot (slot it % slots, slot_stride bytes apart: one slot, offset 0, for the L2-hot
// scopes; for *_cold, slots spanning --cold-span), then, with a counter, the grid meets in grid_step. Every block runs
// every step, also a block without bytes (sizes smaller than the grid).
struct bulk_plan {
  std::size_t bytes = 0, chunk = 0, slot_stride = 0;
  unsigned slots = 1;
  unsigned long long* counter = nullptr; // null: no grid step (one-warp and one-thread launches)
  unsigned long long base = 0;           // the counter's arrivals before this launch

  __device__ std::size_t block_offset() const { return blockIdx.x * chunk; }
  __device__ std::size_t block_bytes() const {
    const std::size_t off = block_offset();
    return off < bytes ? (chunk < bytes - off ? chunk : bytes - off) : 0;
  }
  __device__ std::size_t slot_offset(long long it) const { return std::size_t(it % slots) * slot_stride; }
  __device__ void step(long long it) const {
    if (counter) grid_step(counter, base + static_cast<unsigned long long>(it + 1) * gridDim.x);
  }
};

// Bytes per block for `bytes` split over `grid` blocks, rounded up to 16 so every chunk stays int4-aligned.
inline std::size_t chunk_bytes(std::size_t bytes, int grid) {
  std::size_t c = (bytes + std::size_t(grid) - 1) / std::size_t(grid);
  return (c + 15) / 16 * 16;
}

// The plan of `bytes` over `grid` blocks: L2-cold (`cold`) or not, with the grid step (`step`) or not. The caller sets
// `base` per launch: plan.base = c.steps.next(grid, iters).
inline bulk_plan make_plan(const context& c, std::size_t bytes, int grid, bool cold, bool step) {
  bulk_plan p;
  p.bytes = bytes;
  p.chunk = chunk_bytes(bytes, grid);
  if (cold) {
    p.slot_stride = (bytes + 4095) / 4096 * 4096;
    p.slots = unsigned(std::max<std::size_t>(1, c.opt.cold_span / p.slot_stride));
  }
  p.counter = step ? c.steps.counter : nullptr;
  return p;
}

// Launch shapes tried for grid-stepped bulk copies, the same candidates for every implementation (each reports its
// best, in the row's grid and threads): 256, 512 and 1024 threads, each with the largest grid whose blocks are all
// resident at once (the occupancy of the implementation's own kernel, divided among the `concurrent` PEs that launch
// such kernels on this GPU at the same time) and with one block per SM when that is fewer.
struct block_shape {
  int grid;
  int threads;
};
// The largest block `kernel` can be launched with (registers): shapes above it are skipped, not failed.
inline int max_block_threads(const void* kernel) {
  cudaFuncAttributes a{};
  BENCH_CUDA(cudaFuncGetAttributes(&a, kernel));
  return a.maxThreadsPerBlock;
}
inline int resident_blocks(const context& c, const void* kernel, int threads, int concurrent) {
  int per_sm = 0;
  BENCH_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0));
  return per_sm * c.sm_count / std::max(1, concurrent);
}
inline std::vector<block_shape> block_shapes(const context& c, const void* kernel, int concurrent) {
  std::vector<block_shape> v;
  const int max_threads = max_block_threads(kernel), per_sm_grid = c.sm_count / std::max(1, concurrent);
  for (int t : {256, 512, 1024}) {
    if (t > max_threads) continue;
    int cap = resident_blocks(c, kernel, t, concurrent);
    if (cap < 1) continue;
    v.push_back({cap, t});
    if (per_sm_grid >= 1 && per_sm_grid < cap) v.push_back({per_sm_grid, t});
  }
  return v;
}
// PEs of this GPU that issue one-sided points at once (one of each pair).
inline int issuers_per_device(const context& c) {
  return std::max(1, (c.pes_per_device() + 1) / 2);
}

// Keeps the best (lowest median) of several measurements of one point, remembering its shape and label.
struct best_of {
  std::optional<measurement> best;
  row_info info;
  void offer(const std::optional<measurement>& m, row_info what) {
    if (m && (!best || m->st.median_us < best->st.median_us)) {
      best = m;
      info = std::move(what);
    }
  }
};

// The scopes of put_bw / get_bw, the same in every program (rows are compared on benchmark, scope and bytes):
//   block        grid of blocks (block_shapes), each its chunk, grid-wide step after every iteration;
//   block_sync   the same with the group synchronised after every call (NVSHMEM's block calls do so themselves);
//   block_cold   block, over slots spanning --cold-span (never served by L2);
//   warp, warp_sync  one warp copies everything (warp_sync: __syncwarp / warp.sync() after every call);
//   thread       one thread copies everything;
//   stream, stream_cold  host-issued on a stream (the copy engine for raw), one call per iteration.
enum class launch_kind { block, warp, thread, stream };
struct bulk_scope {
  const char* name;
  launch_kind kind;
  bool sync, cold;
};
inline constexpr bulk_scope bulk_scopes[] = {
    {"block", launch_kind::block, false, false},     {"block_sync", launch_kind::block, true, false},
    {"block_cold", launch_kind::block, false, true}, {"warp", launch_kind::warp, false, false},
    {"warp_sync", launch_kind::warp, true, false},   {"thread", launch_kind::thread, false, false},
    {"stream", launch_kind::stream, false, false},   {"stream_cold", launch_kind::stream, false, true}};

// The sizes of a bulk scope: L2-cold ones from 1 MiB (4x steps at least), one warp or thread up to --small-max-bytes.
inline std::vector<std::size_t> bulk_sizes(const context& c, const bulk_scope& s) {
  if (s.cold)
    return sweep(std::max<std::size_t>(c.opt.min_bytes, 1 * MiB), c.opt.max_bytes, std::max(4, c.opt.sweep_factor));
  if (s.kind == launch_kind::warp || s.kind == launch_kind::thread)
    return sweep(c.opt.min_bytes, c.opt.small_max_bytes, c.opt.sweep_factor);
  return sweep(c.opt.min_bytes, c.opt.max_bytes, c.opt.sweep_factor);
}
// bidir_put_bw and the pair points at 4 or 8 PEs: from 64 KiB (below it they measure launch skew), 4x steps at least.
inline std::vector<std::size_t> pair_sizes(const context& c) {
  return sweep(std::max<std::size_t>(c.opt.min_bytes, 64 * KiB), c.opt.max_bytes, std::max(4, c.opt.sweep_factor));
}
// The grid and threads of p_rate / grid (and atomic_fetch_add_tput): 4 blocks of 256 threads per SM.
inline constexpr int rate_blocks_per_sm = 4, rate_threads = 256;

// ---- strided points: column_put_bw, tile_put_bw --------------------------------------------------------------------
// A row-major grid of 4-byte words (floats), strided_pitch words a row (8 KiB), at the start of src and dst of every
// program; the issuer puts cells of its src grid into the same cells of its partner's dst grid:
//   column_put_bw  column strided_column of rows [0, n): n words 8 KiB apart (the halo column of a 2-D stencil), n from
//                  16 to 16384 rows (bytes = 4 n: 64 B to 64 KiB);
//   tile_put_bw    the n x n tile at row 0, column strided_tile_column (256 B into the row: every row of the
//                  tile starts 16-byte aligned), n from 4 to 1024 (bytes = 4 n^2: 64 B to 4 MiB).
// Every PE first writes the pattern of seed pe + 1 into its src grid again (earlier points may have used src).
// The sizes grow by --sweep-factor. Scopes (strided_scopes): block, one block (256 and 1024 threads tried, the best
// reported); warp, one warp; each put followed by the group's synchronisation (NVSHMEM's *_block and *_warp calls
// synchronise themselves), the same cells every iteration (L2-hot: a halo exchange sends the same cells every step);
// stream, host-issued, one call per iteration (symm's stream put of the views; raw's cudaMemcpy2DAsync; NVSHMEM has no
// stream form of a strided put). The owner of the target checks every word of the rows the cells span and of the row
// after them: the pattern inside the cells, 0 outside (a copy that writes beyond them fails too).
inline constexpr std::size_t strided_pitch = 2048; // words a grid row (a power of two: the check's index arithmetic)
inline constexpr std::size_t strided_column = 1, strided_tile_column = 64;

enum class strided_kind { column, tile };
inline constexpr strided_kind strided_kinds[] = {strided_kind::column, strided_kind::tile};
inline const char* strided_name(strided_kind k) {
  return k == strided_kind::column ? "column_put_bw" : "tile_put_bw";
}

// The cells [0, rows) x [col0, col0 + cols) of the grid.
struct strided_cells {
  std::size_t rows = 0, cols = 0, col0 = 0;
  __host__ __device__ std::size_t bytes() const { return rows * cols * 4; }
  // The words the check covers: the rows the cells span and the row after them.
  __host__ __device__ std::size_t span_words() const { return (rows + 1) * strided_pitch; }
  // Word i of the grid (row-major), its row i / pitch and column i % pitch.
  __host__ __device__ bool holds(std::size_t i) const {
    const std::size_t col = i % strided_pitch;
    return i / strided_pitch < rows && col >= col0 && col < col0 + cols;
  }
};

struct strided_scope {
  const char* name;
  launch_kind kind;
};
inline constexpr strided_scope strided_scopes[] = {
    {"block", launch_kind::block}, {"warp", launch_kind::warp}, {"stream", launch_kind::stream}};
inline constexpr int strided_block_threads[] = {256, 1024};

// The cells of each size of a kind, within --min-bytes..--max-bytes and a grid of `capacity` bytes.
inline std::vector<strided_cells> strided_sizes(const context& c, strided_kind k, std::size_t capacity) {
  std::vector<strided_cells> v;
  const bool column = k == strided_kind::column;
  for (std::size_t n : column ? sweep(16, 16384, c.opt.sweep_factor) : sweep(4, 1024, c.opt.sweep_factor)) {
    const strided_cells s = column ? strided_cells{n, 1, strided_column} : strided_cells{n, n, strided_tile_column};
    if (s.bytes() >= c.opt.min_bytes && s.bytes() <= c.opt.max_bytes && s.span_words() * 4 <= capacity) v.push_back(s);
  }
  return v;
}

__global__ void
strided_mismatch_kernel(const std::uint32_t* grid, strided_cells s, std::uint32_t seed, unsigned long long* bad) {
  unsigned long long mine = 0;
  const std::size_t words = s.span_words();
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < words;
       i += std::size_t(gridDim.x) * blockDim.x)
    mine += grid[i] != (s.holds(i) ? pattern_word(i, seed) : 0u);
  if (mine) atomicAdd(bad, mine);
}

// A strided point (one_sided's protocol): the partner of the issuer owns the target grid `local_grid` (this PE's dst),
// clears the rows the cells span and the row after them, and checks them afterwards against the issuer's pattern
// (seed partner() + 1).
template <class Launch>
std::optional<measurement>
strided_one_sided(context& c, void* local_grid, const strided_cells& s, double target_ms, Launch&& launch) {
  const std::size_t span = s.span_words() * 4;
  return one_sided_checked(
      c, owns_target(c, direction::put), [&] { BENCH_CUDA(cudaMemsetAsync(local_grid, 0, span, c.stream)); },
      [&] {
        return count_on_device(c.stream, [&](unsigned long long* bad) {
          strided_mismatch_kernel<<<check_blocks(s.span_words()), 256, 0, c.stream>>>(
              static_cast<const std::uint32_t*>(local_grid), s, std::uint32_t(c.partner() + 1), bad);
        });
      },
      s.span_words(), target_ms, launch);
}

// Every strided point of an implementation (2 PEs): for each kind, scope and size, `offer(kind, scope, cells, add)`
// calls `add(launch, row_info)` once per launch shape or variant it has for the point (none: no row), each measured
// with strided_one_sided; the best of them is the row.
// `local_src` and `local_grid`: this PE's src and dst grids, `capacity` bytes each.
template <class Offer>
void strided_points(context& c, void* local_src, void* local_grid, std::size_t capacity, Offer&& offer) {
  bool any = false;
  for (strided_kind k : strided_kinds)
    for (const strided_scope& sc : strided_scopes)
      any = any || c.opt.wants(strided_name(k), sc.name);
  if (!any) return;
  set_step("%s strided points: the source pattern", c.impl.c_str());
  fill_pattern(local_src, capacity, std::uint32_t(c.pe + 1), c.stream);
  c.link.barrier();
  for (strided_kind k : strided_kinds)
    for (const strided_scope& sc : strided_scopes) {
      if (!c.opt.wants(strided_name(k), sc.name)) continue;
      for (const strided_cells& s : strided_sizes(c, k, capacity)) {
        set_step("%s %s %s %zu x %zu", c.impl.c_str(), strided_name(k), sc.name, s.rows, s.cols);
        best_of best;
        offer(k, sc, s, [&](auto launch, row_info info) {
          best.offer(strided_one_sided(c, local_grid, s, c.opt.target_ms, launch), std::move(info));
        });
        if (best.best) {
          const measurement& m = *best.best;
          c.row(strided_name(k), sc.name, s.bytes(), m.iters, m.st.median_us, m.st.min_us, m.st.p90_us, true,
                best.info);
        }
      }
    }
}

// ---- collective points ----------------------------------------------------------------------------------------------
// broadcast_bw, fcollect_bw, alltoall_bw, allreduce_bw (float sum), reduce_scatter_bw: scope "stream" (host-issued on
// a stream, one call per iteration) or "block" (device-side: one kernel per launch, one block per PE, looping over
// the calls), every PE in lockstep, at any --pes. "bytes" follows nccl-tests (algorithm
// bandwidth = bytes / time per call):
//   broadcast_bw       the vector: root's src and every dst are `bytes` (root: PE 0);
//   fcollect_bw        the gathered result: src is bytes / N per PE, dst is bytes (N blocks, PE k's in block k);
//   alltoall_bw        the per-PE buffer: src and dst are N blocks of bytes / N (block j of PE i -> block i of PE j);
//   allreduce_bw       the vector of floats: src and dst are `bytes` per PE;
//   reduce_scatter_bw  the per-PE input: src is N blocks of bytes / N floats, dst (one block, reduced) bytes / N.
// Blocks are bytes / N rounded down to 16 bytes, and the row reports N x block (exactly `bytes` for N = 2, 4, 8).
// Inputs: the data movers move 4-byte words of the pattern of seed pe + 1 (word i of PE p's src: pattern_word(i,
// p + 1)); the reductions sum floats coll_value(p, i), small integers, so that every order of summation is exact.
enum class coll_kind { broadcast, fcollect, alltoall, allreduce, reduce_scatter };
inline constexpr coll_kind coll_kinds[] = {
    coll_kind::broadcast, coll_kind::fcollect, coll_kind::alltoall, coll_kind::allreduce, coll_kind::reduce_scatter};
inline constexpr int coll_root = 0; // broadcast's root

inline const char* coll_name(coll_kind k) {
  switch (k) {
    case coll_kind::broadcast: return "broadcast_bw";
    case coll_kind::fcollect: return "fcollect_bw";
    case coll_kind::alltoall: return "alltoall_bw";
    case coll_kind::allreduce: return "allreduce_bw";
    default: return "reduce_scatter_bw";
  }
}
inline bool coll_reduces(coll_kind k) {
  return k == coll_kind::allreduce || k == coll_kind::reduce_scatter;
}

// The buffers of one collective point, per PE.
struct coll_shape {
  coll_kind kind;
  int npes = 0;
  std::size_t bytes = 0;     // the row's bytes (see above)
  std::size_t src_bytes = 0; // this PE's src
  std::size_t dst_bytes = 0; // this PE's dst
  std::size_t block = 0;     // one PE's block (fcollect: src; alltoall: one of the N; reduce_scatter: dst); else bytes
};

// The shape of `kind` at sweep size `bytes` over `npes` PEs; nullopt when a block would be smaller than 16 bytes.
inline std::optional<coll_shape> make_coll_shape(coll_kind kind, std::size_t bytes, int npes) {
  coll_shape s{kind, npes};
  std::size_t n = std::size_t(npes);
  switch (kind) {
    case coll_kind::broadcast:
    case coll_kind::allreduce: s.bytes = s.src_bytes = s.dst_bytes = s.block = bytes / 16 * 16; break;
    default:
      s.block = bytes / n / 16 * 16;
      s.bytes = s.block * n;
      s.src_bytes = kind == coll_kind::fcollect ? s.block : s.bytes;
      s.dst_bytes = kind == coll_kind::reduce_scatter ? s.block : s.bytes;
      break;
  }
  if (s.block == 0) return std::nullopt;
  return s;
}

// Float input of the reductions: PE p's element i, an integer in [0, 1024).
__host__ __device__ inline float coll_value(int pe, std::size_t i) {
  return float(((std::uint32_t(i) * 2654435761u) ^ (std::uint32_t(pe) * 0x9E3779B9u)) >> 22);
}

__global__ void coll_fill_kernel(std::uint32_t* p, std::size_t nwords, int pe, bool floats) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < nwords;
       i += std::size_t(gridDim.x) * blockDim.x) {
    if (floats) reinterpret_cast<float*>(p)[i] = coll_value(pe, i);
    else p[i] = pattern_word(i, std::uint32_t(pe + 1));
  }
}

// Counts the words of this PE's dst that differ from what the collective must have left there.
__global__ void coll_verify_kernel(const std::uint32_t* dst, coll_shape s, int pe, unsigned long long* bad) {
  const std::size_t nwords = s.dst_bytes / 4, bw = s.block / 4;
  unsigned long long mine = 0;
  for (std::size_t j = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; j < nwords;
       j += std::size_t(gridDim.x) * blockDim.x) {
    std::uint32_t want = 0;
    switch (s.kind) {
      case coll_kind::broadcast: want = pattern_word(j, std::uint32_t(coll_root + 1)); break;
      case coll_kind::fcollect: want = pattern_word(j % bw, std::uint32_t(j / bw + 1)); break;
      case coll_kind::alltoall: want = pattern_word(std::size_t(pe) * bw + j % bw, std::uint32_t(j / bw + 1)); break;
      default: {
        std::size_t i = s.kind == coll_kind::allreduce ? j : std::size_t(pe) * bw + j;
        float sum = coll_value(0, i);
        for (int p = 1; p < s.npes; ++p)
          sum += coll_value(p, i);
        want = __float_as_uint(sum);
        break;
      }
    }
    mine += dst[j] != want;
  }
  if (mine) atomicAdd(bad, mine);
}

// One way of running a collective point (an implementation may offer several and keep the best, as block_shapes).
struct coll_variant {
  row_info info;                         // the row's shape and note when this variant is the best
  std::function<void(long long)> launch; // enqueues `n` calls on the context's stream
  std::function<void()> after = {};      // optional, after the timed launches (e.g. an error-flag check)
};

// The sweep of collective `kind` for one implementation. `src` / `dst`: this PE's part of the symmetric buffers the
// implementation's calls use, `capacity` bytes each (the input is written into src here, over the whole capacity).
// `variants(shape)` returns the ways to run one size. Every variant of every size: all PEs clear their dst, then are
// timed in lockstep (measure with the link), then every PE checks its whole dst on the GPU; a mismatch on any PE
// prints VERIFY FAILED, drops the row and makes the program exit 1. The row is the best verified variant.
// `scope`: "stream" (sizes up to --coll-max-bytes) or "block" (up to --coll-block-max-bytes).
template <class Variants>
void collective_sweep(context& c, coll_kind kind, const char* scope, void* src, void* dst, std::size_t capacity,
                      Variants&& variants) {
  const char* name = coll_name(kind);
  if (!c.opt.wants(name, scope)) return;
  const bool block = std::string_view(scope) == "block";
  set_step("%s %s %s input", c.impl.c_str(), name, scope);
  coll_fill_kernel<<<1024, 256, 0, c.stream>>>(static_cast<std::uint32_t*>(src), capacity / 4, c.pe, coll_reduces(kind));
  BENCH_LAUNCH_CHECK();
  BENCH_CUDA(cudaStreamSynchronize(c.stream));
  c.link.barrier();
  for (std::size_t bytes : sweep(std::max<std::size_t>(c.opt.min_bytes, 1 * KiB),
                                 block ? c.opt.coll_block_max_bytes : c.opt.coll_max_bytes, c.opt.sweep_factor)) {
    std::optional<coll_shape> shape = make_coll_shape(kind, bytes, c.npes());
    if (!shape || shape->src_bytes > capacity || shape->dst_bytes > capacity) continue;
    best_of best;
    std::vector<coll_variant> vs = variants(*shape);
    for (coll_variant& v : vs) {
      set_step("%s %s %s %zu bytes, %d PEs (%s)", c.impl.c_str(), name, scope, shape->bytes, c.npes(),
               v.info.note.c_str());
      BENCH_CUDA(cudaMemsetAsync(dst, 0, shape->dst_bytes, c.stream));
      BENCH_CUDA(cudaStreamSynchronize(c.stream));
      c.link.barrier(); // every dst is clear before any PE's first call may store into it
      measurement m = measure(v.launch, c.stream, c.opt, c.opt.target_ms, &c.link);
      if (v.after) v.after();
      // Once this PE's last call has completed, its dst must hold the result: checked before any further barrier.
      const std::size_t nwords = shape->dst_bytes / 4;
      const unsigned long long mine = count_on_device(c.stream, [&](unsigned long long* bad) {
        coll_verify_kernel<<<check_blocks(nwords), 256, 0, c.stream>>>(
            static_cast<const std::uint32_t*>(dst), *shape, c.pe, bad);
      });
      if (!verify_all(c, mine, nwords)) continue;
      best.offer(m, v.info);
    }
    if (best.best) {
      const measurement& m = *best.best;
      c.row(name, scope, shape->bytes, m.iters, m.st.median_us, m.st.min_us, m.st.p90_us, true, best.info);
      if (vs.size() > 1)
        c.note("%s %s %zu, %d PEs: best %s", name, scope, shape->bytes, c.npes(), best.info.note.c_str());
    }
  }
}

// ---- halo_step: one step of an iterative program, eager or replayed from a CUDA graph -------------------------------
// The step: a put of `bytes` from this PE's src into its right neighbour's dst (PE (pe + 1) % n), then a barrier of
// all PEs, both ordered on the stream (the halo exchange of a stencil, the smallest step that needs both). Scope
// "eager": the step's calls are issued again for every iteration; scope "graph": they are recorded once into a CUDA
// graph (stream capture, thread-local mode, on a stream of the harness's), which every iteration launches
// (cudaGraphLaunch), so the host's per-call work is gone and only the graph's launch remains. The implementation gives
// `enqueue(stream, bytes)`, the step's calls on a stream; both scopes run that same function, so they do the same work
// (its barrier must count its rounds in device memory, or the replays would all wait for the recorded round). Per-step
// time, every PE in lockstep, at any PE count; afterwards every PE checks that its dst holds its left neighbour's src
// (the pattern of seed left + 1) and the row is dropped, VERIFY FAILED, when one does not.
inline constexpr std::size_t halo_step_sizes[] = {8, 4 * KiB, 64 * KiB};

class recorded_step {
public:
  template <class Enqueue>
  recorded_step(Enqueue& enqueue, std::size_t bytes) {
    BENCH_CUDA(cudaStreamCreateWithFlags(&capture_, cudaStreamNonBlocking));
    BENCH_CUDA(cudaStreamBeginCapture(capture_, cudaStreamCaptureModeThreadLocal));
    enqueue(capture_, bytes);
    BENCH_CUDA(cudaStreamEndCapture(capture_, &graph_));
    BENCH_CUDA(cudaGraphInstantiate(&exec_, graph_, 0));
  }
  ~recorded_step() {
    cudaGraphExecDestroy(exec_);
    cudaGraphDestroy(graph_);
    cudaStreamDestroy(capture_);
  }
  recorded_step(const recorded_step&) = delete;
  recorded_step& operator=(const recorded_step&) = delete;
  // Uploads the graph on `s` and waits: the first launch would do it otherwise, inside the timing.
  void upload(cudaStream_t s) {
    BENCH_CUDA(cudaGraphUpload(exec_, s));
    BENCH_CUDA(cudaStreamSynchronize(s));
  }
  void launch(cudaStream_t s) { BENCH_CUDA(cudaGraphLaunch(exec_, s)); }

private:
  cudaStream_t capture_{};
  cudaGraph_t graph_{};
  cudaGraphExec_t exec_{};
};

template <class Enqueue>
void halo_step_points(context& c, void* local_dst, Enqueue&& enqueue) {
  const int left = (c.pe + c.npes() - 1) % c.npes();
  for (const char* scope : {"eager", "graph"}) {
    if (!c.opt.wants("halo_step", scope)) continue;
    const bool graph = std::string_view(scope) == "graph";
    for (std::size_t bytes : halo_step_sizes) {
      set_step("%s halo_step %s %zu bytes, %d PEs", c.impl.c_str(), scope, bytes, c.npes());
      BENCH_CUDA(cudaMemsetAsync(local_dst, 0, bytes, c.stream));
      BENCH_CUDA(cudaStreamSynchronize(c.stream));
      std::optional<recorded_step> step;
      if (graph) {
        step.emplace(enqueue, bytes);
        step->upload(c.stream);
      }
      c.link.barrier(); // every dst is clear before any PE's first put
      measurement m = measure(
          [&](long long n) {
            for (long long i = 0; i < n; ++i)
              if (graph) step->launch(c.stream);
              else enqueue(c.stream, bytes);
          },
          c.stream, c.opt, c.opt.lat_target_ms, &c.link);
      BENCH_CUDA(cudaStreamSynchronize(c.stream));
      c.link.barrier();
      const unsigned long long bad = count_mismatches(local_dst, bytes, std::uint32_t(left + 1), c.stream);
      if (!verify_all(c, bad, bytes / 4)) continue;
      c.row("halo_step", scope, bytes, m.iters, m.st.median_us, m.st.min_us, m.st.p90_us, false,
            {0, 0, graph ? "one cudaGraphLaunch per step" : "the calls per step"});
    }
  }
}

} // namespace bench
