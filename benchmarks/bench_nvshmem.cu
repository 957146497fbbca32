// bench_nvshmem.cu — the NVSHMEM 3.4.5 side of the comparison suite, each point through NVSHMEM's best call for it.
// Rows: impl "nvshmem". Same harness, same points, same row format as bench_raw.cu; the collective points use the
// nvshmemx_*_on_stream collectives on NVSHMEM_TEAM_WORLD (scope "stream"; without NVLS, which stays off here, they run
// one CTA, and their rows say so in the note column) and the device-side nvshmemx_*_block collectives (scope "block",
// one block per PE, beside symm's device form).
//
// N PEs by fork (bench_common.cuh, --pes, default 2), bootstrapped with a unique id: PE 0 calls
// nvshmemx_get_uniqueid and sends it to every PE over the harness's sockets, all call
// nvshmemx_set_attr_uniqueid_args + nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID). With N > 2 only the collective
// points run.
// Needs -rdc=true and libnvshmem_device.a linked exactly once (see meson.build).
//
// Fairness: bulk transfers try both the blocking and the _nbi form of each call (+ one nvshmem_quiet at the end of
// the kernel) and, for block scopes, the same grid x block shapes and the same grid-wide step per iteration as the
// other implementations (bench::bulk_plan); the row is the best. NVSHMEM's block and warp calls synchronise the group
// at entry and exit, so its block_sync / warp_sync rows (where symm and raw add group.sync()) repeat its block / warp
// measurement, said in the note column.
// Environment set before the fork unless already set (see docs/benchmarks.md and the project's DESIGN.md):
//   NVSHMEM_REMOTE_TRANSPORT=none      one host, P2P only: no IB / UCX probing
//   NVSHMEM_DISABLE_NVLS=1             no multicast objects (not lent, and not what is measured)
//   NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=1   full API with several PEs on one GPU under MPS
//   NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME=lo                 the UID bootstrap over loopback (all PEs on this host)
//   NVSHMEM_SYMMETRIC_SIZE=2 x max-bytes + 256 MiB
#include <nvshmem.h>
#include <nvshmemx.h>

#include "bench_common.cuh"

namespace {

using namespace bench;

// ---- kernels
// ------------------------------------------------------------------------------------------------------------
enum scope_id : int { scope_block = 0, scope_warp = 1, scope_thread = 2 };

// put_bw / get_bw / bidir_put_bw: iteration `it` moves the block's chunk of the plan's slot (bench::bulk_plan) through
// the scope's call, then block scopes take the grid-wide step (as perftest's shmem_put_bw); one quiet at the end.
// NVSHMEM's block and warp calls synchronise the group at their entry and exit: its *_sync rows are these rows.
template <bool Put, bool Nbi, int Scope>
__global__ void __launch_bounds__(1024) nv_bulk(char* dst, const char* src, bulk_plan plan, int peer, long long iters) {
  const std::size_t n = plan.block_bytes(), off = plan.block_offset();
  for (long long it = 0; it < iters; ++it) {
    const std::size_t at = plan.slot_offset(it) + off;
    char* d = dst + at;
    const char* s = src + at;
    if (n != 0) { // uniform across the block: the block- and warp-scoped calls need all their threads
      if constexpr (Scope == scope_block) {
        if constexpr (Put && Nbi) nvshmemx_putmem_nbi_block(d, s, n, peer);
        else if constexpr (Put) nvshmemx_putmem_block(d, s, n, peer);
        else if constexpr (Nbi) nvshmemx_getmem_nbi_block(d, s, n, peer);
        else nvshmemx_getmem_block(d, s, n, peer);
      } else if constexpr (Scope == scope_warp) {
        if constexpr (Put && Nbi) nvshmemx_putmem_nbi_warp(d, s, n, peer);
        else if constexpr (Put) nvshmemx_putmem_warp(d, s, n, peer);
        else if constexpr (Nbi) nvshmemx_getmem_nbi_warp(d, s, n, peer);
        else nvshmemx_getmem_warp(d, s, n, peer);
      } else {
        if constexpr (Put && Nbi) nvshmem_putmem_nbi(d, s, n, peer);
        else if constexpr (Put) nvshmem_putmem(d, s, n, peer);
        else if constexpr (Nbi) nvshmem_getmem_nbi(d, s, n, peer);
        else nvshmem_getmem(d, s, n, peer);
      }
    }
    plan.step(it);
  }
  __syncthreads();
  if (threadIdx.x == 0) nvshmem_quiet();
}

using bulk_fn = void (*)(char*, const char*, bulk_plan, int, long long);

template <bool Put, bool Nbi>
bulk_fn bulk_kernel(int scope) {
  switch (scope) {
    case scope_block: return nv_bulk<Put, Nbi, scope_block>;
    case scope_warp: return nv_bulk<Put, Nbi, scope_warp>;
    default: return nv_bulk<Put, Nbi, scope_thread>;
  }
}
bulk_fn bulk_kernel(bool put, bool nbi, int scope) {
  if (put) return nbi ? bulk_kernel<true, true>(scope) : bulk_kernel<true, false>(scope);
  return nbi ? bulk_kernel<false, true>(scope) : bulk_kernel<false, false>(scope);
}

// p_lat: nvshmem_int_p + nvshmem_quiet per operation, as NVSHMEM's perftest shmem_p_latency.
__global__ void nv_p_lat(int* dst, int mask, int peer, long long iters) {
  for (long long i = 0; i < iters; ++i) {
    nvshmem_int_p(dst + (i & mask), int(i), peer);
    nvshmem_quiet();
  }
}

// p_rate: every thread nvshmem_int_p's its 4-byte word to the peer, `iters` times (as perftest's shmem_p_bw), one quiet
// at the end. The word is the put pattern, so the target can be verified.
__global__ void nv_p_rate(int* dst, int peer, long long iters) {
  const unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
  const int v = int(pattern_word(tid, 1));
  for (long long i = 0; i < iters; ++i)
    nvshmem_int_p(dst + tid, v, peer);
  __syncthreads();
  if (threadIdx.x == 0) nvshmem_quiet();
}

// g_lat: dependent nvshmem_int_g over g_spread_words lines, more than L1 holds (over P2P nvshmem_int_g is a plain
// load, which L1 would otherwise serve; the next address depends on the value: `mask` is 0 at run time).
__global__ void nv_g_lat(const int* src, int mask, int peer, long long iters, int* sink) {
  int v = 0;
  for (long long i = 0; i < iters; ++i)
    v = nvshmem_int_g(src + (i & (g_spread_words - 1)) * g_spread_stride + (v & mask), peer);
  *sink = v;
}

// atomic_fetch_add_lat: dependent nvshmem_int_atomic_fetch_add over lat_spread_words words (as raw's).
__global__ void nv_atomic_lat(int* dst, int mask, int peer, long long iters, int* sink) {
  int old = 0;
  for (long long i = 0; i < iters; ++i)
    old = nvshmem_int_atomic_fetch_add(dst + (i % lat_spread_words) * lat_spread_stride + (old & mask), 1, peer);
  *sink = old;
}

__global__ void nv_atomic_tput(int* dst, int peer, long long iters, int* sink) {
  unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
  int acc = 0;
  for (long long i = 0; i < iters; ++i)
    acc += nvshmem_int_atomic_fetch_add(dst + tid, 1, peer);
  sink[tid] = acc;
}

// pingpong: nvshmem_int_p of the sequence number + nvshmem_int_wait_until, full round trips (PE 2k with 2k+1).
__global__ void nv_pingpong(int* flag, int pe, int base, long long iters) {
  int peer = pe ^ 1;
  for (long long i = 1; i <= iters; ++i) {
    int v = base + int(i);
    if (pe % 2 == 0) {
      nvshmem_int_p(flag, v, peer);
      nvshmem_int_wait_until(flag, NVSHMEM_CMP_GE, v);
    } else {
      nvshmem_int_wait_until(flag, NVSHMEM_CMP_GE, v);
      nvshmem_int_p(flag, v, peer);
    }
  }
}

// pingpong_signal: nvshmem_putmem_signal of 8 bytes (signal set) + nvshmem_signal_wait_until.
__global__ void
nv_pingpong_signal(std::uint64_t* sig, char* data, const char* src, int pe, std::uint64_t base, long long iters) {
  int peer = 1 - pe;
  for (long long i = 1; i <= iters; ++i) {
    std::uint64_t v = base + static_cast<std::uint64_t>(i);
    if (pe != 0) nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, v);
    nvshmem_putmem_signal(data, src, 8, sig, v, NVSHMEM_SIGNAL_SET, peer);
    if (pe == 0) nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, v);
  }
}

template <bool Block>
__global__ void nv_barrier(long long iters) {
  for (long long i = 0; i < iters; ++i) {
    if constexpr (Block) nvshmemx_barrier_all_block();
    else nvshmem_barrier_all();
  }
}

// Device-side collectives, scope "block": one block per PE calls NVSHMEM's nvshmemx_*_block collective on
// NVSHMEM_TEAM_WORLD `iters` times (launched with nvshmemx_collective_launch). nelem as the on-stream calls'.
constexpr int coll_block_threads = 1024;
template <coll_kind Kind>
__global__ void __launch_bounds__(coll_block_threads)
    nv_block_collective(char* dst, const char* src, std::size_t nelem, long long iters) {
  auto* fdst = reinterpret_cast<float*>(dst);
  const auto* fsrc = reinterpret_cast<const float*>(src);
  for (long long i = 0; i < iters; ++i) {
    // The char form: nvshmemx.h declares nvshmemx_broadcastmem_block without its root argument in 3.4.5.
    if constexpr (Kind == coll_kind::broadcast)
      nvshmemx_char_broadcast_block(NVSHMEM_TEAM_WORLD, dst, src, nelem, coll_root);
    else if constexpr (Kind == coll_kind::fcollect) nvshmemx_fcollectmem_block(NVSHMEM_TEAM_WORLD, dst, src, nelem);
    else if constexpr (Kind == coll_kind::alltoall) nvshmemx_alltoallmem_block(NVSHMEM_TEAM_WORLD, dst, src, nelem);
    else if constexpr (Kind == coll_kind::allreduce)
      nvshmemx_float_sum_reduce_block(NVSHMEM_TEAM_WORLD, fdst, fsrc, nelem);
    else nvshmemx_float_sum_reducescatter_block(NVSHMEM_TEAM_WORLD, fdst, fsrc, nelem);
  }
}

// ---- set-up
// -----------------------------------------------------------------------------------------------------------
void set_env_default(const char* name, const std::string& value) {
  if (::setenv(name, value.c_str(), 0) != 0) die(3, "setenv %s: %s", name, std::strerror(errno));
}

void init_nvshmem(context& c) {
  set_step("NVSHMEM unique-id bootstrap");
  nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
  if (c.pe == 0 && nvshmemx_get_uniqueid(&id) != 0) die(2, "nvshmemx_get_uniqueid failed");
  id = c.link.broadcast(id);
  nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
  if (nvshmemx_set_attr_uniqueid_args(c.pe, c.link.npes(), &id, &attr) != 0)
    die(2, "nvshmemx_set_attr_uniqueid_args failed");
  set_step("nvshmemx_init_attr");
  if (nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr) != 0) die(2, "nvshmemx_init_attr failed");
  if (nvshmem_my_pe() != c.pe || nvshmem_n_pes() != c.link.npes())
    die(2, "NVSHMEM numbered this process PE %d of %d, the harness PE %d of %d", nvshmem_my_pe(), nvshmem_n_pes(), c.pe,
        c.link.npes());
}

template <class T = char>
T* sym_alloc(std::size_t bytes) {
  void* p = nvshmem_malloc(bytes);
  if (!p)
    die(2, "nvshmem_malloc(%zu) returned null: NVSHMEM_SYMMETRIC_SIZE=%s too small for --max-bytes?", bytes,
        std::getenv("NVSHMEM_SYMMETRIC_SIZE"));
  return static_cast<T*>(p);
}

struct ctrl_layout {
  static constexpr std::size_t pp_flag = 0, signal = 128, payload = 192, payload_src = 256;
  static constexpr std::size_t atomics = 1 * MiB, atomics_bytes = 3 * MiB, bytes = 4 * MiB;
};

// column_put_bw / tile_put_bw (bench::strided_points): a column is one strided put, nvshmemx_float_iput_block / _warp
// (element strides on both sides; no _nbi form exists); a tile is a put per row (NVSHMEM has no 2-D put), each row by
// a warp (nvshmemx_float_put[_nbi]_warp, the warps of a block taking rows in turn) or by the whole block
// (nvshmemx_float_put[_nbi]_block). The block and warp calls synchronise their group themselves; the warp-per-row
// variant of a block synchronises the block after every tile.
enum class tile_rows { per_warp, per_block };
template <strided_kind Kind, int Scope, tile_rows Rows, bool Nbi>
__global__ void __launch_bounds__(1024)
    nv_strided_put(float* dst, const float* src, strided_cells s, int peer, long long iters) {
  constexpr auto pitch = static_cast<std::ptrdiff_t>(strided_pitch);
  for (long long it = 0; it < iters; ++it) {
    if constexpr (Kind == strided_kind::column) {
      if constexpr (Scope == scope_block)
        nvshmemx_float_iput_block(dst + s.col0, src + s.col0, pitch, pitch, s.rows, peer);
      else nvshmemx_float_iput_warp(dst + s.col0, src + s.col0, pitch, pitch, s.rows, peer);
    } else if constexpr (Rows == tile_rows::per_block) {
      for (std::size_t r = 0; r < s.rows; ++r) {
        float* d = dst + r * strided_pitch + s.col0;
        const float* v = src + r * strided_pitch + s.col0;
        if constexpr (Nbi) nvshmemx_float_put_nbi_block(d, v, s.cols, peer);
        else nvshmemx_float_put_block(d, v, s.cols, peer);
      }
    } else {
      const unsigned warp = Scope == scope_block ? threadIdx.x / 32 : 0;
      const unsigned warps = Scope == scope_block ? blockDim.x / 32 : 1;
      for (std::size_t r = warp; r < s.rows; r += warps) {
        float* d = dst + r * strided_pitch + s.col0;
        const float* v = src + r * strided_pitch + s.col0;
        if constexpr (Nbi) nvshmemx_float_put_nbi_warp(d, v, s.cols, peer);
        else nvshmemx_float_put_warp(d, v, s.cols, peer);
      }
      if constexpr (Scope == scope_block) __syncthreads();
    }
    asm volatile("" ::: "memory"); // keep every iteration
  }
  nvshmem_quiet();
}

struct buffers {
  char* src;  // symmetric, max bytes, pattern of seed pe + 1
  char* dst;  // symmetric, max bytes
  char* ctrl; // symmetric, flags and atomics
  int* sink;  // local, sinks of the latency / throughput kernels
};

// One bulk row over the scope `sc` (bench::bulk_scopes), measured by `run(launch)` (one_sided, or two_sided_bw for
// bidir): the best of the blocking and the _nbi form and, for block scopes, of the shapes; `concurrent`: PEs
// launching grid-stepped kernels on this GPU at once. A *_sync scope gets the rows of its free-running twin (the
// calls synchronise the group themselves), measured once: `twin` names the scope to emit them under too.
template <class Run>
void bulk_row(context& c, const buffers& b, const char* name, direction d, const bulk_scope& sc, std::size_t bytes,
              int concurrent, Run&& run, double payload_factor = 1.0, const char* twin = nullptr) {
  set_step("nvshmem %s %s %zu bytes", name, sc.name, bytes);
  const bool put = d == direction::put;
  const int peer = c.partner();
  best_of best;
  if (sc.kind == launch_kind::stream) {
    const bulk_plan plan = make_plan(c, bytes, 1, sc.cold, false);
    best.offer(run([&](long long n) {
                 for (long long i = 0; i < n; ++i) {
                   const std::size_t at = std::size_t(i % plan.slots) * plan.slot_stride;
                   if (put) nvshmemx_putmem_on_stream(b.dst + at, b.src + at, bytes, peer, c.stream);
                   else nvshmemx_getmem_on_stream(b.dst + at, b.src + at, bytes, peer, c.stream);
                 }
               }),
               {0, 0, put ? "nvshmemx_putmem_on_stream" : "nvshmemx_getmem_on_stream", payload_factor});
  } else {
    const int sid = sc.kind == launch_kind::block ? scope_block
                  : sc.kind == launch_kind::warp  ? scope_warp
                                                  : scope_thread;
    for (bool nbi : {false, true}) {
      bulk_fn k = bulk_kernel(put, nbi, sid);
      std::vector<block_shape> shapes =
          sid == scope_block  ? block_shapes(c, reinterpret_cast<const void*>(k), concurrent)
          : sid == scope_warp ? std::vector<block_shape>{{1, 32}}
                              : std::vector<block_shape>{{1, 1}};
      for (block_shape s : shapes) {
        bulk_plan plan = make_plan(c, bytes, s.grid, sc.cold, sid == scope_block);
        best.offer(run([&](long long n) {
                     // Only grid-stepped launches count arrivals: a warp or thread launch advancing the base
                     // made the next block launch wait for arrivals that never came.
                     if (plan.counter != nullptr) plan.base = c.steps.next(s.grid, n);
                     k<<<s.grid, s.threads, 0, c.stream>>>(b.dst, b.src, plan, peer, n);
                     BENCH_LAUNCH_CHECK(); // a launch that failed would leave the step counter's arrivals behind its
                                           // base
                   }),
                   {s.grid, s.threads, nbi ? "nbi" : "blocking", payload_factor});
      }
    }
  }
  if (best.best) {
    const measurement& m = *best.best;
    c.row(name, sc.name, bytes, m.iters, m.st.median_us, m.st.min_us, m.st.p90_us, true, best.info);
    if (twin) {
      row_info same = best.info;
      same.note += " (the calls sync the group: the same measurement as " + std::string(sc.name) + ")";
      c.row(name, twin, bytes, m.iters, m.st.median_us, m.st.min_us, m.st.p90_us, true, same);
    }
  }
}

// put_bw / get_bw at every scope (2 PEs), or put_bw / block between the pairs (4 and 8 PEs).
void bulk(context& c, const buffers& b, direction d, const bulk_scope& sc) {
  const char* name = d == direction::put ? "put_bw" : "get_bw";
  if (sc.sync) return; // emitted with the free-running twin (bulk_row's `twin`)
  std::string twin = std::string(sc.name) + "_sync";
  const bool has_twin = !sc.cold && (sc.kind == launch_kind::block || sc.kind == launch_kind::warp);
  const bool want = c.opt.wants(name, sc.name), want_twin = has_twin && c.pairwise() && c.opt.wants(name, twin);
  if (!want && !want_twin) return;
  const auto seed = std::uint32_t(c.partner() + 1);
  for (std::size_t bytes : c.pairwise() ? bulk_sizes(c, sc) : pair_sizes(c))
    bulk_row(
        c, b, name, d, sc, bytes, issuers_per_device(c),
        [&](auto launch) { return one_sided(c, d, b.dst, bytes, seed, c.opt.target_ms, launch); }, 1.0,
        want_twin ? twin.c_str() : nullptr);
}

// bidir_put_bw / block: both PEs put into each other at once; gbps counts both directions.
void bidir(context& c, const buffers& b) {
  const bulk_scope sc = bulk_scopes[0];
  if (!c.opt.wants("bidir_put_bw", sc.name)) return;
  for (std::size_t bytes : pair_sizes(c))
    bulk_row(
        c, b, "bidir_put_bw", direction::put, sc, bytes, c.pes_per_device(),
        [&](auto launch) { return two_sided_bw(c, b.dst, bytes, c.opt.target_ms, launch); }, 2.0);
}

// column_put_bw / tile_put_bw (bench::strided_points): nv_strided_put on one block (256 and 1024 threads) or one warp,
// the tile's variants (a warp or the block per row, blocking or _nbi) each measured and the best reported (the note
// names it). No stream scope: NVSHMEM has no stream form of a strided put.
void strided(context& c, const buffers& b, std::size_t region) {
  const int peer = c.partner();
  auto* dst = reinterpret_cast<float*>(b.dst);
  const auto* src = reinterpret_cast<const float*>(b.src);
  using kernel_fn = void (*)(float*, const float*, strided_cells, int, long long);
  strided_points(c, b.src, b.dst, region, [&](strided_kind k, const strided_scope& sc, const strided_cells& s, auto add) {
    if (sc.kind == launch_kind::stream) return;
    const bool block = sc.kind == launch_kind::block;
    struct variant {
      kernel_fn kernel;
      const char* note;
    };
    // Short names for the kernel's template arguments, so that each variant fits a line with its note.
    constexpr auto column = strided_kind::column, tile = strided_kind::tile;
    constexpr auto per_warp = tile_rows::per_warp, per_block = tile_rows::per_block;
    std::vector<variant> variants;
    if (k == column && block)
      variants = {{nv_strided_put<column, scope_block, per_warp, false>, "nvshmemx_float_iput_block"}};
    else if (k == column)
      variants = {{nv_strided_put<column, scope_warp, per_warp, false>, "nvshmemx_float_iput_warp"}};
    else if (block)
      variants = {{nv_strided_put<tile, scope_block, per_warp, false>, "nvshmemx_float_put_warp per row"},
                  {nv_strided_put<tile, scope_block, per_warp, true>, "nvshmemx_float_put_nbi_warp per row"},
                  {nv_strided_put<tile, scope_block, per_block, false>, "nvshmemx_float_put_block per row"},
                  {nv_strided_put<tile, scope_block, per_block, true>, "nvshmemx_float_put_nbi_block per row"}};
    else
      variants = {{nv_strided_put<tile, scope_warp, per_warp, false>, "nvshmemx_float_put_warp per row"},
                  {nv_strided_put<tile, scope_warp, per_warp, true>, "nvshmemx_float_put_nbi_warp per row"}};
    for (const variant& v : variants) {
      if (!block) {
        add([&](long long n) { v.kernel<<<1, 32, 0, c.stream>>>(dst, src, s, peer, n); }, {1, 32, v.note});
        continue;
      }
      for (int threads : strided_block_threads)
        add([&](long long n) { v.kernel<<<1, threads, 0, c.stream>>>(dst, src, s, peer, n); }, {1, threads, v.note});
    }
  });
}

void latency_points(context& c, const buffers& b) {
  auto emit =
      [&](const char* name, const char* scope, std::size_t bytes, const std::optional<measurement>& m, bool bw) {
        if (m) c.row(name, scope, bytes, m->iters, m->st.median_us, m->st.min_us, m->st.p90_us, bw);
      };
  int peer = c.partner();
  int* atomics = reinterpret_cast<int*>(b.ctrl + ctrl_layout::atomics);
  if (c.opt.wants("p_lat", "thread")) {
    set_step("nvshmem p_lat");
    emit("p_lat", "thread", 4,
         one_sided(c, direction::put, nullptr, 4, 0, c.opt.lat_target_ms,
                   [&](long long n) { nv_p_lat<<<1, 1, 0, c.stream>>>(atomics, 0, peer, n); }),
         false);
  }
  if (c.opt.wants("g_lat", "thread")) {
    set_step("nvshmem g_lat");
    const int* src = reinterpret_cast<const int*>(b.src);
    emit("g_lat", "thread", 4,
         one_sided(c, direction::get, nullptr, 4, 0, c.opt.lat_target_ms,
                   [&](long long n) { nv_g_lat<<<1, 1, 0, c.stream>>>(src, 0, peer, n, b.sink); }),
         false);
  }
  if (c.opt.wants("atomic_fetch_add_lat", "thread")) {
    set_step("nvshmem atomic_fetch_add_lat");
    emit("atomic_fetch_add_lat", "thread", 4,
         one_sided(c, direction::put, nullptr, 4, 0, c.opt.lat_target_ms,
                   [&](long long n) { nv_atomic_lat<<<1, 1, 0, c.stream>>>(atomics, 0, peer, n, b.sink); }),
         false);
  }
  if (c.opt.wants("atomic_fetch_add_tput", "grid")) {
    set_step("nvshmem atomic_fetch_add_tput");
    int grid = rate_blocks_per_sm * c.sm_count, threads = rate_threads;
    std::size_t nthreads = std::size_t(grid) * threads;
    if (nthreads * 4 > ctrl_layout::atomics_bytes) die(2, "atomic area too small for %zu threads", nthreads);
    emit("atomic_fetch_add_tput", "grid", nthreads * 4,
         one_sided(c, direction::put, nullptr, 4, 0, c.opt.target_ms,
                   [&](long long n) { nv_atomic_tput<<<grid, threads, 0, c.stream>>>(atomics, peer, n, b.sink); }),
         true);
  }
  for (const char* scope : {"grid", "warp"}) {
    if (!c.opt.wants("p_rate", scope)) continue;
    set_step("nvshmem p_rate %s", scope);
    const bool grid_wide = std::string_view(scope) == "grid";
    const int grid = grid_wide ? rate_blocks_per_sm * c.sm_count : 1, threads = grid_wide ? rate_threads : 32;
    const std::size_t bytes = std::size_t(grid) * std::size_t(threads) * 4;
    int* dst = reinterpret_cast<int*>(b.dst);
    auto m = one_sided(c, direction::put, b.dst, bytes, std::uint32_t(c.partner() + 1), c.opt.target_ms,
                       [&](long long n) { nv_p_rate<<<grid, threads, 0, c.stream>>>(dst, peer, n); });
    if (m) c.row("p_rate", scope, bytes, m->iters, m->st.median_us, m->st.min_us, m->st.p90_us, true, {grid, threads});
  }
}

// Two-sided kernels go through nvshmemx_collective_launch, as NVSHMEM requires for kernels that synchronise PEs.
void collective_launch(const void* fn, int threads, void** args, cudaStream_t s) {
  int st = nvshmemx_collective_launch(fn, dim3(1), dim3(unsigned(threads)), args, 0, s);
  if (st != 0) die(2, "nvshmemx_collective_launch failed: %d [during: %s]", st, g_step);
}

void two_sided_points(context& c, const buffers& b) {
  auto emit = [&](const char* name, const char* scope, std::size_t bytes, const measurement& m) {
    c.row(name, scope, bytes, m.iters, m.st.median_us, m.st.min_us, m.st.p90_us, false);
  };
  int pe = c.pe;
  if (c.opt.wants("pingpong", "thread")) {
    set_step("nvshmem pingpong");
    int* flag = reinterpret_cast<int*>(b.ctrl + ctrl_layout::pp_flag);
    int seq = 0;
    measurement m = measure(
        [&](long long n) {
          void* args[] = {&flag, &pe, &seq, &n};
          collective_launch(reinterpret_cast<const void*>(nv_pingpong), 1, args, c.stream);
          seq += int(n);
        },
        c.stream, c.opt, c.opt.lat_target_ms, &c.link);
    emit("pingpong", "thread", 4, m);
    if (m.st.median_us > 100)
      c.note("pingpong takes %.0f us per round trip: the two PEs' kernels time-slice (no MPS?)", m.st.median_us);
  }
  if (!c.pairwise()) return; // the rest are 2-PE points
  if (c.opt.wants("pingpong_signal", "thread")) {
    set_step("nvshmem pingpong_signal");
    auto* sig = reinterpret_cast<std::uint64_t*>(b.ctrl + ctrl_layout::signal);
    char* data = b.ctrl + ctrl_layout::payload;
    const char* src = b.ctrl + ctrl_layout::payload_src;
    std::uint64_t seq = 0;
    measurement m = measure(
        [&](long long n) {
          void* args[] = {&sig, &data, &src, &pe, &seq, &n};
          collective_launch(reinterpret_cast<const void*>(nv_pingpong_signal), 1, args, c.stream);
          seq += static_cast<std::uint64_t>(n);
        },
        c.stream, c.opt, c.opt.lat_target_ms, &c.link);
    emit("pingpong_signal", "thread", 8, m);
  }
  for (const char* scope : {"thread", "block"}) {
    if (!c.opt.wants("barrier_lat", scope)) continue;
    set_step("nvshmem barrier_lat %s", scope);
    bool block = std::string_view(scope) == "block";
    measurement m = measure(
        [&](long long n) {
          void* args[] = {&n};
          collective_launch(block ? reinterpret_cast<const void*>(nv_barrier<true>)
                                  : reinterpret_cast<const void*>(nv_barrier<false>),
                            block ? 128 : 1, args, c.stream);
        },
        c.stream, c.opt, c.opt.lat_target_ms, &c.link);
    emit("barrier_lat", scope, 0, m);
  }
}

// The collective points (bench::collective_sweep): NVSHMEM's on-stream collectives on NVSHMEM_TEAM_WORLD, one call
// per iteration. The byte forms for the data movers (nelem = bytes; fcollect and alltoall: per PE block), float sums
// for the reductions (reducescatter: nreduce = dst floats, src holds N blocks of them).
constexpr std::size_t reduce_scatter_max_bytes = 64 * MiB;

// halo_step (bench::halo_step_points): NVSHMEM's on-stream put and barrier, as its users write a stream step.
void step_points(context& c, const buffers& b) {
  const int right = (c.pe + 1) % c.npes();
  halo_step_points(c, b.dst, [&b, right](cudaStream_t s, std::size_t bytes) {
    nvshmemx_putmem_on_stream(b.dst, b.src, bytes, right, s);
    nvshmemx_barrier_all_on_stream(s);
  });
}

void collective_points(context& c, const buffers& b, std::size_t region) {
  for (coll_kind kind : coll_kinds) {
    collective_sweep(c, kind, "stream", b.src, b.dst, region, [&](const coll_shape& sh) {
      const char* what = "";
      std::function<int()> call;
      void* dst = b.dst;
      const void* src = b.src;
      float* fdst = reinterpret_cast<float*>(b.dst);
      const float* fsrc = reinterpret_cast<const float*>(b.src);
      cudaStream_t s = c.stream;
      switch (kind) {
        case coll_kind::broadcast:
          what = "nvshmemx_broadcastmem_on_stream";
          call = [=] { return nvshmemx_broadcastmem_on_stream(NVSHMEM_TEAM_WORLD, dst, src, sh.bytes, coll_root, s); };
          break;
        case coll_kind::fcollect:
          what = "nvshmemx_fcollectmem_on_stream";
          call = [=] { return nvshmemx_fcollectmem_on_stream(NVSHMEM_TEAM_WORLD, dst, src, sh.block, s); };
          break;
        case coll_kind::alltoall:
          what = "nvshmemx_alltoallmem_on_stream";
          call = [=] { return nvshmemx_alltoallmem_on_stream(NVSHMEM_TEAM_WORLD, dst, src, sh.block, s); };
          break;
        case coll_kind::allreduce:
          what = "nvshmemx_float_sum_reduce_on_stream";
          call = [=] { return nvshmemx_float_sum_reduce_on_stream(NVSHMEM_TEAM_WORLD, fdst, fsrc, sh.bytes / 4, s); };
          break;
        case coll_kind::reduce_scatter:
          what = "nvshmemx_float_sum_reducescatter_on_stream";
          // NVSHMEM 3.4.5 on the H200 never returned from this call with 128 MiB per PE (2 and 4 PEs, 20 s timeout),
          // and the killed PEs left the MPS daemon refusing clients: larger sizes are skipped, and said so.
          if (sh.src_bytes > reduce_scatter_max_bytes) {
            c.note("%s %zu bytes: skipped (above %zu bytes it did not return on the H200)", what, sh.bytes,
                   reduce_scatter_max_bytes);
            return std::vector<coll_variant>{};
          }
          call = [=] {
            return nvshmemx_float_sum_reducescatter_on_stream(NVSHMEM_TEAM_WORLD, fdst, fsrc, sh.block / 4, s);
          };
          break;
      }
      // Without NVLS (off on these machines) NVSHMEM's on-stream collectives run a kernel of one CTA: labelled so.
      return std::vector<coll_variant>{
          {row_info{1, 0, std::string(what) + " (1 CTA: NVLS off)"}, [call, what](long long n) {
             for (long long i = 0; i < n; ++i)
               if (int st = call(); st != 0) die(2, "%s returned %d [during: %s]", what, st, g_step);
           }}};
    });
    collective_sweep(c, kind, "block", b.src, b.dst, region, [&](const coll_shape& sh) {
      // nelem: bytes for the data movers (fcollect / alltoall: one PE's block), floats for the reductions.
      std::size_t nelem =
          kind == coll_kind::broadcast   ? sh.bytes
          : kind == coll_kind::allreduce ? sh.bytes / 4
          : kind == coll_kind::reduce_scatter
              ? sh.block / 4
              : sh.block;
      const void* fn =
          kind == coll_kind::broadcast  ? reinterpret_cast<const void*>(nv_block_collective<coll_kind::broadcast>)
          : kind == coll_kind::fcollect ? reinterpret_cast<const void*>(nv_block_collective<coll_kind::fcollect>)
          : kind == coll_kind::alltoall ? reinterpret_cast<const void*>(nv_block_collective<coll_kind::alltoall>)
          : kind == coll_kind::allreduce
              ? reinterpret_cast<const void*>(nv_block_collective<coll_kind::allreduce>)
              : reinterpret_cast<const void*>(nv_block_collective<coll_kind::reduce_scatter>);
      char* dst = b.dst;
      const char* src = b.src;
      cudaStream_t st = c.stream;
      return std::vector<coll_variant>{
          {row_info{1, coll_block_threads, "nvshmemx_*_block"}, [=](long long n) mutable {
             void* args[] = {&dst, &src, &nelem, &n};
             int rc = nvshmemx_collective_launch(fn, dim3(1), dim3(coll_block_threads), args, 0, st);
             if (rc != 0) die(2, "nvshmemx_collective_launch failed: %d [during: %s]", rc, g_step);
           }}};
    });
  }
}

} // namespace

int main(int argc, char** argv) {
  // Environment first: start() forks, and each PE initialises NVSHMEM from it.
  options pre = parse_options(argc, argv);
  const std::size_t region = region_bytes(pre);
  set_env_default("NVSHMEM_REMOTE_TRANSPORT", "none");
  set_env_default("NVSHMEM_DISABLE_NVLS", "1");
  set_env_default("NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "1");
  set_env_default("NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME", "lo");
  set_env_default("NVSHMEM_SYMMETRIC_SIZE", std::to_string(2 * region + ctrl_layout::bytes + 256 * MiB));
  // The block reduce_scatter stages every PE's input in the team's scratch, which must hold twice the input (its
  // default, 512 KiB, asserts above 256 KiB of input); it comes from the heap's 256 MiB of slack, once per team.
  set_env_default("NVSHMEM_REDUCE_SCRATCH_SIZE", std::to_string(2 * pre.coll_block_max_bytes + MiB));

  context c = start(argc, argv, "nvshmem");
  init_nvshmem(c);
  c.note("NVSHMEM %d.%d.%d (headers), NVSHMEM_SYMMETRIC_SIZE=%s", NVSHMEM_VENDOR_MAJOR_VERSION,
         NVSHMEM_VENDOR_MINOR_VERSION, NVSHMEM_VENDOR_PATCH_VERSION, std::getenv("NVSHMEM_SYMMETRIC_SIZE"));

  set_step("symmetric allocation");
  buffers b{sym_alloc(region), sym_alloc(region), sym_alloc(ctrl_layout::bytes), nullptr};
  BENCH_CUDA(cudaMalloc(&b.sink, ctrl_layout::atomics_bytes));
  BENCH_CUDA(cudaMemsetAsync(b.dst, 0, region, c.stream));
  BENCH_CUDA(cudaMemsetAsync(b.ctrl, 0, ctrl_layout::bytes, c.stream));
  fill_pattern(b.src, region, std::uint32_t(c.pe + 1), c.stream);
  c.link.barrier();

  if (c.pairwise()) { // 2-PE points
    for (direction d : {direction::put, direction::get})
      for (const bulk_scope& sc : bulk_scopes)
        bulk(c, b, d, sc);
    bidir(c, b);
    latency_points(c, b);
    strided(c, b, region);
  } else if (c.pairs()) { // the pair points at 4 or 8 PEs, all pairs at once
    bulk(c, b, direction::put, bulk_scopes[0]);
  }
  if (c.pairs()) two_sided_points(c, b);
  step_points(c, b);
  collective_points(c, b, region); // last: they overwrite src

  set_step("teardown");
  BENCH_CUDA(cudaDeviceSynchronize());
  c.link.barrier();
  nvshmem_free(b.ctrl);
  nvshmem_free(b.dst);
  nvshmem_free(b.src);
  BENCH_CUDA(cudaFree(b.sink));
  nvshmem_finalize();
  return c.finish();
}
