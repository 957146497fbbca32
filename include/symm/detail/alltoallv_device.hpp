// symm/detail/alltoallv_device.hpp: alltoallv in device code (symm/alltoallv.hpp) — the device form, which a group of
// each PE calls inside the user's kernel, and the stream form's kernel. Each PE pulls, from every team PE, the rows
// that PE sends it, reading the counts from the senders' symmetric send_counts. What a receiver finds wrong (rows
// beyond its dst's capacity, counts that run past a sender's src) it never copies: the device form returns it to the
// calling threads, the stream kernel records it in the PE's status words, which the host reads when the call's future
// completes.
#pragma once

#include <symm/detail/collective_common.hpp>

#include <cstdint>

SYMM_BEGIN_NAMESPACE

//! What an alltoallv from device code tells the threads that called it (public: symm/alltoallv.hpp): the rows
//! received, and the first problem found — rows that did not fit in dst, or that a sender's counts place past its
//! src; those rows were not moved.
struct alltoallv_result {
  enum class problem_kind : unsigned { none, over_capacity, past_source };
  std::uint64_t rows = 0;                    //!< rows written into dst
  problem_kind problem = problem_kind::none; //!< the first problem
  int pe = -1;                               //!< its sending PE (world numbering)
  std::uint64_t count = 0;                   //!< that PE's count for this PE
  std::uint64_t rows_before = 0;  //!< over_capacity: rows from the PEs before it; past_source: rows it sends before
  std::uint64_t rows_of_room = 0; //!< over_capacity: dst's capacity in rows; past_source: the rows of src
  [[nodiscard]] SYMM_HOST_DEVICE constexpr bool ok() const noexcept { return problem == problem_kind::none; }
};

namespace detail {

//! Sum that stops at the largest value instead of wrapping around, so that no count can make a bad range look good.
SYMM_HOST_DEVICE constexpr std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) noexcept {
  return a + b < a ? ~std::uint64_t{0} : a + b;
}

//! How many of the `count` rows team PE `pe` sends (from row `before` of its src, which holds `src_rows`) fit after the
//! `got.rows` rows already in dst (`capacity` rows): none when they run past its src, as many as fit otherwise. The
//! first problem goes into `got`, whose rows grow by the rows taken.
SYMM_HOST_DEVICE constexpr std::uint64_t
alltoallv_take(int pe, std::uint64_t count, std::uint64_t before, std::uint64_t src_rows, std::uint64_t capacity,
               alltoallv_result& got) noexcept {
  const auto note = [&](alltoallv_result::problem_kind kind, std::uint64_t rows_before, std::uint64_t room) {
    if (!got.ok()) return;
    got.problem = kind;
    got.pe = pe;
    got.count = count;
    got.rows_before = rows_before;
    got.rows_of_room = room;
  };
  if (before > src_rows || count > src_rows - before) {
    note(alltoallv_result::problem_kind::past_source, before, src_rows);
    return 0;
  }
  std::uint64_t take = count;
  if (take > capacity - got.rows) {
    note(alltoallv_result::problem_kind::over_capacity, got.rows, capacity);
    take = capacity - got.rows;
  }
  got.rows += take;
  return take;
}

//! A PE's status words (world_state::status_offset()) as the stream alltoallv uses them: `claimed` goes from 0 to 1
//! with the first problem since the host last read them, which `first` describes; the host clears both.
struct alltoallv_status {
  unsigned long long claimed;
  alltoallv_result first;
};
static_assert(sizeof(alltoallv_status) <= 256, "the status lives in world_state's status words");

} // namespace detail
SYMM_END_NAMESPACE

#if SYMM_CUDA_COMPILATION()
#  include <symm/detail/collective_device.hpp>
#  include <symm/detail/device_copy.hpp>

#  include <cooperative_groups.h>
#  include <cuda/atomic>

SYMM_BEGIN_NAMESPACE
namespace detail {

//! Row counts of one sender, as a receiver reads them from its send_counts.
struct alltoallv_share {
  std::uint64_t count;  //!< rows for this PE
  std::uint64_t before; //!< rows for the team PEs before this one, which precede them in its src
};

SYMM_DEVICE inline alltoallv_share
alltoallv_share_of(const sym_buffer<const std::uint64_t>& send_counts, const team_ref& t, int k) {
  const std::uint64_t* counts = send_counts.on(t.world_pe(k));
  const int me = t.my_pe();
  std::uint64_t before = 0;
  for (int j = 0; j < me; ++j)
    before = saturating_add(before, counts[j]);
  return {counts[me], before};
}

//! The device form's data movement, for threads rank..count of this PE, between the caller's barriers: every thread
//! reads the counts itself (a handful of words per PE, the same for every thread), rank 0 writes recv_counts.
template <class T>
SYMM_DEVICE alltoallv_result
device_alltoallv(unsigned rank, unsigned count, const team_ref& t, sym_buffer<T> dst, std::uint64_t* recv_counts,
                 sym_buffer<const T> src, sym_buffer<const std::uint64_t> send_counts, std::size_t row_length) {
  const std::uint64_t src_rows = src.size / row_length, capacity = dst.size / row_length;
  T* const mine = dst.on(t.world_my_pe());
  alltoallv_result got;
  for (int k = 0; k < t.n_pes(); ++k) {
    const alltoallv_share share = alltoallv_share_of(send_counts, t, k);
    if (rank == 0) recv_counts[k] = share.count;
    const std::uint64_t first_here = got.rows;
    const std::uint64_t take = alltoallv_take(t.world_pe(k), share.count, share.before, src_rows, capacity, got);
    if (take != 0) {
      group_copy(rank, count, mine + first_here * row_length, src.on(t.world_pe(k)) + share.before * row_length,
                 static_cast<std::size_t>(take) * row_length * sizeof(T));
    }
  }
  return got;
}

//! The stream form's arguments, by value.
template <class T>
struct alltoallv_args {
  team_ref team;
  sym_buffer<T> dst;
  sym_buffer<const T> src;
  sym_buffer<const std::uint64_t> send_counts;
  std::uint64_t* recv_counts; //!< this PE's, one per team PE (device memory)
  std::size_t row_length;
  alltoallv_status* status; //!< this PE's status words
};

//! Dynamic shared memory of the stream kernel: three words per team PE.
SYMM_HOST_DEVICE constexpr std::size_t alltoallv_shared_bytes(int n_pes) noexcept {
  return 3 * static_cast<std::size_t>(n_pes) * sizeof(std::uint64_t);
}

//! The stream kernel: every block meets the same block of every team PE at entry (their counts and src are ready) and
//! exit (every PE has read this PE's counts and src). In between each block reads the counts once into shared memory
//! and works out, for every team PE k, how many of its rows come here, where they start in k's src and where they go
//! in dst (the same table in every block); the grid copies them, starting after this PE so that the PEs do not all
//! read PE 0 first. Block 0 writes recv_counts and, on a problem, the status words.
template <class T>
__global__ void __launch_bounds__(collective_stream_threads)
    alltoallv_stream_kernel(alltoallv_args<T> a, collective_flags flags) {
  extern __shared__ std::uint64_t table[]; // [k]: rows to copy; [n + k]: first row in k's src; [2n + k]: first here
  const auto block = cooperative_groups::this_thread_block();
  const int channel = static_cast<int>(blockIdx.x);
  collective_flags_round(block, a.team, flags, channel);
  const int n = a.team.n_pes(), me = a.team.my_pe();
  std::uint64_t* const rows_of = table;
  std::uint64_t* const first_there = table + n;
  std::uint64_t* const first_here = table + 2 * n;
  for (int k = static_cast<int>(threadIdx.x); k < n; k += static_cast<int>(blockDim.x)) {
    const alltoallv_share share = alltoallv_share_of(a.send_counts, a.team, k);
    rows_of[k] = share.count;
    first_there[k] = share.before;
  }
  sync_group(block);
  if (threadIdx.x == 0) {
    const std::uint64_t src_rows = a.src.size / a.row_length, capacity = a.dst.size / a.row_length;
    alltoallv_result got;
    for (int k = 0; k < n; ++k) {
      if (blockIdx.x == 0) a.recv_counts[k] = rows_of[k];
      first_here[k] = got.rows;
      rows_of[k] = alltoallv_take(a.team.world_pe(k), rows_of[k], first_there[k], src_rows, capacity, got);
    }
    if (blockIdx.x == 0 && !got.ok()) {
      cuda::atomic_ref<unsigned long long, cuda::thread_scope_device> claimed(a.status->claimed);
      unsigned long long none = 0;
      if (claimed.compare_exchange_strong(none, 1, cuda::memory_order_relaxed)) a.status->first = got;
    }
  }
  sync_group(block);
  const unsigned rank = blockIdx.x * blockDim.x + threadIdx.x, count = gridDim.x * blockDim.x;
  T* const mine = a.dst.on(a.team.world_my_pe());
  for (int j = 1; j <= n; ++j) {
    const int k = (me + j) % n;
    if (rows_of[k] == 0) continue;
    group_copy(rank, count, mine + first_here[k] * a.row_length,
               a.src.on(a.team.world_pe(k)) + first_there[k] * a.row_length,
               static_cast<std::size_t>(rows_of[k]) * a.row_length * sizeof(T));
  }
  collective_flags_round(block, a.team, flags, channel);
}

} // namespace detail
SYMM_END_NAMESPACE
#endif
