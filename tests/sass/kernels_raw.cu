// tests/sass/kernels_raw.cu: the kernels of kernels_symm.cu written without symm, as a hand-written CUDA IPC program
// does it: the peer table (`peers[p]` is PE p's heap base in this process's mapping, in device memory), the
// object's byte offset in the heap, the PE and the element count are kernel arguments, and the remote address is
// computed once by hand. `local` is this PE's part (symm's array_ref carries it precomputed too).
//
// RAW_PE_CHECK: 1 adds the same PE range check as symm::remote() at SYMM_CHECK >= 1 (one per remote address
// computation, written where a careful hand-written program would put it: once, before the loop).
#include <cooperative_groups.h>
#include <cuda/atomic>

#include <cstddef>
#include <cstdint>
#include <cstdio>

#ifndef RAW_PE_CHECK
#  define RAW_PE_CHECK 1
#endif

namespace cg = cooperative_groups;

namespace {
__device__ __forceinline__ void check_pe(int pe, int n_pes) {
  if constexpr (RAW_PE_CHECK) {
    if (pe < 0 || pe >= n_pes) __trap();
  }
}
template <class T>
__device__ __forceinline__ T* at(void* const* peers, int pe, std::size_t offset_bytes) {
  return reinterpret_cast<T*>(static_cast<unsigned char*>(peers[pe]) + offset_bytes);
}
} // namespace

extern "C" __global__ void p_loop(void* const* peers, std::size_t offset_bytes, int pe, int n_pes, float* local,
                                  std::size_t n) {
  check_pe(pe, n_pes);
  float* dst = at<float>(peers, pe, offset_bytes);
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    dst[i] = local[i] * 2.0f;
  }
}

extern "C" __global__ void g_loop(void* const* peers, std::size_t offset_bytes, int pe, int n_pes, float* local,
                                  std::size_t n) {
  check_pe(pe, n_pes);
  const float* src = at<float>(peers, pe, offset_bytes);
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    local[i] = src[i] + 1.0f;
  }
}

extern "C" __global__ void
single_p(void* const* peers, std::size_t offset_bytes, int pe, int n_pes, std::size_t i, float v) {
  check_pe(pe, n_pes);
  at<float>(peers, pe, offset_bytes)[i] = v;
}
extern "C" __global__ void
single_g(void* const* peers, std::size_t offset_bytes, int pe, int n_pes, float* local, std::size_t i) {
  check_pe(pe, n_pes);
  local[i] = at<float>(peers, pe, offset_bytes)[i];
}

// The block copy a careful hand-written program uses: 16-byte vectors, four in flight per thread, coalesced across the
// block, then the tail bytes; for other alignments (out of line) the widest vector both pointers allow after a byte
// head. It has detail::group_copy's structure on purpose: the question is whether symm adds anything around it.
namespace {
template <bool FourInFlight = true, class V>
__device__ __forceinline__ void
vectors(unsigned rank, unsigned count, V* __restrict__ dst, const V* __restrict__ src, std::size_t n) {
  std::size_t i = rank;
  const std::size_t stride = count;
  if constexpr (FourInFlight) {
#pragma unroll 1
    for (; i + 3 * stride < n; i += 4 * stride) {
      V a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
      dst[i] = a;
      dst[i + stride] = b;
      dst[i + 2 * stride] = c;
      dst[i + 3 * stride] = d;
    }
  }
#pragma unroll 1
  for (; i < n; i += stride)
    dst[i] = src[i];
}
__device__ __forceinline__ void
bytes_(unsigned rank, unsigned count, unsigned char* dst, const unsigned char* src, std::size_t n) {
#pragma unroll 1
  for (std::size_t i = rank; i < n; i += count)
    dst[i] = src[i];
}
template <std::size_t W, class V>
__device__ __forceinline__ void
aligned(unsigned rank, unsigned count, unsigned char* dst, const unsigned char* src, std::size_t n) {
  std::size_t head = (W - (reinterpret_cast<std::uintptr_t>(dst) & (W - 1))) & (W - 1);
  head = head < n ? head : n;
  bytes_(rank, count, dst, src, head);
  std::size_t v = (n - head) / W;
  vectors<false>(rank, count, reinterpret_cast<V*>(dst + head), reinterpret_cast<const V*>(src + head), v);
  std::size_t done = head + v * W;
  bytes_(rank, count, dst + done, src + done, n - done);
}
__device__ __noinline__ void
unaligned_copy(unsigned rank, unsigned count, unsigned char* dst, const unsigned char* src, std::size_t n) {
  auto mis = reinterpret_cast<std::uintptr_t>(dst) ^ reinterpret_cast<std::uintptr_t>(src);
  if ((mis & 15) == 0) aligned<16, int4>(rank, count, dst, src, n);
  else if ((mis & 7) == 0) aligned<8, int2>(rank, count, dst, src, n);
  else if ((mis & 3) == 0) aligned<4, int>(rank, count, dst, src, n);
  else bytes_(rank, count, dst, src, n);
}
// Both 16-byte aligned: vectors and a byte tail inline; anything else out of line.
__device__ __forceinline__ void block_copy(unsigned rank, unsigned count, void* dst_, const void* src_, std::size_t n) {
  auto* dst = static_cast<unsigned char*>(dst_);
  auto* src = static_cast<const unsigned char*>(src_);
  if (((reinterpret_cast<std::uintptr_t>(dst) | reinterpret_cast<std::uintptr_t>(src)) & 15) == 0) [[likely]] {
    const std::size_t v = n / 16, done = v * 16;
    vectors(rank, count, reinterpret_cast<int4*>(dst), reinterpret_cast<const int4*>(src), v);
    bytes_(rank, count, dst + done, src + done, n - done);
    return;
  }
  unaligned_copy(rank, count, dst, src, n);
}
} // namespace

extern "C" __global__ void
block_put(void* const* peers, std::size_t offset_bytes, int pe, int n_pes, float* local, std::size_t n) {
  check_pe(pe, n_pes);
  auto block = cg::this_thread_block();
  block_copy(block.thread_rank(), block.num_threads(), at<float>(peers, pe, offset_bytes), local, n * sizeof(float));
  block.sync();
}
extern "C" __global__ void
block_get(void* const* peers, std::size_t offset_bytes, int pe, int n_pes, float* local, std::size_t n) {
  check_pe(pe, n_pes);
  auto block = cg::this_thread_block();
  block_copy(block.thread_rank(), block.num_threads(), local, at<float>(peers, pe, offset_bytes), n * sizeof(float));
  block.sync();
}

extern "C" __global__ void
ring_loop(void* const* peers, std::size_t offset_bytes, int my_pe, int n_pes, float* local, std::size_t n) {
  const int right = (my_pe + 1) % n_pes;
  check_pe(right, n_pes);
  float* dst = at<float>(peers, right, offset_bytes);
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    dst[i] = local[i];
}

extern "C" __global__ void scalar_p(void* const* peers, std::size_t offset_bytes, int pe, int n_pes, int v) {
  check_pe(pe, n_pes);
  *at<int>(peers, pe, offset_bytes) = v;
}

extern "C" __global__ void
p_quiet_loop(void* const* peers, std::size_t offset_bytes, int pe, int n_pes, int mask, long long iters) {
  check_pe(pe, n_pes);
  int* dst = at<int>(peers, pe, offset_bytes);
  for (long long i = 0; i < iters; ++i) {
    dst[i & mask] = static_cast<int>(i);
    __threadfence_system();
  }
}

extern "C" __global__ void warp_put_loop(void* const* peers, std::size_t offset_bytes, int pe, int n_pes, float* local,
                                         std::size_t n, long long iters) {
  check_pe(pe, n_pes);
  auto warp = cg::tiled_partition<32>(cg::this_thread_block());
  float* dst = at<float>(peers, pe, offset_bytes);
  for (long long it = 0; it < iters; ++it) {
    block_copy(warp.thread_rank(), warp.num_threads(), dst, local, n * sizeof(float));
    asm volatile("" ::: "memory");
  }
}

// The device barrier of a careful hand-written program (as detail::barrier_round): the channel's flags of PE pe are
// n arrival words and an epoch at system_offset + channel * (n + 1) words in pe's heap; thread `rank` signals and
// awaits PEs me + 1 + rank, me + 1 + rank + count, ... (mod n), with a release fence before its stores and acquire
// polls bounded by a timer and by a failure word the host writes when a peer dies (its address at the start of this
// PE's heap), read where the timer is. A wait that gives up claims a word of the heap's header, writes why into a
// record in mapped host memory (the failure word is its first member) and traps: no call, which would slow every fence.
namespace {
constexpr unsigned long long raw_wait_timeout_ns = 20000000000ull;
struct alignas(16) raw_trap_record {
  unsigned failure_code, state, reason;
  int pe, peer;
  unsigned block, thread, reported;
  unsigned long long seen, wanted, timeout_ms;
  char what[96];
};
[[noreturn]] __device__ __forceinline__ void
raw_give_up(const unsigned char* heap, unsigned reason, const char* what, int me, int peer, unsigned long long seen = 0,
            unsigned long long want = 0) {
  raw_trap_record* record = *reinterpret_cast<raw_trap_record* const*>(heap);
  if (record != nullptr) {
    auto* claim = reinterpret_cast<unsigned*>(const_cast<unsigned char*>(heap) + 8);
    if (cuda::atomic_ref<unsigned, cuda::thread_scope_device>(*claim).exchange(1u, cuda::memory_order_relaxed) == 0) {
      record->reason = reason;
      record->pe = me;
      record->peer = peer;
      record->block = blockIdx.x;
      record->thread = threadIdx.x;
      record->seen = seen;
      record->wanted = want;
      record->timeout_ms = raw_wait_timeout_ns / 1000000;
      std::size_t i = 0;
#pragma unroll 1
      for (; i + 1 < sizeof(record->what) && what != nullptr && what[i] != '\0'; ++i)
        record->what[i] = what[i];
      record->what[i] = '\0';
      cuda::atomic_ref<unsigned, cuda::thread_scope_system>(record->state).store(1u, cuda::memory_order_release);
    }
  }
  __trap();
  __builtin_unreachable();
}
__device__ __forceinline__ unsigned long long raw_timer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ void raw_store_relaxed_sys(unsigned long long* p, unsigned long long v) {
  asm volatile("st.relaxed.sys.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ unsigned long long raw_load_acquire_sys(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.acquire.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void raw_fence_release_sys() {
  asm volatile("fence.release.sys;" ::: "memory");
}
// The failed PE the host side wrote (failed PE + 1) into the word whose address lies at the start of this PE's heap
// (`heap`), or -1: two loads, the second at system scope (the host writes the word while kernels run).
__device__ __forceinline__ int raw_failed_peer(const unsigned char* heap) {
  const unsigned* word = *reinterpret_cast<const unsigned* const*>(heap);
  if (word == nullptr) return -1;
  unsigned code;
  asm volatile("ld.relaxed.sys.global.u32 %0, [%1];" : "=r"(code) : "l"(word) : "memory");
  return static_cast<int>(code) - 1;
}
// Acquire polls of `word` until it reaches `want`; the timer and the failure word are read every 1024 polls.
__device__ __forceinline__ void raw_wait_for_count(const unsigned long long* word, unsigned long long want, int me,
                                                   int peer, const unsigned char* heap) {
  unsigned long long start = 0, seen;
  for (unsigned polls = 1; (seen = raw_load_acquire_sys(word)) < want; ++polls) {
    if ((polls & 1023u) != 0) continue;
    const unsigned long long now = raw_timer_ns();
    if (start == 0) start = now;
    const bool late = now - start > raw_wait_timeout_ns;
    const int failed = late ? -1 : raw_failed_peer(heap);
    if (late || failed >= 0) raw_give_up(heap, late ? 2 : 3, "barrier", me, late ? peer : failed, seen, want);
  }
}
} // namespace

extern "C" __global__ void
barrier_block_loop(void* const* peers, std::size_t system_offset, int me, int n, int channel, long long iters) {
  auto block = cg::this_thread_block();
  const auto flags = [&](int pe) {
    return reinterpret_cast<unsigned long long*>(static_cast<unsigned char*>(peers[pe]) + system_offset) +
           static_cast<std::size_t>(channel) * (static_cast<std::size_t>(n) + 1);
  };
  const int rank = static_cast<int>(block.thread_rank()), count = static_cast<int>(block.num_threads());
  __syncthreads();
  unsigned long long* mine = flags(me);
  const unsigned char* heap = static_cast<const unsigned char*>(peers[me]);
  unsigned long long* first_remote = nullptr;
  int first_peer = -1;
  if (rank < n - 1) {
    first_peer = (me + 1 + rank) % n;
    first_remote = flags(first_peer) + me;
  }
  unsigned long long epoch = mine[n];
  const auto next = [&](int p) { return p + count >= n ? p + count - n : p + count; };
  for (long long i = 0; i < iters; ++i) {
    __syncthreads();
    ++epoch;
    if (first_remote != nullptr) {
      raw_fence_release_sys();
      raw_store_relaxed_sys(first_remote, epoch);
      int peer = first_peer;
      for (int k = rank + count; k < n - 1; k += count) {
        peer = next(peer);
        raw_store_relaxed_sys(flags(peer) + me, epoch);
      }
      peer = first_peer;
      for (int k = rank; k < n - 1; k += count) {
        raw_wait_for_count(&mine[peer], epoch, me, peer, heap);
        peer = next(peer);
      }
    }
    __syncthreads();
  }
  __syncthreads();
  if (rank == 0) mine[n] = epoch;
}

// A hand-written stream barrier over a strided team (world PEs start + i * stride), counted per pair of PEs in device
// memory as a graph-replayable barrier must be: the flags of PE pe are world_n arrival counts (word q: q's arrivals at
// pe) followed by pe's own counts of its arrivals at each PE. Each team PE's flag area comes in the parameters for
// teams of up to 32 PEs; larger teams read it from the peer table. Thread i serves team PE i.
struct raw_flag_areas {
  std::size_t offset;
  unsigned long long* area[32];
  bool inlined;
};
namespace {
// One round: flags_of(i, pe) is team PE i's (world PE pe's) flag area.
template <class FlagsOf>
__device__ __forceinline__ void raw_stream_round(const FlagsOf& flags_of, int start, int stride, int n, int my_index,
                                                 int world_me, int world_n, std::size_t flags_offset) {
  auto block = cg::this_thread_block();
  const int rank = static_cast<int>(block.thread_rank()), count = static_cast<int>(block.num_threads());
  __syncthreads();
  unsigned long long* mine = flags_of(my_index, world_me);
  const unsigned char* heap = reinterpret_cast<const unsigned char*>(mine) - flags_offset; // this PE's heap base
  unsigned long long* sent = mine + world_n;
  if (rank < n) raw_fence_release_sys();
  for (int i = rank; i < n; i += count) {
    const int p = start + i * stride;
    if (p == world_me) continue;
    const unsigned long long arrivals = ++sent[p];
    raw_store_relaxed_sys(flags_of(i, p) + world_me, arrivals);
  }
  for (int i = rank; i < n; i += count) {
    const int p = start + i * stride;
    if (p == world_me) continue;
    raw_wait_for_count(&mine[p], sent[p], world_me, p, heap);
  }
  __syncthreads();
}
} // namespace

// The round, chosen once per launch: the inline areas, or the table for larger teams.
extern "C" __global__ void stream_barrier_round(void* const* peers, int start, int stride, int n, int my_index,
                                                int world_me, int world_n, raw_flag_areas flags) {
  if (flags.inlined) {
    raw_stream_round([&](int i, int) { return flags.area[i]; }, start, stride, n, my_index, world_me, world_n,
                     flags.offset);
  } else {
    raw_stream_round(
        [&](int, int pe) {
          return reinterpret_cast<unsigned long long*>(static_cast<unsigned char*>(peers[pe]) + flags.offset);
        },
        start, stride, n, my_index, world_me, world_n, flags.offset);
  }
}

// The same with the flag addresses inline only (teams of up to 32 PEs).
extern "C" __global__ void stream_barrier_round_inline(
    void* const*, int start, int stride, int n, int my_index, int world_me, int world_n, raw_flag_areas flags) {
  raw_stream_round([&](int i, int) { return flags.area[i]; }, start, stride, n, my_index, world_me, world_n,
                   flags.offset);
}

// A column of a rows x cols row-major grid, written by hand: element i is cols elements after element i - 1 on both
// sides; a column that is one contiguous run (cols == 1, or one row) goes through the vector copy, as symm's does.
extern "C" __global__ void md_column_put(void* const* peers, std::size_t offset_bytes, int pe, int n_pes, float* local,
                                         int rows, int cols, int to, int from) {
  check_pe(pe, n_pes);
  float* dst = at<float>(peers, pe, offset_bytes) + to;
  const float* src = local + from;
  auto block = cg::this_thread_block();
  if (cols == 1 || rows <= 1) {
    block_copy(block.thread_rank(), block.num_threads(), dst, src, static_cast<std::size_t>(rows) * sizeof(float));
    return;
  }
  for (std::size_t i = block.thread_rank(); i < static_cast<std::size_t>(rows); i += block.num_threads())
    dst[i * static_cast<std::size_t>(cols)] = src[i * static_cast<std::size_t>(cols)];
}
