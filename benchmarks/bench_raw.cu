// bench_raw.cu — the hand-written CUDA baseline of the comparison suite: what a careful engineer writes without a
// library. N processes (--pes, default 2; fork before any CUDA call), one heap each, every PE mapping every other
// PE's heap with CUDA IPC (handles over the harness's sockets); every operation is a plain load, store, atomic or
// copy through a peer's mapping: the best a hand-written kernel does (vectorised copies with no byte loop at every
// scope). Rows: impl "raw"; with 2 PEs also the hbm_floor rows (the same copies within one PE's memory, the floor every
// bandwidth row is read against). With N > 2 the pair points (put_bw / block, pingpong: PE 2k with 2k+1) and the
// collective points run: single-node collective kernels (one kernel per call, per-block flag barriers in the heaps'
// control areas; broadcast, fcollect, alltoall and reduce_scatter pull from the peers, allreduce is one-shot or
// two-shot, see below). raw has no device-side (one block per PE) collective: the collectives' block scope is symm's
// and NVSHMEM's alone.
//
// Heap exchange: the legacy cudaIpcGetMemHandle / cudaIpcOpenMemHandle by default. If opening fails on any PE
// (some MPS or container set-ups), all fall back to a VMM allocation exported as a POSIX file descriptor and
// passed with SCM_RIGHTS (what symm's CUDA backend does). BENCH_RAW_IPC=legacy|vmm forces one.
#include <cuda.h> // driver API types only: entry points come through cudaGetDriverEntryPointByVersion (no -lcuda)

#include <cinttypes>

#include "bench_common.cuh"

namespace {

using namespace bench;

// ---- device-side primitives -----------------------------------------------------------------------------------------
constexpr unsigned long long spin_timeout_ns = 10'000'000'000ull; // a peer silent for 10 s: report, do not hang

__device__ __forceinline__ void st_relaxed_sys(int* p, int v) {
  asm volatile("st.relaxed.sys.s32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ void st_release_sys(int* p, int v) {
  asm volatile("st.release.sys.s32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ int ld_acquire_sys(const int* p) {
  int v;
  asm volatile("ld.acquire.sys.s32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_release_sys(unsigned long long* p, unsigned long long v) {
  asm volatile("st.release.sys.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ unsigned long long ld_acquire_sys(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.acquire.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

// Spins until load() >= v. Returns false (and sets *err) when nothing arrives for spin_timeout_ns.
template <class T, class Load>
__device__ __forceinline__ bool wait_geq(Load load, T v, int* err) {
  unsigned spins = 0;
  unsigned long long t0 = 0;
  while (load() < v) {
    if ((++spins & 4095u) == 0) {
      unsigned long long t = globaltimer_ns();
      if (t0 == 0) t0 = t;
      else if (t - t0 > spin_timeout_ns) {
        *err = 1;
        return false;
      }
    }
  }
  return true;
}

// Copies `bytes` (dst, src 16-byte aligned) by threads rank..count: a 16-byte vector body, 4 loads in flight per
// thread, then the tail (bytes % 16) in one piece of each of 8, 4, 2, 1 bytes it needs, the widest aligned type for
// each, so that a warp or a thread never falls into a byte loop (an 8-byte copy is one 8-byte load and store).
__device__ __forceinline__ void copy_vec(char* dst, const char* src, std::size_t bytes, unsigned rank, unsigned count) {
  constexpr unsigned unroll = 4;
  const std::size_t n16 = bytes / 16;
  auto* d = reinterpret_cast<int4*>(dst);
  auto* s = reinterpret_cast<const int4*>(src);
  std::size_t i = rank;
  for (; i + (unroll - 1) * std::size_t(count) < n16; i += unroll * std::size_t(count)) {
    int4 v[unroll];
#pragma unroll
    for (unsigned u = 0; u < unroll; ++u)
      v[u] = s[i + u * std::size_t(count)];
#pragma unroll
    for (unsigned u = 0; u < unroll; ++u)
      d[i + u * std::size_t(count)] = v[u];
  }
  for (; i < n16; i += count)
    d[i] = s[i];
  std::size_t at = n16 * 16, rest = bytes - at;
  if (rest == 0) return;
  // The tail's pieces go to different threads (rank 0 takes the 8-byte one), each at an offset aligned to its size.
  const unsigned owner8 = 0, owner4 = 1 % count, owner2 = 2 % count, owner1 = 3 % count;
  if (rest & 8) {
    if (rank == owner8) *reinterpret_cast<long long*>(dst + at) = *reinterpret_cast<const long long*>(src + at);
    at += 8;
  }
  if (rest & 4) {
    if (rank == owner4) *reinterpret_cast<int*>(dst + at) = *reinterpret_cast<const int*>(src + at);
    at += 4;
  }
  if (rest & 2) {
    if (rank == owner2) *reinterpret_cast<short*>(dst + at) = *reinterpret_cast<const short*>(src + at);
    at += 2;
  }
  if ((rest & 1) && rank == owner1) dst[at] = src[at];
}

// The copy of one collective kernel's share (its sizes are multiples of 16 bytes).
__device__ __forceinline__ void
copy_bytes(char* dst, const char* src, std::size_t bytes, unsigned rank, unsigned count) {
  copy_vec(dst, src, bytes, rank, count);
}

// Per-iteration group synchronisation of the *_sync scopes: none, the warp's (__syncwarp), the block's.
enum class group_sync { none, warp, block };

// put_bw / get_bw / bidir_put_bw / hbm_floor, every scope: iteration `it` copies the block's chunk of the plan's slot
// with all the block's threads (bench::bulk_plan), then the *_sync scopes synchronise the group and the grid takes its
// grid-wide step (block scopes; warp scope is this kernel on <<<1, 32>>> and thread scope on <<<1, 1>>>, without
// one).
template <group_sync Sync>
__global__ void __launch_bounds__(1024) raw_copy(char* dst, const char* src, bulk_plan plan, long long iters) {
  const std::size_t n = plan.block_bytes(), off = plan.block_offset();
  for (long long it = 0; it < iters; ++it) {
    const std::size_t at = plan.slot_offset(it) + off;
    if (n != 0) copy_vec(dst + at, src + at, n, threadIdx.x, blockDim.x);
    if constexpr (Sync == group_sync::warp) __syncwarp();
    else if constexpr (Sync == group_sync::block) __syncthreads();
    plan.step(it);
    asm volatile("" ::: "memory"); // keep every iteration: no merging of repeated identical copies
  }
  __threadfence_system();
}

// column_put_bw / tile_put_bw (bench::strided_points): the hand-written strided copies into the peer's mapping, by
// threads rank..count of the group. A column: a word a thread, the rows strided over the group. A tile: 16-byte
// vectors, each row by a team of threads (the smallest power of two covering its vectors, at most the group), the
// teams taking rows in turn.
__device__ __forceinline__ void
raw_column(float* to, const float* from, const strided_cells& s, unsigned rank, unsigned count) {
  for (std::size_t r = rank; r < s.rows; r += count)
    to[r * strided_pitch + s.col0] = from[r * strided_pitch + s.col0];
}
__device__ __forceinline__ void
raw_tile(float* to, const float* from, const strided_cells& s, unsigned rank, unsigned count) {
  const auto vectors = static_cast<unsigned>(s.cols / 4);
  unsigned team = 1;
  while (team < vectors && team * 2 <= count)
    team *= 2;
  const unsigned teams = count / team, lane = rank % team;
  if (rank / team >= teams) return;
  for (std::size_t r = rank / team; r < s.rows; r += teams) {
    auto* d = reinterpret_cast<float4*>(to + r * strided_pitch + s.col0);
    const auto* v = reinterpret_cast<const float4*>(from + r * strided_pitch + s.col0);
    for (unsigned i = lane; i < vectors; i += team)
      d[i] = v[i];
  }
}

// One block or one warp (<<<1, 32>>>), the group synchronised after every put.
template <strided_kind Kind>
__global__ void __launch_bounds__(1024)
    raw_strided_put(float* to, const float* from, strided_cells s, long long iters) {
  for (long long it = 0; it < iters; ++it) {
    if constexpr (Kind == strided_kind::column) raw_column(to, from, s, threadIdx.x, blockDim.x);
    else raw_tile(to, from, s, threadIdx.x, blockDim.x);
    if (blockDim.x > 32) __syncthreads();
    else __syncwarp();
    asm volatile("" ::: "memory"); // keep every iteration
  }
  __threadfence_system();
}

// p_lat: a 4-byte store into the peer's mapping, made visible system-wide before the next (nvshmem_int_p +
// nvshmem_quiet in the NVSHMEM twin, as its perftest shmem_p_latency).
__global__ void raw_p_lat(int* peer, int mask, long long iters) {
  for (long long i = 0; i < iters; ++i) {
    *reinterpret_cast<volatile int*>(peer + (i & mask)) = int(i);
    __threadfence_system();
  }
}

// p_rate: every thread stores its 4-byte word into the peer's mapping, `iters` times (message rate, as perftest's
// shmem_p_bw), one fence at the end. The word is the put pattern, so the target can be verified.
__global__ void raw_p_rate(int* peer, long long iters) {
  const unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
  const int v = int(pattern_word(tid, 1));
  for (long long i = 0; i < iters; ++i) {
    peer[tid] = v;
    asm volatile("" ::: "memory"); // one store per iteration
  }
  __threadfence_system();
}

// g_lat: dependent 4-byte loads from the peer's mapping over g_spread_words lines, more than L1 holds (the next
// address depends on the loaded value: `mask` is 0 at run time, unknown to the compiler).
__global__ void raw_g_lat(const int* peer, int mask, long long iters, int* sink) {
  int v = 0;
  for (long long i = 0; i < iters; ++i)
    v = peer[(i & (g_spread_words - 1)) * g_spread_stride + (v & mask)];
  *sink = v;
}

// atomic_fetch_add_lat: dependent fetch-adds on peer words (the next address depends on the value: mask is 0 at run
// time), cycling over lat_spread_words words, one thread.
__global__ void raw_atomic_lat(int* peer, int mask, long long iters, int* sink) {
  int old = 0;
  for (long long i = 0; i < iters; ++i)
    old = atomicAdd_system(peer + (i % lat_spread_words) * lat_spread_stride + (old & mask), 1);
  *sink = old;
}

// atomic_fetch_add_tput: every thread of a full grid fetch-adds its own peer word, `iters` times.
__global__ void raw_atomic_tput(int* peer, long long iters, int* sink) {
  unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
  int acc = 0;
  for (long long i = 0; i < iters; ++i)
    acc += atomicAdd_system(peer + tid, 1);
  sink[tid] = acc;
}

// pingpong: the issuer (PE 0 of each pair) stores seq into its partner's flag and waits for the partner to store it
// back into its own; iters round trips. The waits poll with acquire loads, as symm::wait_until and
// nvshmem_int_wait_until order what follows them.
__global__ void raw_pingpong(int* mine, int* theirs, bool issuer, int base, long long iters, int* err) {
  for (long long i = 1; i <= iters; ++i) {
    int v = base + int(i);
    if (issuer) {
      st_relaxed_sys(theirs, v);
      if (!wait_geq([&] { return ld_acquire_sys(mine); }, v, err)) return;
    } else {
      if (!wait_geq([&] { return ld_acquire_sys(mine); }, v, err)) return;
      st_relaxed_sys(theirs, v);
    }
  }
}

// pingpong_signal: an 8-byte put from a local source word, then a release store of a 64-bit signal (put + signal),
// answered the same way; the waiting side acquires the signal. The payload is loaded from the source after the wait, as
// a put-with-signal from a buffer does (symm's and NVSHMEM's rows): the wait's acquire has emptied L1, so that load is
// an L2 read before the remote store can issue. The source is not rewritten in the loop (nor in theirs).
__global__ void
raw_pingpong_signal(unsigned long long* my_sig, unsigned long long* their_sig, unsigned long long* their_payload,
                    const unsigned long long* src, int pe, unsigned long long base, long long iters, int* err) {
  for (long long i = 1; i <= iters; ++i) {
    unsigned long long v = base + static_cast<unsigned long long>(i);
    if (pe != 0 && !wait_geq([&] { return ld_acquire_sys(my_sig); }, v, err)) return;
    *reinterpret_cast<volatile unsigned long long*>(their_payload) = *src;
    st_release_sys(their_sig, v);
    if (pe == 0 && !wait_geq([&] { return ld_acquire_sys(my_sig); }, v, err)) return;
  }
}

// pingpong_signal, scope "thread_register": the same with the payload stored from a register (the sequence number), no
// source buffer: the floor of a program that has the value at hand, which a put from memory cannot reach.
__global__ void raw_pingpong_signal_register(
    unsigned long long* my_sig, unsigned long long* their_sig, unsigned long long* their_payload, int pe,
    unsigned long long base, long long iters, int* err) {
  for (long long i = 1; i <= iters; ++i) {
    unsigned long long v = base + static_cast<unsigned long long>(i);
    if (pe != 0 && !wait_geq([&] { return ld_acquire_sys(my_sig); }, v, err)) return;
    *reinterpret_cast<volatile unsigned long long*>(their_payload) = v;
    st_release_sys(their_sig, v);
    if (pe == 0 && !wait_geq([&] { return ld_acquire_sys(my_sig); }, v, err)) return;
  }
}

// barrier_lat: a 2-PE barrier — release-store my epoch into the peer's flag, acquire-wait for the peer's epoch in
// mine. Thread scope on <<<1, 1>>>, block scope on <<<1, 128>>> (thread 0 talks, the block syncs around it).
__global__ void raw_barrier(int* mine, int* theirs, int base, long long iters, int* err) {
  __shared__ int failed;
  if (threadIdx.x == 0) failed = 0;
  for (long long i = 1; i <= iters; ++i) {
    __syncthreads();
    if (threadIdx.x == 0) {
      int e = base + int(i);
      st_release_sys(theirs, e);
      if (!wait_geq([&] { return ld_acquire_sys(mine); }, e, err)) failed = 1;
    }
    __syncthreads();
    if (failed) return;
  }
}

// ---- collectives (host-issued: one kernel per call, as a library's stream form) ----------------------------------
// One node, load/store access to every PE's heap through the IPC mappings. Block b of every PE works on the same
// share of the data and meets block b of every other PE in two flag barriers: at entry (every PE's src is ready) and
// at exit (every PE has finished reading this PE's src and writing this PE's dst). The flags live in the control area
// of each heap: flags[b * max_pes + q] of PE p is written by block b of PE q with monotonic 64-bit epochs (the host
// counts them identically on every PE), so they never need resetting. All PEs' grids must be resident at once
// (blocks spin on their peers): the grid is capped by the occupancy of the GPU divided among the PEs that share it.
constexpr int coll_threads = 512;
constexpr int coll_max_blocks = 1024;

struct ptr_table {
  char* p[max_pes];
};

struct coll_args {
  ptr_table src, dst, flags; // every PE's src / dst / collective flags in this PE's mapping (own entry: local)
  int pe, npes;
  std::size_t bytes;        // the vector (broadcast, allreduce) or one PE's block (fcollect, alltoall, reduce_scatter)
  unsigned long long epoch; // this call's barriers wait for epoch + 1 and epoch + 2
  int* err;                 // set when a peer stays silent for spin_timeout_ns
};

// halo_step's barrier of all PEs, one warp: thread q meets PE q. Arrivals are counted per pair of PEs in device memory
// (sent[q]: this PE's arrivals at PE q; flags[q] on PE p: q's arrivals at p), never passed from the host, so that a
// graph replaying this kernel counts a new round each time. The stream has completed the step's copy before the
// kernel starts; the release store publishes it. A timeout sets *err.
__global__ void raw_step_barrier(ptr_table flags, unsigned long long* sent, int pe, int npes, int* err) {
  for (int q = int(threadIdx.x); q < npes; q += int(blockDim.x)) {
    if (q == pe) continue;
    const unsigned long long round = sent[q] + 1;
    sent[q] = round;
    st_release_sys(reinterpret_cast<unsigned long long*>(flags.p[q]) + pe, round);
    const auto* mine = reinterpret_cast<const unsigned long long*>(flags.p[pe]) + q;
    if (!wait_geq([&] { return ld_acquire_sys(mine); }, round, err)) return;
  }
}

// Block-level barrier with block blockIdx.x of every PE; false (for the whole block) on a timeout.
__device__ __forceinline__ bool coll_barrier(const coll_args& a, unsigned long long e) {
  __syncthreads(); // the block's loads and stores before the signal (the release below is cumulative through it)
  int ok = 1;
  if (int q = int(threadIdx.x); q < a.npes) {
    auto flags = [&](int pe) { return reinterpret_cast<unsigned long long*>(a.flags.p[pe]) + blockIdx.x * max_pes; };
    st_release_sys(flags(q) + a.pe, e);
    const unsigned long long* mine = flags(a.pe) + q;
    ok = wait_geq([&] { return ld_acquire_sys(mine); }, e, a.err);
  }
  return __syncthreads_and(ok) != 0;
}

// This block's share [lo, hi) of `n` 16-byte units.
__device__ __forceinline__ void block_range(std::size_t n, std::size_t& lo, std::size_t& hi) {
  std::size_t per = (n + gridDim.x - 1) / gridDim.x;
  lo = std::min(n, blockIdx.x * per);
  hi = std::min(n, lo + per);
}

__device__ __forceinline__ float4 add4(float4 x, float4 y) {
  return make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
}

// Sum over PEs 0..n-1 (in that order, the same bits on every PE) of float4 element i of every PE's src + off.
__device__ __forceinline__ float4 reduce4(const coll_args& a, std::size_t off, std::size_t i) {
  constexpr int batch = 4; // loads in flight before the adds (times reduce_unroll, see reduce_range)
  float4 acc = reinterpret_cast<const float4*>(a.src.p[0] + off)[i];
  for (int p0 = 1; p0 < a.npes; p0 += batch) {
    float4 v[batch];
#pragma unroll
    for (int k = 0; k < batch; ++k)
      if (p0 + k < a.npes) v[k] = reinterpret_cast<const float4*>(a.src.p[p0 + k] + off)[i];
#pragma unroll
    for (int k = 0; k < batch; ++k)
      if (p0 + k < a.npes) acc = add4(acc, v[k]);
  }
  return acc;
}

// out[i] = reduce4(a, off, i) for i in [lo, hi) by this block's threads, reduce_unroll elements per thread at a time
// (their loads all in flight before the first store). `out(i)` gives the float4 to write (one or several PEs').
constexpr int reduce_unroll = 4;
template <class Store>
__device__ __forceinline__ void
reduce_range(const coll_args& a, std::size_t off, std::size_t lo, std::size_t hi, Store store) {
  const std::size_t stride = blockDim.x;
  for (std::size_t i = lo + threadIdx.x; i < hi; i += reduce_unroll * stride) {
    float4 acc[reduce_unroll];
#pragma unroll
    for (int u = 0; u < reduce_unroll; ++u)
      if (i + u * stride < hi) acc[u] = reduce4(a, off, i + u * stride);
#pragma unroll
    for (int u = 0; u < reduce_unroll; ++u)
      if (i + u * stride < hi) store(i + u * stride, acc[u]);
  }
}

// broadcast: every PE copies its share of the root's src into its own dst.
__global__ void __launch_bounds__(coll_threads) raw_broadcast(coll_args a, int root) {
  if (!coll_barrier(a, a.epoch + 1)) return;
  std::size_t lo, hi;
  block_range(a.bytes / 16, lo, hi);
  copy_bytes(a.dst.p[a.pe] + lo * 16, a.src.p[root] + lo * 16, (hi - lo) * 16, threadIdx.x, blockDim.x);
  coll_barrier(a, a.epoch + 2);
}

// fcollect / alltoall: dst is N blocks; block q comes from PE q's src (fcollect: its only block; alltoall: its block
// number pe). The block's share of dst is walked from this PE's own block on (peer order rotated per PE, so that the
// PEs do not all read the same peer at once).
template <bool AllToAll>
__global__ void __launch_bounds__(coll_threads) raw_gather(coll_args a) {
  if (!coll_barrier(a, a.epoch + 1)) return;
  const std::size_t bw = a.bytes / 16, n = bw * std::size_t(a.npes);
  std::size_t lo, hi;
  block_range(n, lo, hi);
  for (std::size_t x = lo; x < hi;) { // x: position in the rotated order of dst's blocks
    const std::size_t k = x / bw, in = x % bw, len = std::min(hi - x, bw - in);
    const int q = int((std::size_t(a.pe) + k) % std::size_t(a.npes));
    const char* from = a.src.p[q] + (AllToAll ? std::size_t(a.pe) * a.bytes : 0) + in * 16;
    copy_bytes(a.dst.p[a.pe] + std::size_t(q) * a.bytes + in * 16, from, len * 16, threadIdx.x, blockDim.x);
    x += len;
  }
  coll_barrier(a, a.epoch + 2);
}

// Pull and reduce: every PE reads a.bytes from `src_offset` of every PE's src and reduces them into its own dst. The
// one-shot allreduce (offset 0: the whole vector) and reduce_scatter (offset pe x bytes: PE p's block).
__global__ void __launch_bounds__(coll_threads) raw_reduce_pull(coll_args a, std::size_t src_offset) {
  if (!coll_barrier(a, a.epoch + 1)) return;
  std::size_t lo, hi;
  block_range(a.bytes / 16, lo, hi);
  auto* out = reinterpret_cast<float4*>(a.dst.p[a.pe]);
  reduce_range(a, src_offset, lo, hi, [out](std::size_t i, float4 v) { out[i] = v; });
  coll_barrier(a, a.epoch + 2);
}

// allreduce, two shot: PE p reduces chunk p of the vector (reduce-scatter) and stores the result into chunk p of every
// PE's dst (the all-gather, fused: stores, not loads, cross the links); the exit barrier completes both phases.
__global__ void __launch_bounds__(coll_threads) raw_allreduce_two_shot(coll_args a) {
  if (!coll_barrier(a, a.epoch + 1)) return;
  const std::size_t n = a.bytes / 16, chunk = (n + std::size_t(a.npes) - 1) / std::size_t(a.npes);
  const std::size_t c0 = std::min(n, std::size_t(a.pe) * chunk), c1 = std::min(n, c0 + chunk);
  std::size_t lo, hi;
  block_range(c1 - c0, lo, hi);
  reduce_range(a, 0, c0 + lo, c0 + hi, [&a](std::size_t i, float4 v) {
    for (int k = 0; k < a.npes; ++k) { // own dst first, then the next PEs' (each PE starts elsewhere)
      int q = a.pe + k < a.npes ? a.pe + k : a.pe + k - a.npes;
      reinterpret_cast<float4*>(a.dst.p[q])[i] = v;
    }
  });
  coll_barrier(a, a.epoch + 2);
}

// ---- heap exchange
// ----------------------------------------------------------------------------------------------------
#define BENCH_CU(call) check_cu((call), #call, __FILE__, __LINE__)
void check_cu(CUresult r, const char* call, const char* file, int line) {
  if (r != CUDA_SUCCESS) die(2, "%s:%d: %s failed: CUresult %d [during: %s]", file, line, call, int(r), g_step);
}

template <class F>
F driver_entry(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q{};
  BENCH_CUDA(cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &q));
  if (!fn || q != cudaDriverEntryPointSuccess) die(2, "driver entry point %s not found", name);
  return reinterpret_cast<F>(fn);
}

struct vmm_api {
  decltype(&cuMemGetAllocationGranularity) granularity = driver_entry<decltype(granularity)>(
      "cuMemGetAllocationGranula"
      "rity");
  decltype(&cuMemCreate) create = driver_entry<decltype(create)>("cuMemCreate");
  decltype(&cuMemExportToShareableHandle) export_handle = driver_entry<decltype(export_handle)>(
      "cuMemExportToShareable"
      "Handle");
  decltype(&cuMemImportFromShareableHandle) import_handle = driver_entry<decltype(import_handle)>(
      "cuMemImportFromShare"
      "ableHandle");
  decltype(&cuMemAddressReserve) reserve = driver_entry<decltype(reserve)>("cuMemAddressReserve");
  decltype(&cuMemMap) map = driver_entry<decltype(map)>("cuMemMap");
  decltype(&cuMemSetAccess) set_access = driver_entry<decltype(set_access)>("cuMemSetAccess");
  decltype(&cuMemUnmap) unmap = driver_entry<decltype(unmap)>("cuMemUnmap");
  decltype(&cuMemRelease) release = driver_entry<decltype(release)>("cuMemRelease");
  decltype(&cuMemAddressFree) address_free = driver_entry<decltype(address_free)>("cuMemAddressFree");
};

// Every PE's heap, mapped into this PE: peers[k] is PE k's heap (peers[pe] == local).
struct heap {
  char* local = nullptr;
  std::vector<char*> peers;
  std::size_t bytes = 0;
  const char* how = "";
  bool vmm = false;
  CUmemGenericAllocationHandle local_h{};
  std::vector<CUmemGenericAllocationHandle> peer_h;
};

bool open_legacy(context& c, heap& h) {
  BENCH_CUDA(cudaMalloc(&h.local, h.bytes));
  cudaIpcMemHandle_t mine{};
  BENCH_CUDA(cudaIpcGetMemHandle(&mine, h.local));
  std::vector<cudaIpcMemHandle_t> handles = c.link.allgather(mine);
  h.peers.assign(std::size_t(c.npes()), nullptr);
  h.peers[std::size_t(c.pe)] = h.local;
  bool ok = true;
  for (int k = 0; k < c.npes() && ok; ++k) {
    if (k == c.pe) continue;
    void* p = nullptr;
    cudaError_t e = cudaIpcOpenMemHandle(&p, handles[std::size_t(k)], cudaIpcMemLazyEnablePeerAccess);
    (void) cudaGetLastError();
    if (e == cudaSuccess) {
      h.peers[std::size_t(k)] = static_cast<char*>(p);
    } else {
      std::fprintf(stderr, "[pe %d] cudaIpcOpenMemHandle of PE %d failed: %s (%s)\n", c.pe, k, cudaGetErrorName(e),
                   cudaGetErrorString(e));
      ok = false;
    }
  }
  std::vector<char> oks = c.link.allgather(char(ok));
  if (std::all_of(oks.begin(), oks.end(), [](char v) { return v != 0; })) {
    h.how = "legacy cudaIpcGetMemHandle/cudaIpcOpenMemHandle";
    return true;
  }
  for (int k = 0; k < c.npes(); ++k)
    if (k != c.pe && h.peers[std::size_t(k)]) BENCH_CUDA(cudaIpcCloseMemHandle(h.peers[std::size_t(k)]));
  h.peers.clear();
  c.link.barrier(); // nobody maps another PE's buffer any more
  BENCH_CUDA(cudaFree(h.local));
  h.local = nullptr;
  return false;
}

void open_vmm(context& c, heap& h) {
  vmm_api api;
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = c.device;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  std::size_t gran = 0;
  BENCH_CU(api.granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
  h.bytes = (h.bytes + gran - 1) / gran * gran;
  for (std::size_t b : c.link.allgather(h.bytes))
    if (b != h.bytes) die(2, "the PEs computed different heap sizes");
  BENCH_CU(api.create(&h.local_h, h.bytes, &prop, 0));
  int fd = -1;
  BENCH_CU(api.export_handle(&fd, h.local_h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  std::vector<int> fds = c.link.allgather_fds(fd);
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = c.device;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  auto map = [&](CUmemGenericAllocationHandle handle) {
    CUdeviceptr a = 0;
    BENCH_CU(api.reserve(&a, h.bytes, gran, 0, 0));
    BENCH_CU(api.map(a, h.bytes, 0, handle, 0));
    BENCH_CU(api.set_access(a, h.bytes, &access, 1));
    return reinterpret_cast<char*>(a);
  };
  h.local = map(h.local_h);
  h.peers.assign(std::size_t(c.npes()), nullptr);
  h.peer_h.assign(std::size_t(c.npes()), CUmemGenericAllocationHandle{});
  h.peers[std::size_t(c.pe)] = h.local;
  for (int k = 0; k < c.npes(); ++k) {
    if (k == c.pe) continue;
    int peer_fd = fds[std::size_t(k)];
    BENCH_CU(api.import_handle(&h.peer_h[std::size_t(k)], reinterpret_cast<void*>(static_cast<std::uintptr_t>(peer_fd)),
                               CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    ::close(peer_fd);
    h.peers[std::size_t(k)] = map(h.peer_h[std::size_t(k)]);
  }
  ::close(fd);
  h.vmm = true;
  h.how = "VMM cuMemCreate + POSIX fd over SCM_RIGHTS";
}

heap map_heap(context& c, std::size_t bytes) {
  set_step("heap exchange (%zu bytes per PE)", bytes);
  heap h;
  h.bytes = bytes;
  const char* want = std::getenv("BENCH_RAW_IPC");
  std::string mode = want && *want ? want : "auto";
  if (mode != "auto" && mode != "legacy" && mode != "vmm") die(64, "BENCH_RAW_IPC must be auto, legacy or vmm");
  if (mode != "vmm" && open_legacy(c, h)) return h;
  if (mode == "legacy") die(2, "legacy CUDA IPC failed (BENCH_RAW_IPC=legacy): see the message above");
  if (mode == "auto") c.note("legacy CUDA IPC failed, falling back to VMM + POSIX fd");
  open_vmm(c, h);
  return h;
}

void close_heap(context& c, heap& h) {
  BENCH_CUDA(cudaDeviceSynchronize());
  c.link.barrier();
  if (!h.vmm) {
    for (int k = 0; k < c.npes(); ++k)
      if (k != c.pe) BENCH_CUDA(cudaIpcCloseMemHandle(h.peers[std::size_t(k)]));
    c.link.barrier(); // every peer has unmapped our buffer before we free it
    BENCH_CUDA(cudaFree(h.local));
    return;
  }
  vmm_api api;
  for (int k = 0; k < c.npes(); ++k) {
    if (k == c.pe) continue;
    BENCH_CU(api.unmap(reinterpret_cast<CUdeviceptr>(h.peers[std::size_t(k)]), h.bytes));
    BENCH_CU(api.address_free(reinterpret_cast<CUdeviceptr>(h.peers[std::size_t(k)]), h.bytes));
    BENCH_CU(api.release(h.peer_h[std::size_t(k)]));
  }
  c.link.barrier();
  BENCH_CU(api.unmap(reinterpret_cast<CUdeviceptr>(h.local), h.bytes));
  BENCH_CU(api.address_free(reinterpret_cast<CUdeviceptr>(h.local), h.bytes));
  BENCH_CU(api.release(h.local_h));
}

// ---- the points
// ------------------------------------------------------------------------------------------------------ Control region
// of each heap (after src and dst).
struct ctrl_layout {
  static constexpr std::size_t pp_flag = 0, bar_flag = 64, signal = 128, payload = 192, err = 256, sink = 320;
  // halo_step's barrier: unsigned long long [max_pes] arrival counts from each PE, then [max_pes] of this PE's own.
  static constexpr std::size_t step_flags = 64 * KiB, step_sent = step_flags + max_pes * 8;
  // The collective kernels' barrier flags: unsigned long long [coll_max_blocks][max_pes].
  static constexpr std::size_t coll_flags = 512 * KiB, coll_flags_bytes = coll_max_blocks * max_pes * 8;
  static constexpr std::size_t atomics = 1 * MiB, atomics_bytes = 3 * MiB, sinks = 4 * MiB, bytes = 8 * MiB;
  static_assert(coll_flags + coll_flags_bytes <= atomics);
};

struct buffers {
  char *src, *dst, *ctrl;    // local
  char *psrc, *pdst, *pctrl; // the peer's, through its mapping
  template <class T>
  T* at(char* base, std::size_t off) const {
    return reinterpret_cast<T*>(base + off);
  }
};

// The copy kernel of a group_sync, as a plain function pointer (for launches and the occupancy queries).
using copy_fn = void (*)(char*, const char*, bulk_plan, long long);
copy_fn copy_kernel(group_sync sync) {
  switch (sync) {
    case group_sync::none: return raw_copy<group_sync::none>;
    case group_sync::warp: return raw_copy<group_sync::warp>;
    default: return raw_copy<group_sync::block>;
  }
}

// One bulk row: `to` <- `from` over the scope `sc` (bench::bulk_scopes), measured by `run(launch)` (one_sided, or
// two_sided_bw for bidir), the best of the shapes; `concurrent`: PEs launching grid-stepped kernels on this GPU at
// once.
template <class Run>
void bulk_row(context& c, const char* name, const bulk_scope& sc, std::size_t bytes, char* to, const char* from,
              int concurrent, Run&& run, double payload_factor = 1.0) {
  set_step("raw %s %s %zu bytes", name, sc.name, bytes);
  best_of best;
  if (sc.kind == launch_kind::block) {
    copy_fn k = copy_kernel(sc.sync ? group_sync::block : group_sync::none);
    for (block_shape s : block_shapes(c, reinterpret_cast<const void*>(k), concurrent)) {
      bulk_plan plan = make_plan(c, bytes, s.grid, sc.cold, true);
      best.offer(run([&](long long n) {
                   plan.base = c.steps.next(s.grid, n);
                   k<<<s.grid, s.threads, 0, c.stream>>>(to, from, plan, n);
                   BENCH_LAUNCH_CHECK(); // a launch that failed would leave the step counter's arrivals behind its base
                 }),
                 {s.grid, s.threads, "", payload_factor});
    }
  } else if (sc.kind == launch_kind::stream) {
    const std::size_t stride = make_plan(c, bytes, 1, sc.cold, false).slot_stride;
    const unsigned slots = make_plan(c, bytes, 1, sc.cold, false).slots;
    best.offer(run([&](long long n) {
                 for (long long i = 0; i < n; ++i) {
                   const std::size_t at = std::size_t(i % slots) * stride;
                   BENCH_CUDA(cudaMemcpyAsync(to + at, from + at, bytes, cudaMemcpyDeviceToDevice, c.stream));
                 }
               }),
               {0, 0, "cudaMemcpyAsync", payload_factor});
  } else {
    const bool warp = sc.kind == launch_kind::warp;
    copy_fn k = copy_kernel(sc.sync ? group_sync::warp : group_sync::none);
    bulk_plan plan = make_plan(c, bytes, 1, sc.cold, false);
    const int threads = warp ? 32 : 1;
    best.offer(run([&](long long n) { k<<<1, threads, 0, c.stream>>>(to, from, plan, n); }),
               {1, threads, "", payload_factor});
  }
  if (best.best) {
    const measurement& m = *best.best;
    c.row(name, sc.name, bytes, m.iters, m.st.median_us, m.st.min_us, m.st.p90_us, true, best.info);
  }
}

// put_bw / get_bw at every scope (2 PEs), or put_bw / block between the pairs (4 and 8 PEs).
void bulk(context& c, const buffers& b, direction d, const bulk_scope& sc) {
  const char* name = d == direction::put ? "put_bw" : "get_bw";
  if (!c.opt.wants(name, sc.name)) return;
  char* to = d == direction::put ? b.pdst : b.dst;
  const char* from = d == direction::put ? b.src : b.psrc;
  const auto seed = std::uint32_t(c.partner() + 1);
  for (std::size_t bytes : c.pairwise() ? bulk_sizes(c, sc) : pair_sizes(c)) {
    bulk_row(c, name, sc, bytes, to, from, issuers_per_device(c),
             [&](auto launch) { return one_sided(c, d, b.dst, bytes, seed, c.opt.target_ms, launch); });
  }
}

// bidir_put_bw / block: both PEs put into each other at once; gbps counts both directions.
void bidir(context& c, const buffers& b) {
  const bulk_scope sc = bulk_scopes[0];
  if (!c.opt.wants("bidir_put_bw", sc.name)) return;
  for (std::size_t bytes : pair_sizes(c))
    bulk_row(
        c, "bidir_put_bw", sc, bytes, b.pdst, b.src, c.pes_per_device(),
        [&](auto launch) { return two_sided_bw(c, b.dst, bytes, c.opt.target_ms, launch); }, 2.0);
}

// hbm_floor: the same copies within this PE's own memory (src -> dst), the floor every put and get row is read
// against: scope block / block_cold the grid-stepped copy kernel, stream / stream_cold cudaMemcpyAsync D2D.
void floors(context& c, const buffers& b) {
  for (const bulk_scope& sc : bulk_scopes) {
    if (sc.sync || (sc.kind != launch_kind::block && sc.kind != launch_kind::stream)) continue;
    if (!c.opt.wants("hbm_floor", sc.name)) continue;
    for (std::size_t bytes : bulk_sizes(c, sc))
      bulk_row(c, "hbm_floor", sc, bytes, b.dst, b.src, 1, [&](auto launch) {
        // PE 0 copies its own src (the pattern of seed 1) into its own dst and checks it.
        return one_sided(c, direction::get, b.dst, bytes, std::uint32_t(c.pe + 1), c.opt.target_ms, launch);
      });
  }
}

// column_put_bw / tile_put_bw (bench::strided_points): raw_strided_put on one block (256 and 1024 threads) or one
// warp; scope stream: one cudaMemcpy2DAsync (the copy engine) a put.
void strided(context& c, const buffers& b, std::size_t region) {
  auto* to = reinterpret_cast<float*>(b.pdst);
  const auto* from = reinterpret_cast<const float*>(b.src);
  strided_points(
      c, b.src, b.dst, region, [&](strided_kind k, const strided_scope& sc, const strided_cells& s, auto add) {
        if (sc.kind == launch_kind::stream) {
          constexpr std::size_t pitch = strided_pitch * 4;
          add(
              [&](long long n) {
                for (long long i = 0; i < n; ++i)
                  BENCH_CUDA(cudaMemcpy2DAsync(to + s.col0, pitch, from + s.col0, pitch, s.cols * 4, s.rows,
                                               cudaMemcpyDeviceToDevice, c.stream));
              },
              {0, 0, "cudaMemcpy2DAsync"});
          return;
        }
        auto* kernel =
            k == strided_kind::column ? raw_strided_put<strided_kind::column> : raw_strided_put<strided_kind::tile>;
        if (sc.kind == launch_kind::warp) {
          add([&](long long n) { kernel<<<1, 32, 0, c.stream>>>(to, from, s, n); }, {1, 32});
          return;
        }
        for (int threads : strided_block_threads)
          add([&](long long n) { kernel<<<1, threads, 0, c.stream>>>(to, from, s, n); }, {1, threads});
      });
}

void latency_points(context& c, const buffers& b) {
  auto emit =
      [&](const char* name, const char* scope, std::size_t bytes, const std::optional<measurement>& m, bool bw) {
        if (m) c.row(name, scope, bytes, m->iters, m->st.median_us, m->st.min_us, m->st.p90_us, bw);
      };
  int* sink = b.at<int>(b.ctrl, ctrl_layout::sink);
  if (c.opt.wants("p_lat", "thread")) {
    set_step("raw p_lat");
    int* peer = b.at<int>(b.pctrl, ctrl_layout::atomics);
    emit("p_lat", "thread", 4,
         one_sided(c, direction::put, nullptr, 4, 0, c.opt.lat_target_ms,
                   [&](long long n) { raw_p_lat<<<1, 1, 0, c.stream>>>(peer, 0, n); }),
         false);
  }
  if (c.opt.wants("g_lat", "thread")) {
    set_step("raw g_lat");
    const int* peer = b.at<int>(b.psrc, 0);
    emit("g_lat", "thread", 4,
         one_sided(c, direction::get, nullptr, 4, 0, c.opt.lat_target_ms,
                   [&](long long n) { raw_g_lat<<<1, 1, 0, c.stream>>>(peer, 0, n, sink); }),
         false);
  }
  if (c.opt.wants("atomic_fetch_add_lat", "thread")) {
    set_step("raw atomic_fetch_add_lat");
    int* peer = b.at<int>(b.pctrl, ctrl_layout::atomics);
    emit("atomic_fetch_add_lat", "thread", 4,
         one_sided(c, direction::put, nullptr, 4, 0, c.opt.lat_target_ms,
                   [&](long long n) { raw_atomic_lat<<<1, 1, 0, c.stream>>>(peer, 0, n, sink); }),
         false);
  }
  if (c.opt.wants("atomic_fetch_add_tput", "grid")) {
    set_step("raw atomic_fetch_add_tput");
    int grid = rate_blocks_per_sm * c.sm_count, threads = rate_threads;
    std::size_t nthreads = std::size_t(grid) * threads;
    if (nthreads * 4 > ctrl_layout::atomics_bytes) die(2, "atomic area too small for %zu threads", nthreads);
    int* peer = b.at<int>(b.pctrl, ctrl_layout::atomics);
    int* sinks = b.at<int>(b.ctrl, ctrl_layout::sinks);
    emit("atomic_fetch_add_tput", "grid", nthreads * 4,
         one_sided(c, direction::put, nullptr, 4, 0, c.opt.target_ms,
                   [&](long long n) { raw_atomic_tput<<<grid, threads, 0, c.stream>>>(peer, n, sinks); }),
         true);
  }
  for (const char* scope : {"grid", "warp"}) {
    if (!c.opt.wants("p_rate", scope)) continue;
    set_step("raw p_rate %s", scope);
    const bool grid_wide = std::string_view(scope) == "grid";
    const int grid = grid_wide ? rate_blocks_per_sm * c.sm_count : 1, threads = grid_wide ? rate_threads : 32;
    const std::size_t bytes = std::size_t(grid) * std::size_t(threads) * 4;
    int* peer = b.at<int>(b.pdst, 0);
    auto m = one_sided(c, direction::put, b.dst, bytes, std::uint32_t(c.partner() + 1), c.opt.target_ms,
                       [&](long long n) { raw_p_rate<<<grid, threads, 0, c.stream>>>(peer, n); });
    if (m) c.row("p_rate", scope, bytes, m->iters, m->st.median_us, m->st.min_us, m->st.p90_us, true, {grid, threads});
  }
}

void check_err(int* err, const char* what) {
  int h = 0;
  BENCH_CUDA(cudaMemcpy(&h, err, sizeof h, cudaMemcpyDeviceToHost));
  if (h)
    die(1,
        "%s: the peer did not answer for %.0f s. Are both kernels running at once? Two PEs on one GPU need "
        "the MPS daemon (benchmarks/run_all.sh starts one).",
        what, double(spin_timeout_ns) * 1e-9);
}

void two_sided_points(context& c, const buffers& b) {
  int* err = b.at<int>(b.ctrl, ctrl_layout::err);
  auto emit = [&](const char* name, const char* scope, std::size_t bytes, const measurement& m) {
    c.row(name, scope, bytes, m.iters, m.st.median_us, m.st.min_us, m.st.p90_us, false);
  };
  if (c.opt.wants("pingpong", "thread")) {
    set_step("raw pingpong");
    int seq = 0;
    int* mine = b.at<int>(b.ctrl, ctrl_layout::pp_flag);
    int* theirs = b.at<int>(b.pctrl, ctrl_layout::pp_flag);
    measurement m = measure(
        [&](long long n) {
          raw_pingpong<<<1, 1, 0, c.stream>>>(mine, theirs, c.issuer(), seq, n, err);
          seq += int(n);
        },
        c.stream, c.opt, c.opt.lat_target_ms, &c.link);
    check_err(err, "pingpong");
    emit("pingpong", "thread", 4, m);
    if (m.st.median_us > 100)
      c.note("pingpong takes %.0f us per round trip: the two PEs' kernels time-slice (no MPS?)", m.st.median_us);
  }
  if (!c.pairwise()) return; // the rest are 2-PE points
  if (c.opt.wants("pingpong_signal", "thread")) {
    set_step("raw pingpong_signal");
    unsigned long long seq = 0;
    auto* mine = b.at<unsigned long long>(b.ctrl, ctrl_layout::signal);
    auto* theirs = b.at<unsigned long long>(b.pctrl, ctrl_layout::signal);
    auto* payload = b.at<unsigned long long>(b.pctrl, ctrl_layout::payload);
    const auto* src = b.at<unsigned long long>(b.ctrl, ctrl_layout::payload) + 1; // as symm's: the word after it
    measurement m = measure(
        [&](long long n) {
          raw_pingpong_signal<<<1, 1, 0, c.stream>>>(mine, theirs, payload, src, c.pe, seq, n, err);
          seq += static_cast<unsigned long long>(n);
        },
        c.stream, c.opt, c.opt.lat_target_ms, &c.link);
    check_err(err, "pingpong_signal");
    emit("pingpong_signal", "thread", 8, m);
  }
  if (c.opt.wants("pingpong_signal", "thread_register")) {
    set_step("raw pingpong_signal thread_register");
    unsigned long long seq = 1ull << 40; // above every value of the main form: the signal words only grow
    auto* mine = b.at<unsigned long long>(b.ctrl, ctrl_layout::signal);
    auto* theirs = b.at<unsigned long long>(b.pctrl, ctrl_layout::signal);
    auto* payload = b.at<unsigned long long>(b.pctrl, ctrl_layout::payload);
    measurement m = measure(
        [&](long long n) {
          raw_pingpong_signal_register<<<1, 1, 0, c.stream>>>(mine, theirs, payload, c.pe, seq, n, err);
          seq += static_cast<unsigned long long>(n);
        },
        c.stream, c.opt, c.opt.lat_target_ms, &c.link);
    check_err(err, "pingpong_signal thread_register");
    emit("pingpong_signal", "thread_register", 8, m);
  }
  int bar_seq = 0; // shared by both barrier scopes: the flags only grow
  for (const char* scope : {"thread", "block"}) {
    if (!c.opt.wants("barrier_lat", scope)) continue;
    set_step("raw barrier_lat %s", scope);
    int threads = std::string_view(scope) == "block" ? 128 : 1;
    int* mine = b.at<int>(b.ctrl, ctrl_layout::bar_flag);
    int* theirs = b.at<int>(b.pctrl, ctrl_layout::bar_flag);
    measurement m = measure(
        [&](long long n) {
          raw_barrier<<<1, threads, 0, c.stream>>>(mine, theirs, bar_seq, n, err);
          bar_seq += int(n);
        },
        c.stream, c.opt, c.opt.lat_target_ms, &c.link);
    check_err(err, "barrier_lat");
    emit("barrier_lat", scope, 0, m);
  }
}

// halo_step (bench::halo_step_points): the copy engine puts into the right neighbour's dst through its mapping
// (cudaMemcpyAsync, as a hand-written stream step would), then raw_step_barrier.
void step_points(context& c, const heap& h, std::size_t region) {
  const int right = (c.pe + 1) % c.npes();
  ptr_table flags{};
  for (int k = 0; k < c.npes(); ++k)
    flags.p[k] = h.peers[std::size_t(k)] + 2 * region + ctrl_layout::step_flags;
  auto* sent = reinterpret_cast<unsigned long long*>(h.local + 2 * region + ctrl_layout::step_sent);
  int* err = reinterpret_cast<int*>(h.local + 2 * region + ctrl_layout::err);
  char* to = h.peers[std::size_t(right)] + region;
  const char* from = h.local;
  const int pe = c.pe, npes = c.npes();
  halo_step_points(c, h.local + region, [=](cudaStream_t s, std::size_t bytes) {
    BENCH_CUDA(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, s));
    raw_step_barrier<<<1, 32, 0, s>>>(flags, sent, pe, npes, err);
  });
  check_err(err, "halo_step");
}

// The collective points (bench::collective_sweep). Every kernel is tried with two grid sizes (one block per 16 KiB
// and per 128 KiB of the PE's work, capped so that all PEs' grids are resident together), allreduce up to
// one_shot_max_bytes both algorithms; the row is the best, the log names it.
constexpr std::size_t one_shot_max_bytes = 1 * MiB;
void collective_points(context& c, const heap& h, std::size_t region) {
  coll_args base{};
  base.pe = c.pe;
  base.npes = c.npes();
  base.err = reinterpret_cast<int*>(h.local + 2 * region + ctrl_layout::err);
  for (int k = 0; k < c.npes(); ++k) {
    base.src.p[k] = h.peers[std::size_t(k)];
    base.dst.p[k] = h.peers[std::size_t(k)] + region;
    base.flags.p[k] = h.peers[std::size_t(k)] + 2 * region + ctrl_layout::coll_flags;
  }
  unsigned long long epoch = 0; // the same sequence of calls on every PE: the same epochs
  // The largest grid whose blocks can all be resident while every PE sharing this GPU runs the same kernel; PE 0's
  // value for everybody, since block b meets block b.
  auto cap_of = [&](const void* kernel) {
    int occ = 0;
    BENCH_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, kernel, coll_threads, 0));
    int cap = std::clamp(occ * c.sm_count / c.pes_per_device(), 1, coll_max_blocks);
    return c.link.broadcast(cap);
  };
  const int cap_bcast = cap_of(reinterpret_cast<const void*>(raw_broadcast));
  const int cap_fcollect = cap_of(reinterpret_cast<const void*>(raw_gather<false>));
  const int cap_alltoall = cap_of(reinterpret_cast<const void*>(raw_gather<true>));
  const int cap_pull = cap_of(reinterpret_cast<const void*>(raw_reduce_pull));
  const int cap_two = cap_of(reinterpret_cast<const void*>(raw_allreduce_two_shot));
  c.note("collective grids capped at %d..%d blocks of %d threads (%d PEs per GPU)",
         std::min({cap_bcast, cap_fcollect, cap_alltoall, cap_pull, cap_two}),
         std::max({cap_bcast, cap_fcollect, cap_alltoall, cap_pull, cap_two}), coll_threads, c.pes_per_device());
  auto grids = [](std::size_t work, int cap) {
    std::vector<int> g;
    for (std::size_t per : {16 * KiB, 128 * KiB}) {
      int n = int(std::clamp<std::size_t>((work + per - 1) / per, 1, std::size_t(cap)));
      if (std::find(g.begin(), g.end(), n) == g.end()) g.push_back(n);
    }
    return g;
  };
  int* err = base.err;
  for (coll_kind kind : coll_kinds) {
    const char* name = coll_name(kind);
    collective_sweep(c, kind, "stream", h.local, h.local + region, region, [&](const coll_shape& sh) {
      std::vector<coll_variant> vs;
      // One variant: `enqueue(args, grid)` launches one call's kernel on the stream.
      auto add = [&](const char* algo, int grid, auto enqueue) {
        coll_args a = base;
        a.bytes = kind == coll_kind::broadcast || kind == coll_kind::allreduce ? sh.bytes : sh.block;
        vs.push_back({row_info{grid, coll_threads, algo},
                      [&epoch, a, grid, enqueue](long long n) mutable {
                        for (long long i = 0; i < n; ++i) {
                          a.epoch = epoch;
                          enqueue(a, grid);
                          epoch += 2; // two barriers per call
                        }
                      },
                      [err, name] { check_err(err, name); }});
      };
      cudaStream_t s = c.stream;
      const std::size_t n = std::size_t(c.npes());
      switch (kind) {
        case coll_kind::broadcast:
          for (int g : grids(sh.bytes, cap_bcast))
            add("pull", g,
                [s](const coll_args& a, int grid) { raw_broadcast<<<grid, coll_threads, 0, s>>>(a, coll_root); });
          break;
        case coll_kind::fcollect:
          for (int g : grids(sh.bytes, cap_fcollect))
            add("pull", g, [s](const coll_args& a, int grid) { raw_gather<false><<<grid, coll_threads, 0, s>>>(a); });
          break;
        case coll_kind::alltoall:
          for (int g : grids(sh.bytes, cap_alltoall))
            add("pull", g, [s](const coll_args& a, int grid) { raw_gather<true><<<grid, coll_threads, 0, s>>>(a); });
          break;
        case coll_kind::allreduce:
          if (sh.bytes <= one_shot_max_bytes)
            for (int g : grids(sh.bytes, cap_pull))
              add("one-shot", g,
                  [s](const coll_args& a, int grid) { raw_reduce_pull<<<grid, coll_threads, 0, s>>>(a, 0); });
          for (int g : grids(sh.bytes / n, cap_two))
            add("two-shot", g,
                [s](const coll_args& a, int grid) { raw_allreduce_two_shot<<<grid, coll_threads, 0, s>>>(a); });
          break;
        case coll_kind::reduce_scatter:
          for (int g : grids(sh.block, cap_pull))
            add("pull", g, [s](const coll_args& a, int grid) {
              raw_reduce_pull<<<grid, coll_threads, 0, s>>>(a, std::size_t(a.pe) * a.bytes);
            });
          break;
      }
      return vs;
    });
  }
}

} // namespace

int main(int argc, char** argv) {
  context c = start(argc, argv, "raw");
  const std::size_t region = region_bytes(c.opt);
  heap h = map_heap(c, 2 * region + ctrl_layout::bytes);
  c.note("heap exchange: %s, %zu bytes per PE", h.how, h.bytes);

  set_step("buffer initialisation");
  BENCH_CUDA(cudaMemsetAsync(h.local, 0, h.bytes, c.stream));
  fill_pattern(h.local, region, std::uint32_t(c.pe + 1), c.stream);
  c.link.barrier();

  if (c.pairs()) { // this PE and its partner (2 PEs: every point; 4 or 8: the pair points, all pairs at once)
    char* peer = h.peers[std::size_t(c.partner())];
    buffers b{h.local, h.local + region, h.local + 2 * region, peer, peer + region, peer + 2 * region};
    if (c.pairwise()) {
      floors(c, b);
      for (direction d : {direction::put, direction::get})
        for (const bulk_scope& sc : bulk_scopes)
          bulk(c, b, d, sc);
      bidir(c, b);
      latency_points(c, b);
      strided(c, b, region);
    } else {
      bulk(c, b, direction::put, bulk_scopes[0]);
    }
    two_sided_points(c, b);
  }
  step_points(c, h, region);
  collective_points(c, h, region); // last: they overwrite src

  set_step("teardown");
  close_heap(c, h);
  return c.finish();
}
