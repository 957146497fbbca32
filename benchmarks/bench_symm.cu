// bench_symm.cu — the symm implementation of the comparison suite: the same points as bench_raw.cu, written the way a
// symm user writes them (symm::array, symm::remote, group-scoped put/get, symm::wait_until, device barriers, the stream
// and the device forms of the collectives). Rows: impl "symm".
// The harness forks the PEs (bench::start, --pes N, default 2); each then joins one symm world of N PEs through
// symm::launch's mechanism. With N > 2 the pair points (PE 2k with 2k+1) and the collective points run.
#include <symm/symm.hpp>

#include <cooperative_groups.h>
#include <cuda/atomic>

#include <optional>
#include <random>
#include <vector>

#include "bench_common.cuh"

namespace {

using namespace bench;
namespace cg = cooperative_groups;

// ---- kernels ------------------------------------------------------------------------------------------------------
// put_bw / get_bw / bidir_put_bw: iteration `it` moves the block's chunk of the plan's slot (bench::bulk_plan) with the
// group's put or get, then the *_sync scopes synchronise the group and block scopes take the grid-wide step; warp and
// thread scopes use one warp / one thread for the whole buffer (a plan of one block, no step).
template <bool Put, bool Sync, class Group>
__device__ void move_chunks(const Group& g, symm::array_ref<char> dst, symm::array_ref<char> src, int peer,
                            const bulk_plan& plan, long long iters) {
  const std::size_t n = plan.block_bytes(), off = plan.block_offset();
  for (long long it = 0; it < iters; ++it) {
    const std::size_t at = plan.slot_offset(it) + off;
    if (n != 0) {
      if constexpr (Put) symm::put(g, symm::remote(dst, peer).subspan(at, n), src.local().subspan(at, n));
      else symm::get(g, dst.local().subspan(at, n), symm::remote(src, peer).subspan(at, n));
    }
    if constexpr (Sync) g.sync();
    plan.step(it);
    asm volatile("" ::: "memory"); // keep every iteration, as bench_raw does
  }
}

template <bool Put, bool Sync>
__global__ void __launch_bounds__(1024)
    block_copy(symm::array_ref<char> dst, symm::array_ref<char> src, int peer, bulk_plan plan, long long iters) {
  move_chunks<Put, Sync>(cg::this_thread_block(), dst, src, peer, plan, iters);
  symm::quiet();
}

template <bool Put, bool Sync>
__global__ void warp_copy(symm::array_ref<char> dst, symm::array_ref<char> src, int peer, bulk_plan plan,
                          long long iters) {
  move_chunks<Put, Sync>(cg::tiled_partition<32>(cg::this_thread_block()), dst, src, peer, plan, iters);
  symm::quiet();
}

template <bool Put>
__global__ void
thread_copy(symm::array_ref<char> dst, symm::array_ref<char> src, int peer, bulk_plan plan, long long iters) {
  move_chunks<Put, false>(symm::this_thread(), dst, src, peer, plan, iters);
  symm::quiet();
}

// p_lat: one remote element stored, then quiet(), per iteration (as NVSHMEM's shmem_p_latency).
__global__ void p_lat(symm::array_ref<int> target, int peer, int mask, long long iters) {
  for (long long i = 0; i < iters; ++i) {
    symm::remote(target, peer)[static_cast<std::size_t>(i & mask)] = static_cast<int>(i);
    symm::quiet();
  }
}

// p_rate: every thread stores its 4-byte element on the peer, `iters` times (message rate, as perftest's shmem_p_bw),
// one quiet at the end. The element is the put pattern, so the target can be verified.
__global__ void p_rate(symm::array_ref<int> target, int peer, long long iters) {
  const unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
  const int v = static_cast<int>(pattern_word(tid, 1));
  auto element = symm::remote(target, peer)[tid];
  for (long long i = 0; i < iters; ++i) {
    element = v;
    asm volatile("" ::: "memory"); // one store per iteration, as bench_raw
  }
  symm::quiet();
}

// g_lat: dependent single-element gets over g_spread_words lines, more than L1 holds, as raw's and NVSHMEM's (the
// next index depends on the value: mask is 0 at run time).
__global__ void g_lat(symm::array_ref<int> source, int peer, int mask, long long iters, int* sink) {
  int v = 0;
  auto remote = symm::remote(source, peer);
  for (long long i = 0; i < iters; ++i)
    v = remote[static_cast<std::size_t>((i & (g_spread_words - 1)) * g_spread_stride + (v & mask))];
  *sink = v;
}

// pingpong: a relaxed atomic store of the sequence number into the partner's flag, answered the same way; the waiting
// side waits on its own flag with symm::wait_until (acquire polls, as nvshmem_int_wait_until and raw's).
__global__ void pingpong(symm::array_ref<int> flag, int peer, bool issuer, int base, long long iters) {
  auto theirs = symm::remote(flag, peer)[0];
  int& mine = flag.local()[0];
  for (long long i = 1; i <= iters; ++i) {
    int v = base + static_cast<int>(i);
    if (issuer) {
      theirs.store(v, cuda::memory_order_relaxed);
      (void) symm::wait_until(mine, symm::cmp::ge, v);
    } else {
      (void) symm::wait_until(mine, symm::cmp::ge, v);
      theirs.store(v, cuda::memory_order_relaxed);
    }
  }
}

// pingpong_signal: put_signal of an 8-byte payload from a local source word (data, then the signal with release
// order), answered the same way; the waiting side waits on its own signal (acquire). One round trip per iteration. The
// source is not rewritten in the loop, as in NVSHMEM's kernel (a store the put then loads back costs ~0.3 us a round
// trip: raw's thread_staged row).
__global__ void pingpong_signal(symm::array_ref<std::uint64_t> payload, symm::signal_ref sig, int pe,
                                std::uint64_t base, long long iters) {
  const int peer = 1 - pe;
  auto thread = symm::this_thread();
  const std::uint64_t* out = payload.local().data() + 1; // the word put; the peer's word 0 receives it
  // The peer's views, made once: made in the loop, each would reread the peer table after every acquire of the wait.
  const auto to = symm::remote(payload, peer).first(1);
  const auto their_signal = symm::remote(sig, peer);
  for (long long i = 1; i <= iters; ++i) {
    const std::uint64_t v = base + static_cast<std::uint64_t>(i);
    if (pe != 0) symm::signal_wait_until(sig, symm::cmp::ge, v);
    symm::put_signal(thread, to, cuda::std::span<const std::uint64_t, 1>(out, 1), their_signal, v,
                     symm::signal_op::set);
    if (pe == 0) symm::signal_wait_until(sig, symm::cmp::ge, v);
  }
}

// atomic_fetch_add_lat: dependent fetch-adds on peer words (relaxed, as atomicAdd_system) over lat_spread_words words,
// as raw's, one thread.
__global__ void atomic_lat(symm::array_ref<int> target, int peer, int mask, long long iters, int* sink) {
  int old = 0;
  auto remote = symm::remote(target, peer);
  for (long long i = 0; i < iters; ++i) {
    const auto index = static_cast<std::size_t>((i % lat_spread_words) * lat_spread_stride + (old & mask));
    old = remote[index].fetch_add(1, cuda::memory_order_relaxed);
  }
  *sink = old;
}

// atomic_fetch_add_tput: every thread of a full grid fetch-adds its own peer word, `iters` times.
__global__ void atomic_tput(symm::array_ref<int> target, int peer, long long iters, int* sink) {
  const unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
  auto word = symm::remote(target, peer)[tid];
  int acc = 0;
  for (long long i = 0; i < iters; ++i)
    acc += word.fetch_add(1, cuda::memory_order_relaxed);
  sink[tid] = acc;
}

// barrier_lat: symm's device barrier (barrier_session::barrier(): quiet and sync, as nvshmem_barrier_all), one
// thread or one block per PE.
template <class Scope>
__global__ void barrier_lat(symm::world_ref w, long long iters) {
  Scope scope = [] {
    if constexpr (std::is_same_v<Scope, symm::single_thread>) return symm::this_thread();
    else return cg::this_thread_block();
  }();
  symm::barrier_session<Scope> barrier(scope, w, 1);
  for (long long i = 0; i < iters; ++i)
    barrier.barrier();
}

// column_put_bw / tile_put_bw (bench::strided_points): a put of a column or a tile of the grid between symm's views,
// the group synchronised after every put, as a symm user writes it: the views made once, a symm::submdspan of the
// peer's grid and of the local one.
using grid_ref = symm::mdarray_ref<float, cuda::std::dextents<int, 2>>;
template <strided_kind Kind>
__host__ __device__ auto cells_of(const auto& grid, const strided_cells& s) {
  const cuda::std::pair<int, int> rows{0, static_cast<int>(s.rows)};
  if constexpr (Kind == strided_kind::column) return symm::submdspan(grid, rows, static_cast<int>(s.col0));
  else
    return symm::submdspan(grid, rows,
                           cuda::std::pair<int, int>{static_cast<int>(s.col0), static_cast<int>(s.col0 + s.cols)});
}

template <strided_kind Kind, class Group>
__device__ void put_cells(const Group& g, grid_ref dst, grid_ref src, int peer, const strided_cells& s,
                          long long iters) {
  const auto to = cells_of<Kind>(symm::remote(dst, peer), s);
  const auto from = cells_of<Kind>(src.local(), s);
  for (long long it = 0; it < iters; ++it) {
    symm::put(g, to, from);
    g.sync();
    asm volatile("" ::: "memory"); // keep every iteration, as bench_raw does
  }
  symm::quiet();
}

template <strided_kind Kind>
__global__ void __launch_bounds__(1024)
    block_put_cells(grid_ref dst, grid_ref src, int peer, strided_cells s, long long iters) {
  put_cells<Kind>(cg::this_thread_block(), dst, src, peer, s, iters);
}
template <strided_kind Kind>
__global__ void warp_put_cells(grid_ref dst, grid_ref src, int peer, strided_cells s, long long iters) {
  put_cells<Kind>(cg::tiled_partition<32>(cg::this_thread_block()), dst, src, peer, s, iters);
}

struct state {
  symm::world* world;
  symm::array<char>* src;
  symm::array<char>* dst;
  symm::array<int>* words;
  symm::signal* signal;
  int* sink;
};

// One bulk row over the scope `sc` (bench::bulk_scopes), measured by `run(launch)` (one_sided, or two_sided_bw for
// bidir), the best of the shapes; `concurrent`: PEs launching grid-stepped kernels on this GPU at once.
template <class Run>
void bulk_row(context& c, state& s, const char* name, direction d, const bulk_scope& sc, std::size_t bytes,
              int concurrent, Run&& run, double payload_factor = 1.0) {
  set_step("symm %s %s %zu bytes", name, sc.name, bytes);
  const bool put = d == direction::put;
  const int peer = c.partner();
  symm::array_ref<char> dst = *s.dst, src = *s.src;
  best_of best;
  if (sc.kind == launch_kind::block) {
    using kernel_fn = void (*)(symm::array_ref<char>, symm::array_ref<char>, int, bulk_plan, long long);
    kernel_fn k = put ? (sc.sync ? block_copy<true, true> : block_copy<true, false>)
                      : (sc.sync ? block_copy<false, true> : block_copy<false, false>);
    for (block_shape shape : block_shapes(c, reinterpret_cast<const void*>(k), concurrent)) {
      bulk_plan plan = make_plan(c, bytes, shape.grid, sc.cold, true);
      best.offer(run([&](long long n) {
                   plan.base = c.steps.next(shape.grid, n);
                   k<<<shape.grid, shape.threads, 0, c.stream>>>(dst, src, peer, plan, n);
                   BENCH_LAUNCH_CHECK(); // a launch that failed would leave the step counter's arrivals behind its base
                 }),
                 {shape.grid, shape.threads, "", payload_factor});
    }
  } else if (sc.kind == launch_kind::stream) {
    const bulk_plan plan = make_plan(c, bytes, 1, sc.cold, false);
    std::vector<symm::future<>> pending;
    best.offer(
        run([&](long long n) {
          pending.clear();
          pending.reserve(static_cast<std::size_t>(n));
          for (long long i = 0; i < n; ++i) {
            const std::size_t at = std::size_t(i % plan.slots) * plan.slot_stride;
            if (put)
              pending.push_back(
                  symm::put(c.stream, symm::remote(dst, peer).subspan(at, bytes), src.local().subspan(at, bytes)));
            else
              pending.push_back(
                  symm::get(c.stream, dst.local().subspan(at, bytes), symm::remote(src, peer).subspan(at, bytes)));
          }
        }),
        {0, 0, "symm::put(stream)", payload_factor});
    pending.clear();
  } else {
    const bool warp = sc.kind == launch_kind::warp;
    const bulk_plan plan = make_plan(c, bytes, 1, sc.cold, false);
    using kernel_fn = void (*)(symm::array_ref<char>, symm::array_ref<char>, int, bulk_plan, long long);
    kernel_fn k = warp ? (put ? (sc.sync ? warp_copy<true, true> : warp_copy<true, false>)
                              : (sc.sync ? warp_copy<false, true> : warp_copy<false, false>) )
                       : (put ? thread_copy<true> : thread_copy<false>);
    const int threads = warp ? 32 : 1;
    best.offer(run([&](long long n) { k<<<1, threads, 0, c.stream>>>(dst, src, peer, plan, n); }),
               {1, threads, "", payload_factor});
  }
  if (best.best) {
    const measurement& m = *best.best;
    c.row(name, sc.name, bytes, m.iters, m.st.median_us, m.st.min_us, m.st.p90_us, true, best.info);
  }
}

// put_bw / get_bw at every scope (2 PEs), or put_bw / block between the pairs (4 and 8 PEs).
void bulk(context& c, state& s, direction d, const bulk_scope& sc) {
  const char* name = d == direction::put ? "put_bw" : "get_bw";
  if (!c.opt.wants(name, sc.name)) return;
  void* landing = s.dst->local().data();
  const auto seed = std::uint32_t(c.partner() + 1);
  for (std::size_t bytes : c.pairwise() ? bulk_sizes(c, sc) : pair_sizes(c))
    bulk_row(c, s, name, d, sc, bytes, issuers_per_device(c),
             [&](auto launch) { return one_sided(c, d, landing, bytes, seed, c.opt.target_ms, launch); });
}

// bidir_put_bw / block: both PEs put into each other at once; gbps counts both directions.
void bidir(context& c, state& s) {
  const bulk_scope sc = bulk_scopes[0];
  if (!c.opt.wants("bidir_put_bw", sc.name)) return;
  void* landing = s.dst->local().data();
  for (std::size_t bytes : pair_sizes(c))
    bulk_row(
        c, s, "bidir_put_bw", direction::put, sc, bytes, c.pes_per_device(),
        [&](auto launch) { return two_sided_bw(c, landing, bytes, c.opt.target_ms, launch); }, 2.0);
}

// column_put_bw / tile_put_bw (bench::strided_points): symm's device put of the views on one block (256 and 1024
// threads) or one warp; scope stream: symm::put(stream, ...) of the views, one call per iteration.
void strided(context& c, state& s) {
  const int peer = c.partner();
  const auto rows = static_cast<int>(s.dst->size() / (strided_pitch * sizeof(float)));
  const grid_ref::mapping_type mapping(cuda::std::dextents<int, 2>(rows, static_cast<int>(strided_pitch)));
  const std::size_t words = static_cast<std::size_t>(rows) * strided_pitch;
  const grid_ref dst(symm::array_cast<float>(symm::array_ref<char>(*s.dst)).subarray(0, words), mapping);
  const grid_ref src(symm::array_cast<float>(symm::array_ref<char>(*s.src)).subarray(0, words), mapping);
  std::vector<symm::future<>> pending;
  strided_points(
      c, s.src->local().data(), s.dst->local().data(), words * sizeof(float),
      [&](strided_kind k, const strided_scope& sc, const strided_cells& cells, auto add) {
        const bool column = k == strided_kind::column;
        if (sc.kind == launch_kind::stream) {
          auto stream_put = [&](auto to, auto from) {
            add(
                [&, to, from](long long n) {
                  pending.clear();
                  pending.reserve(static_cast<std::size_t>(n));
                  for (long long i = 0; i < n; ++i)
                    pending.push_back(symm::put(c.stream, to, from));
                },
                {0, 0, "symm::put(stream)"});
          };
          if (column)
            stream_put(cells_of<strided_kind::column>(symm::remote(dst, peer), cells),
                       cells_of<strided_kind::column>(src.local(), cells));
          else
            stream_put(cells_of<strided_kind::tile>(symm::remote(dst, peer), cells),
                       cells_of<strided_kind::tile>(src.local(), cells));
          pending.clear();
          return;
        }
        using kernel_fn = void (*)(grid_ref, grid_ref, int, strided_cells, long long);
        if (sc.kind == launch_kind::warp) {
          kernel_fn k_warp = column ? warp_put_cells<strided_kind::column> : warp_put_cells<strided_kind::tile>;
          add([&](long long n) { k_warp<<<1, 32, 0, c.stream>>>(dst, src, peer, cells, n); }, {1, 32});
          return;
        }
        kernel_fn k_block = column ? block_put_cells<strided_kind::column> : block_put_cells<strided_kind::tile>;
        for (int threads : strided_block_threads)
          add([&](long long n) { k_block<<<1, threads, 0, c.stream>>>(dst, src, peer, cells, n); }, {1, threads});
      });
}

void latency_points(context& c, state& s) {
  auto emit = [&](const char* name, const char* scope, std::size_t bytes, const std::optional<measurement>& m) {
    if (m) c.row(name, scope, bytes, m->iters, m->st.median_us, m->st.min_us, m->st.p90_us, false);
  };
  const int peer = c.partner();
  symm::array_ref<int> words = *s.words;
  // The second half of words: atomic_lat's spread (the first holds p_lat's words and pingpong's flag and payload).
  symm::array_ref<int> atomic_words = words.subarray(words.size() / 2, words.size() / 2);
  symm::array_ref<char> src_bytes = *s.src;
  if (c.opt.wants("p_lat", "thread")) {
    set_step("symm p_lat");
    emit("p_lat", "thread", 4, one_sided(c, direction::put, nullptr, 4, 0, c.opt.lat_target_ms, [&](long long n) {
           p_lat<<<1, 1, 0, c.stream>>>(words, peer, 0, n);
         }));
  }
  if (c.opt.wants("g_lat", "thread")) {
    set_step("symm g_lat");
    // The source words: the first ints of src (any value: only the dependency chain matters).
    auto src_words = symm::array_cast<int>(src_bytes);
    emit("g_lat", "thread", 4, one_sided(c, direction::get, nullptr, 4, 0, c.opt.lat_target_ms, [&](long long n) {
           g_lat<<<1, 1, 0, c.stream>>>(src_words, peer, 0, n, s.sink);
         }));
  }
  if (c.opt.wants("atomic_fetch_add_lat", "thread")) {
    set_step("symm atomic_fetch_add_lat");
    emit("atomic_fetch_add_lat", "thread", 4,
         one_sided(c, direction::put, nullptr, 4, 0, c.opt.lat_target_ms, [&](long long n) {
           atomic_lat<<<1, 1, 0, c.stream>>>(atomic_words, peer, 0, n, s.sink);
         }));
  }
  if (c.opt.wants("atomic_fetch_add_tput", "grid")) {
    set_step("symm atomic_fetch_add_tput");
    const int grid = rate_blocks_per_sm * c.sm_count, threads = rate_threads;
    const std::size_t nthreads = static_cast<std::size_t>(grid) * threads;
    // One word per thread on the peer, in dst; the per-thread sums land in src (this PE's part, device memory).
    auto counters = symm::array_cast<int>(symm::array_ref<char>(*s.dst)).subarray(0, nthreads);
    int* sinks = reinterpret_cast<int*>(s.src->local().data());
    if (s.src->size() < nthreads * sizeof(int)) die(2, "src too small for %zu atomic sinks", nthreads);
    auto m = one_sided(c, direction::put, nullptr, 4, 0, c.opt.target_ms, [&](long long n) {
      atomic_tput<<<grid, threads, 0, c.stream>>>(counters, peer, n, sinks);
    });
    if (m)
      c.row("atomic_fetch_add_tput", "grid", nthreads * 4, m->iters, m->st.median_us, m->st.min_us, m->st.p90_us, true,
            {grid, threads});
  }
  for (const char* scope : {"grid", "warp"}) {
    if (!c.opt.wants("p_rate", scope)) continue;
    set_step("symm p_rate %s", scope);
    const bool grid_wide = std::string_view(scope) == "grid";
    const int grid = grid_wide ? rate_blocks_per_sm * c.sm_count : 1, threads = grid_wide ? rate_threads : 32;
    const std::size_t elements = static_cast<std::size_t>(grid) * static_cast<std::size_t>(threads);
    auto target = symm::array_cast<int>(symm::array_ref<char>(*s.dst)).subarray(0, elements);
    auto m = one_sided(c, direction::put, s.dst->local().data(), elements * 4, std::uint32_t(c.partner() + 1),
                       c.opt.target_ms, [&](long long n) { p_rate<<<grid, threads, 0, c.stream>>>(target, peer, n); });
    if (m)
      c.row("p_rate", scope, elements * 4, m->iters, m->st.median_us, m->st.min_us, m->st.p90_us, true,
            {grid, threads});
  }
}

void two_sided_points(context& c, state& s) {
  auto emit = [&](const char* name, const char* scope, std::size_t bytes, const measurement& m) {
    c.row(name, scope, bytes, m.iters, m.st.median_us, m.st.min_us, m.st.p90_us, false);
  };
  symm::array_ref<int> words = *s.words;
  // A flag of its own, 64 words into the words array (p_lat writes the first ones), and the payload words of
  // pingpong_signal after it.
  symm::array_ref<int> flag = words.subarray(64, 1);
  auto payload = symm::array_cast<std::uint64_t>(words.subarray(128, 4));
  if (c.opt.wants("pingpong", "thread")) {
    set_step("symm pingpong");
    int seq = 0;
    measurement m = measure(
        [&](long long n) {
          pingpong<<<1, 1, 0, c.stream>>>(flag, c.partner(), c.issuer(), seq, n);
          seq += static_cast<int>(n);
        },
        c.stream, c.opt, c.opt.lat_target_ms, &c.link);
    emit("pingpong", "thread", 4, m);
  }
  if (!c.pairwise()) return; // the rest are 2-PE points
  if (c.opt.wants("pingpong_signal", "thread")) {
    set_step("symm pingpong_signal");
    std::uint64_t seq = 0;
    symm::signal_ref sig = *s.signal;
    measurement m = measure(
        [&](long long n) {
          pingpong_signal<<<1, 1, 0, c.stream>>>(payload, sig, c.pe, seq, n);
          seq += static_cast<std::uint64_t>(n);
        },
        c.stream, c.opt, c.opt.lat_target_ms, &c.link);
    emit("pingpong_signal", "thread", 8, m);
  }
  symm::world_ref w = *s.world;
  if (c.opt.wants("barrier_lat", "thread")) {
    set_step("symm barrier_lat thread");
    emit("barrier_lat", "thread", 0,
         measure([&](long long n) { barrier_lat<symm::single_thread><<<1, 1, 0, c.stream>>>(w, n); }, c.stream, c.opt,
                 c.opt.lat_target_ms, &c.link));
  }
  if (c.opt.wants("barrier_lat", "block")) {
    set_step("symm barrier_lat block");
    emit("barrier_lat", "block", 0,
         measure([&](long long n) { barrier_lat<cg::thread_block><<<1, 128, 0, c.stream>>>(w, n); }, c.stream, c.opt,
                 c.opt.lat_target_ms, &c.link));
  }
}

// Device-side collectives, scope "block": one block per PE calls symm's device form `iters` times on channel 1 (the
// data movers on 4-byte words, the reductions on floats).
constexpr int coll_block_threads = 1024; // as NVSHMEM's *_block collectives in bench_nvshmem
template <coll_kind Kind>
__global__ void __launch_bounds__(coll_block_threads)
    block_collective(symm::team_ref team, symm::array_ref<std::uint32_t> wdst, symm::array_ref<std::uint32_t> wsrc,
                     symm::array_ref<float> fdst, symm::array_ref<float> fsrc, long long iters) {
  auto block = cg::this_thread_block();
  for (long long i = 0; i < iters; ++i) {
    if constexpr (Kind == coll_kind::broadcast) symm::broadcast(block, team, wdst, wsrc, coll_root, 1);
    else if constexpr (Kind == coll_kind::fcollect) symm::fcollect(block, team, wdst, wsrc, 1);
    else if constexpr (Kind == coll_kind::alltoall) symm::alltoall(block, team, wdst, wsrc, 1);
    else if constexpr (Kind == coll_kind::allreduce) symm::allreduce(block, team, fdst, fsrc, symm::plus{}, 1);
    else symm::reduce_scatter(block, team, fdst, fsrc, symm::plus{}, 1);
  }
}

//! halo_step (bench::halo_step_points): symm's stream forms, put into the right neighbour and a barrier of the world
//! team; the futures are dropped, as a step on a stream does (they do not wait when destroyed).
void step_points(context& c, state& s) {
  const int right = (c.pe + 1) % c.npes();
  symm::team team = s.world->team();
  symm::array_ref<char> src = *s.src, dst = *s.dst;
  halo_step_points(c, dst.local().data(), [&, right](cudaStream_t st, std::size_t bytes) {
    (void) symm::put(st, symm::remote(dst, right).first(bytes), src.local().first(bytes));
    (void) symm::barrier_all(st, team);
  });
}

//! The collective points (bench::collective_sweep: broadcast_bw, fcollect_bw, alltoall_bw, allreduce_bw,
//! reduce_scatter_bw): scope "stream", symm's stream form on the world team, one call per iteration, a future
//! collected per call; scope "block", symm's device form in one block per PE (block_collective); every PE in lockstep.
//! Views are sub-arrays of src / dst (array_cast to 4-byte words: uint32_t for the data movers, float for the sums).
void collective_points(context& c, state& s) {
  symm::team team = s.world->team();
  symm::array_ref<char> src_bytes = *s.src, dst_bytes = *s.dst;
  auto words_src = symm::array_cast<std::uint32_t>(src_bytes), words_dst = symm::array_cast<std::uint32_t>(dst_bytes);
  auto floats_src = symm::array_cast<float>(src_bytes), floats_dst = symm::array_cast<float>(dst_bytes);
  std::vector<symm::future<>> pending;
  for (coll_kind kind : coll_kinds) {
    collective_sweep(
        c, kind, "stream", s.src->local().data(), s.dst->local().data(), s.src->size(), [&](const coll_shape& sh) {
          const std::size_t ns = sh.src_bytes / 4, nd = sh.dst_bytes / 4;
          auto wsrc = words_src.subarray(0, ns), wdst = words_dst.subarray(0, nd);
          auto fsrc = floats_src.subarray(0, ns), fdst = floats_dst.subarray(0, nd);
          std::function<void()> call;
          switch (kind) {
            case coll_kind::broadcast:
              call = [&, wsrc, wdst] { pending.push_back(symm::broadcast(c.stream, team, wdst, wsrc, coll_root)); };
              break;
            case coll_kind::fcollect:
              call = [&, wsrc, wdst] { pending.push_back(symm::fcollect(c.stream, team, wdst, wsrc)); };
              break;
            case coll_kind::alltoall:
              call = [&, wsrc, wdst] { pending.push_back(symm::alltoall(c.stream, team, wdst, wsrc)); };
              break;
            case coll_kind::allreduce:
              call = [&, fsrc, fdst] { pending.push_back(symm::allreduce(c.stream, team, fdst, fsrc, symm::plus{})); };
              break;
            case coll_kind::reduce_scatter:
              call = [&, fsrc, fdst] {
                pending.push_back(symm::reduce_scatter(c.stream, team, fdst, fsrc, symm::plus{}));
              };
              break;
          }
          return std::vector<coll_variant>{{row_info{0, 0, "symm stream form"}, [&, call](long long n) {
                                              pending.clear();
                                              pending.reserve(static_cast<std::size_t>(n));
                                              for (long long i = 0; i < n; ++i)
                                                call();
                                            }}};
        });
    pending.clear();
    symm::team_ref tref = team;
    collective_sweep(
        c, kind, "block", s.src->local().data(), s.dst->local().data(), s.src->size(), [&](const coll_shape& sh) {
          const std::size_t ns = sh.src_bytes / 4, nd = sh.dst_bytes / 4;
          auto wsrc = words_src.subarray(0, ns), wdst = words_dst.subarray(0, nd);
          auto fsrc = floats_src.subarray(0, ns), fdst = floats_dst.subarray(0, nd);
          using kernel_fn = void (*)(symm::team_ref, symm::array_ref<std::uint32_t>, symm::array_ref<std::uint32_t>,
                                     symm::array_ref<float>, symm::array_ref<float>, long long);
          kernel_fn k =
              kind == coll_kind::broadcast  ? block_collective<coll_kind::broadcast>
              : kind == coll_kind::fcollect ? block_collective<coll_kind::fcollect>
              : kind == coll_kind::alltoall ? block_collective<coll_kind::alltoall>
              : kind == coll_kind::allreduce
                  ? block_collective<coll_kind::allreduce>
                  : block_collective<coll_kind::reduce_scatter>;
          cudaStream_t st = c.stream;
          return std::vector<coll_variant>{{row_info{1, coll_block_threads, "symm device form"}, [=](long long n) {
                                              k<<<1, coll_block_threads, 0, st>>>(tref, wdst, wsrc, fdst, fsrc, n);
                                            }}};
        });
  }
}

} // namespace

int main(int argc, char** argv) {
  // The job directory and token of the PEs' symm world, made before the harness forks them.
  std::string job_dir = fmt::format("/tmp/symm-{}", ::getuid());
  symm::detail::ensure_private_dir(job_dir);
  job_dir += fmt::format("/bench-{}", ::getpid());
  symm::detail::ensure_private_dir(job_dir);
  std::string token = fmt::format("{:016x}", std::random_device{}() * 0x9E3779B97F4A7C15ull);

  // Built with symm_nvshmem_dep (bench_symm_nvshmem), the same rows run on the nvshmem backend, as impl "symm-nvshmem".
  constexpr symm::backend backend = SYMM_NVSHMEM_BACKEND() ? symm::backend::nvshmem : symm::backend::cuda;
  context c = start(argc, argv, SYMM_NVSHMEM_BACKEND() ? "symm-nvshmem" : "symm");
  symm::detail::launched_job = symm::detail::job_info{c.pe, c.npes(), c.pe, c.npes(), job_dir, token, "bench_symm"};
  const std::size_t region = region_bytes(c.opt);
  int rc = 0;
  {
    symm::world world({.backend = backend, .heap_size = 2 * region + 8 * MiB, .device = c.device});
    symm::array<char> src(world, region), dst(world, region);
    symm::array<int> words(world, 2 * lat_spread_words * lat_spread_stride);
    symm::signal signal(world);
    int* sink = nullptr;
    BENCH_CUDA(cudaMalloc(&sink, sizeof(int)));
    c.note("symm world: %d PEs, %s backend, heap %zu bytes per PE; build: SYMM_CHECK=%d, %s", world.n_pes(),
           to_string(backend).data(), world.heap_size(), SYMM_CHECK,
#if defined(NDEBUG)
           "NDEBUG"
#else
           "assertions on (no NDEBUG)"
#endif
    );

    set_step("buffer initialisation");
    BENCH_CUDA(cudaMemsetAsync(dst.local().data(), 0, dst.size_bytes(), c.stream));
    fill_pattern(src.local().data(), region, std::uint32_t(c.pe + 1), c.stream);
    world.barrier();

    state s{&world, &src, &dst, &words, &signal, sink};
    if (c.pairwise()) { // 2-PE points
      for (direction d : {direction::put, direction::get})
        for (const bulk_scope& sc : bulk_scopes)
          bulk(c, s, d, sc);
      bidir(c, s);
      latency_points(c, s);
      strided(c, s);
    } else if (c.pairs()) { // the pair points at 4 or 8 PEs, all pairs at once
      bulk(c, s, direction::put, bulk_scopes[0]);
    }
    if (c.pairs()) two_sided_points(c, s);
    step_points(c, s);
    collective_points(c, s); // last: they overwrite src

    set_step("teardown");
    BENCH_CUDA(cudaDeviceSynchronize());
    BENCH_CUDA(cudaFree(sink));
    world.barrier();
  }
  if (c.pe == 0) {
    ::unlink((job_dir + "/boot.sock").c_str());
    ::rmdir(job_dir.c_str());
  }
  rc = c.finish();
  return rc;
}
