// symm/detail/collective_device.hpp: the collectives in device code — the data movement of each collective for a
// group of threads (rank of count), and the kernel that host code launches on a stream (CUDA backend). On the nvshmem
// backend, a team with a PE reached only through NVSHMEM RMA runs NVSHMEM's collectives instead
// (detail/backend/nvshmem/collectives.hpp).
//
// Data moves in 16-byte vectors where the buffers allow it (every PE's copy of a buffer has the same offset, so one
// PE's alignment is every PE's), four vectors in flight per thread, consecutive threads on consecutive vectors; a
// reduction folds the PEs' values in team order in registers and stores the result once to each destination.
#pragma once

#include <symm/detail/collective_common.hpp>
#include <symm/detail/collective_plan.hpp>

#if SYMM_CUDA_COMPILATION()
#  include <symm/detail/backend/nvshmem/collectives.hpp>
#  include <symm/detail/device_copy.hpp>
#  include <symm/detail/device_wait.hpp>
#  include <symm/group.hpp>
#  include <symm/team.hpp>

#  include <cooperative_groups.h>
#  include <cuda/atomic>

#  include <cstdio>

SYMM_BEGIN_NAMESPACE
namespace detail {

template <class T>
inline constexpr bool device_vectorizable =
    16 % sizeof(T) == 0 && std::is_trivially_default_constructible_v<T>&& std::is_trivially_copyable_v<T>;

//! Lane-wise op over two 16-byte vectors of T.
template <class T, class Op>
SYMM_DEVICE SYMM_FORCEINLINE uint4 combine_vectors(const uint4& a, const uint4& b, const Op& op) {
  constexpr int lanes = static_cast<int>(16 / sizeof(T));
  T x[lanes], y[lanes];
  __builtin_memcpy(x, &a, 16);
  __builtin_memcpy(y, &b, 16);
#  pragma unroll
  for (int i = 0; i < lanes; ++i)
    x[i] = static_cast<T>(op(x[i], y[i]));
  uint4 r;
  __builtin_memcpy(&r, x, 16);
  return r;
}

SYMM_DEVICE SYMM_FORCEINLINE bool aligned16(const void* p) {
  return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0;
}

//! The group (rank of count) folds in(0)[i] op ... op in(n_in - 1)[i] for i in [0, m) and stores the result at
//! out(j)[i] for every j < n_out. in(k) and out(j) give element 0 of each range; each element is read and written by
//! one thread only, so an output may be one of the inputs (in place). With n_in == 1 it is a copy to n_out places.
template <class T, class Op, class In, class Out>
SYMM_DEVICE SYMM_FORCEINLINE void device_reduce(unsigned rank, unsigned count, const Op& op, const In& in, int n_in,
                                                const Out& out, int n_out, std::size_t m) {
  std::size_t done = 0;
  if constexpr (device_vectorizable<T>) {
    if (aligned16(in(0)) && aligned16(out(0))) {
      constexpr std::size_t lanes = 16 / sizeof(T);
      const std::size_t vectors = m / lanes, stride = count;
      std::size_t v = rank;
      for (; v + 3 * stride < vectors; v += 4 * stride) {
        uint4 acc[4];
        const auto* p = reinterpret_cast<const uint4*>(in(0));
#  pragma unroll
        for (int u = 0; u < 4; ++u)
          acc[u] = p[v + u * stride];
        for (int k = 1; k < n_in; ++k) {
          const auto* q = reinterpret_cast<const uint4*>(in(k));
          uint4 x[4];
#  pragma unroll
          for (int u = 0; u < 4; ++u)
            x[u] = q[v + u * stride];
#  pragma unroll
          for (int u = 0; u < 4; ++u)
            acc[u] = combine_vectors<T>(acc[u], x[u], op);
        }
        for (int j = 0; j < n_out; ++j) {
          auto* o = reinterpret_cast<uint4*>(out(j));
#  pragma unroll
          for (int u = 0; u < 4; ++u)
            o[v + u * stride] = acc[u];
        }
      }
      for (; v < vectors; v += stride) {
        uint4 acc = reinterpret_cast<const uint4*>(in(0))[v];
        for (int k = 1; k < n_in; ++k)
          acc = combine_vectors<T>(acc, reinterpret_cast<const uint4*>(in(k))[v], op);
        for (int j = 0; j < n_out; ++j)
          reinterpret_cast<uint4*>(out(j))[v] = acc;
      }
      done = vectors * lanes;
    }
  }
  for (std::size_t i = done + rank; i < m; i += count) {
    T acc = in(0)[i];
    for (int k = 1; k < n_in; ++k)
      acc = static_cast<T>(op(acc, in(k)[i]));
    for (int j = 0; j < n_out; ++j)
      out(j)[i] = acc;
  }
}

//! One collective's data movement on this PE, for a group of threads, between the barriers. Trivially copyable: the
//! stream kernel takes it as its argument.
template <collective_id C, class T, class Op>
struct collective_body {
  team_ref team;
  sym_buffer<T> dst;
  sym_buffer<const T> src;
  Op op;
  int root; //!< team numbering; broadcast and reduce only
  bool two_shot;

  //! Whether this PE stores into other PEs' memory (then the exit barrier completes the stores first).
  [[nodiscard]] SYMM_HOST_DEVICE bool pushes() const noexcept { return two_shot; }

  SYMM_DEVICE void operator()(unsigned rank, unsigned count) const {
    const int n = team.n_pes(), me = team.my_pe();
    T* const mine = dst.on(team.world_my_pe());
    if constexpr (C == collective_id::broadcast || C == collective_id::reduce || C == collective_id::allreduce) {
      const auto src_of = [&](int k) { return src.on(team.world_pe(k)); };
      if (!two_shot) {
        if constexpr (C == collective_id::broadcast) {
          const T* from = src_of(root);
          if (from != mine)
            device_reduce<T>(
                rank, count, op, [&](int) { return from; }, 1, [&](int) { return mine; }, 1, dst.size);
        } else {
          if (C == collective_id::reduce && me != root) return;
          device_reduce<T>(
              rank, count, op, src_of, n, [&](int) { return mine; }, 1, dst.size);
        }
      } else {
        const index_range chunk = chunk_of(dst.size, n, me, vector_granule<T>);
        if (chunk.size == 0) return;
        const auto out = [&](int j) {
          return dst.on(team.world_pe(C == collective_id::reduce ? root : j)) + chunk.begin;
        };
        const int n_out = C == collective_id::reduce ? 1 : n;
        if constexpr (C == collective_id::broadcast) {
          const T* from = src_of(root) + chunk.begin;
          device_reduce<T>(
              rank, count, op, [&](int) { return from; }, 1, out, n_out, chunk.size);
        } else {
          device_reduce<T>(
              rank, count, op, [&](int k) { return src_of(k) + chunk.begin; }, n, out, n_out, chunk.size);
        }
      }
    } else if constexpr (C == collective_id::reduce_scatter) {
      const std::size_t m = dst.size, shift = static_cast<std::size_t>(me) * m;
      device_reduce<T>(
          rank, count, op, [&](int k) { return src.on(team.world_pe(k)) + shift; }, n, [&](int) { return mine; }, 1, m);
    } else { // fcollect, alltoall: block k of dst comes from PE k (its src, or block me of its src)
      const std::size_t m = C == collective_id::fcollect ? src.size : src.size / static_cast<std::size_t>(n);
      const std::size_t shift = C == collective_id::fcollect ? 0 : static_cast<std::size_t>(me) * m;
      if (m == 0) return;
      const std::size_t total = m * static_cast<std::size_t>(n);
      if (total * sizeof(T) <= static_cast<std::size_t>(count) * 16 && total <= static_cast<std::size_t>(count) * 4) {
        // Small: at most 16 bytes and 4 elements per thread (each an index division) over all blocks at once, so that
        // the n peers' loads are in flight together; the second bound keeps 1- and 2-byte elements off this path at
        // sizes where they would take 8-16 each.
        for (std::size_t f = rank; f < total; f += count) {
          const int k = static_cast<int>(f / m);
          mine[f] = src.on(team.world_pe(k))[shift + f % m];
        }
      } else {
        for (int j = 1; j <= n; ++j) { // start after this PE, so that the PEs do not all read PE 0 first
          const int k = (me + j) % n;
          group_copy(rank, count, mine + static_cast<std::size_t>(k) * m, src.on(team.world_pe(k)) + shift,
                     m * sizeof(T));
        }
      }
    }
  }
};

//! Device-side argument checks (SYMM_CHECK >= 1): a trap, with the sizes printed at SYMM_CHECK >= 2.
SYMM_DEVICE inline void device_check_collective(collective_id c, std::size_t dst, std::size_t src, int n, int root) {
  if constexpr (SYMM_CHECK_LEVEL(1)) {
    const std::size_t pes = static_cast<std::size_t>(n);
    bool ok = true;
    switch (c) {
      case collective_id::broadcast:
      case collective_id::reduce:
      case collective_id::allreduce: ok = dst == src; break;
      case collective_id::fcollect: ok = dst == pes * src; break;
      case collective_id::alltoall: ok = dst == src && src % pes == 0; break;
      case collective_id::reduce_scatter: ok = src == pes * dst; break;
    }
    if ((c == collective_id::broadcast || c == collective_id::reduce) && (root < 0 || root >= n)) ok = false;
    if (!ok) {
      if constexpr (SYMM_CHECK_LEVEL(2)) {
        ::printf("symm: %s in device code: dst has %llu and src %llu elements on a team of %d PEs, root %d: the sizes "
                 "or the root do not fit (block %d, thread %d)\n",
                 collective_name(c), static_cast<unsigned long long>(dst), static_cast<unsigned long long>(src), n,
                 root, static_cast<int>(blockIdx.x), static_cast<int>(threadIdx.x));
      }
      __trap();
    }
  }
}

//! A collective from device code: one group per PE, the team's device barrier on `channel` before and after.
template <collective_id C, class Group, class T, class Op>
SYMM_DEVICE void device_collective(const Group& group, const team_ref& t, sym_buffer<T> dst, sym_buffer<const T> src,
                                   const Op& op, int root, int channel) {
  device_check_collective(C, dst.size, src.size, t.n_pes(), root);
#  if SYMM_NVSHMEM_BACKEND()
  if (t.rma_peer()) { // symm's loads and stores cannot reach the team's PEs: NVSHMEM's collective, `channel` unused
    // NVSHMEM's waits do not read symm's failure word (detail/device_wait.hpp): a dead peer ends them as NVSHMEM's.
    nvshmem_device_collective<C>(group, t, dst, src, op, root);
    return;
  }
#  endif
  const collective_body<C, T, Op> body{t, dst, src, op, root, use_two_shot(C, dst.bytes(), dst.offset == src.offset)};
  symm::sync_all(group, t, channel); // every PE's src is ready
  body(static_cast<unsigned>(group.thread_rank()), static_cast<unsigned>(group.num_threads()));
  // Every PE has finished reading this PE's src, and this PE's dst is complete; stores into peers are completed first.
  if (body.pushes()) symm::barrier_all(group, t, channel);
  else symm::sync_all(group, t, channel);
}

//! Where the stream kernels' barrier rounds count: symm's own flags (world_state::collective_flags_offset()). For a
//! team of at most `inline_pes` PEs the kernel's parameters carry each team PE's flag area as this PE maps it, as the
//! hand-written kernels carry their flag pointers: a round's first store then waits on no load of the peer table (a
//! dependent global load that a replayed graph pays at every launch). A larger team reads the table.
struct collective_flags {
  static constexpr int inline_pes = 32;

  std::size_t offset = 0;               //!< the flags' heap offset
  std::uint64_t* area[inline_pes] = {}; //!< team PE i's flags (channel 0); set when `inlined`
  bool inlined = false;

  //! The flags of team `t` at heap offset `offset`, read from this PE's host copy of the peer table.
  static collective_flags of(const team_ref& t, std::size_t offset) noexcept {
    collective_flags f;
    f.offset = offset;
    f.inlined = t.n_pes() <= inline_pes;
    if (f.inlined) {
      for (int i = 0; i < t.n_pes(); ++i)
        f.area[i] = t.pair_flags(t.world_pe(i), offset, 0);
    }
    return f;
  }

  //! Channel `channel`'s flags on team PE `team_pe` (inline areas only).
  [[nodiscard]] SYMM_DEVICE SYMM_FORCEINLINE std::uint64_t*
  inline_on(const team_ref& t, int team_pe, int channel) const noexcept {
    std::uint64_t* const flags =
        area[team_pe] + static_cast<std::size_t>(channel) * 2 * static_cast<std::size_t>(t.world_n_pes());
    // A team whose collectives run here has no PE reached by NVSHMEM RMA: every area is a peer mapping (global).
    __builtin_assume(__isGlobal(flags));
    return flags;
  }
};

//! One barrier round of the stream kernels, on symm's own flags, laid out and counted per pair of PEs like the teams'
//! device barriers: block b of every PE of the team meets on channel b.
template <class Group>
SYMM_DEVICE void
collective_flags_round(const Group& group, const team_ref& t, const collective_flags& flags, int channel) {
  constexpr const char* what = "a symm collective on a stream (do collectives of teams that share PEs run at once on "
                               "different streams?)";
  sync_group(group);
  // Two copies of the round, chosen once: a choice per flag address would leave the table read (predicated off) and
  // generic accesses in the inline round's loop.
  // The heap base (for the failure word) from what each copy already holds: no extra table read in the inline one.
  if (flags.inlined) {
    pair_barrier_round(
        group, t, [&](int team_pe, int) { return flags.inline_on(t, team_pe, channel); }, what,
        reinterpret_cast<const std::byte*>(flags.area[t.my_pe()]) - flags.offset);
  } else {
    pair_barrier_round(
        group, t, [&](int, int world_pe) { return t.pair_flags(world_pe, flags.offset, channel); }, what,
        t.local_heap());
  }
}

//! The kernel of a host-issued collective: block b of each PE handles its share of the data (the grid's threads share
//! the work) between two barrier rounds on channel b of symm's collective flags. Once this PE's kernel has ended,
//! every block of every PE of the team has passed its exit round: the data is complete, and every src was read.
template <class Body>
__global__ void __launch_bounds__(collective_stream_threads)
    collective_stream_kernel(Body body, collective_flags flags) {
  const auto block = cooperative_groups::this_thread_block();
  const int channel = static_cast<int>(blockIdx.x);
  collective_flags_round(block, body.team, flags, channel);
  body(blockIdx.x * blockDim.x + threadIdx.x, gridDim.x * blockDim.x);
  // Stores into peers (pushes()) are completed by the round's release fence, cumulative through its block barrier.
  collective_flags_round(block, body.team, flags, channel);
}

} // namespace detail
SYMM_END_NAMESPACE
#endif
