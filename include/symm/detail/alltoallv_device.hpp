// symm/detail/alltoallv_device.hpp: the stream alltoallv's kernel (symm/alltoallv.hpp), whose counts exist only in
// device memory: each PE pulls, from every team PE, the rows that PE sends it, reading the counts from the senders'
// symmetric send_counts, between two barrier rounds on symm's collective flags (like the stream collectives). What a
// receiver finds wrong (rows beyond its dst's capacity, counts that run past a sender's src) it never copies and
// records in its status words, which the host reads when the call's future completes.
#pragma once

#include <symm/detail/collective_common.hpp>

#include <cstdint>

SYMM_BEGIN_NAMESPACE
namespace detail {

//! What a PE's stream alltoallv found wrong, in the PE's status words (world_state::status_offset()). Only the first
//! problem since the host last read them is kept (`problem` goes from none once); the host clears them after reading.
struct alltoallv_status {
  enum : unsigned long long { none = 0, over_capacity = 1, past_source = 2 };
  unsigned long long problem;     //!< none, over_capacity or past_source
  unsigned long long pe;          //!< the sending PE (world numbering)
  unsigned long long count;       //!< its count for this PE
  unsigned long long rows_before; //!< over_capacity: rows from the PEs before it; past_source: rows it sends before
  unsigned long long rows;        //!< over_capacity: dst's capacity in rows; past_source: the rows of src
  unsigned long long row_length;  //!< elements per row
};
static_assert(sizeof(alltoallv_status) <= 256, "the status lives in world_state's status words");

//! Sum that stops at the largest value instead of wrapping around, so that no count can make a bad range look good.
SYMM_HOST_DEVICE constexpr std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) noexcept {
  return a + b < a ? ~std::uint64_t{0} : a + b;
}

} // namespace detail
SYMM_END_NAMESPACE

#if SYMM_CUDA_COMPILATION()
#  include <symm/detail/collective_device.hpp>
#  include <symm/detail/device_copy.hpp>

#  include <cooperative_groups.h>
#  include <cuda/atomic>

SYMM_BEGIN_NAMESPACE
namespace detail {

//! The stream alltoallv's arguments, by value.
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

//! Records the first problem of this PE since the host last looked; later ones are dropped.
SYMM_DEVICE inline void record_alltoallv_problem(
    alltoallv_status* status, unsigned long long problem, int pe, std::uint64_t count, std::uint64_t rows_before,
    std::uint64_t rows, std::size_t row_length) {
  cuda::atomic_ref<unsigned long long, cuda::thread_scope_device> first(status->problem);
  unsigned long long expected = alltoallv_status::none;
  if (!first.compare_exchange_strong(expected, problem, cuda::memory_order_relaxed)) return;
  status->pe = static_cast<unsigned long long>(pe);
  status->count = count;
  status->rows_before = rows_before;
  status->rows = rows;
  status->row_length = row_length;
}

//! Dynamic shared memory of the kernel: three words per team PE.
SYMM_HOST_DEVICE constexpr std::size_t alltoallv_shared_bytes(int n_pes) noexcept {
  return 3 * static_cast<std::size_t>(n_pes) * sizeof(std::uint64_t);
}

//! The kernel: every block meets the same block of every team PE at entry (their counts and src are ready) and exit
//! (every PE has read this PE's counts and src). In between each block works out, for every team PE k, how many of
//! its rows come here, where they start in k's src and where they go in dst (the same table in every block), and the
//! grid copies them, starting after this PE so that the PEs do not all read PE 0 first. Block 0 writes recv_counts
//! and the status.
template <class T>
__global__ void __launch_bounds__(collective_stream_threads)
    alltoallv_stream_kernel(alltoallv_args<T> a, std::size_t flags_offset) {
  extern __shared__ std::uint64_t table[]; // [k]: rows to copy; [n + k]: first row in k's src; [2n + k]: first here
  const auto block = cooperative_groups::this_thread_block();
  const int channel = static_cast<int>(blockIdx.x);
  collective_flags_round(block, a.team, flags_offset, channel);
  const int n = a.team.n_pes(), me = a.team.my_pe();
  std::uint64_t* const rows_of = table;
  std::uint64_t* const first_there = table + n;
  std::uint64_t* const first_here = table + 2 * n;
  for (int k = static_cast<int>(threadIdx.x); k < n; k += static_cast<int>(blockDim.x)) {
    const std::uint64_t* counts = a.send_counts.on(a.team.world_pe(k));
    std::uint64_t before = 0;
    for (int j = 0; j < me; ++j)
      before = saturating_add(before, counts[j]);
    rows_of[k] = counts[me];
    first_there[k] = before;
  }
  block.sync();
  if (threadIdx.x == 0) {
    const std::uint64_t src_rows = a.src.size / a.row_length, capacity = a.dst.size / a.row_length;
    const bool reports = blockIdx.x == 0;
    std::uint64_t here = 0;
    for (int k = 0; k < n; ++k) {
      const std::uint64_t count = rows_of[k], before = first_there[k];
      if (reports) a.recv_counts[k] = count;
      std::uint64_t take = count;
      if (before > src_rows || count > src_rows - before) { // the sender's counts run past its src: none of it
        take = 0;
        if (reports) {
          record_alltoallv_problem(a.status, alltoallv_status::past_source, a.team.world_pe(k), count, before, src_rows,
                                   a.row_length);
        }
      }
      if (take > capacity - here) { // dst is full
        if (reports) {
          record_alltoallv_problem(a.status, alltoallv_status::over_capacity, a.team.world_pe(k), count, here, capacity,
                                   a.row_length);
        }
        take = capacity - here;
      }
      rows_of[k] = take;
      first_here[k] = here;
      here += take;
    }
  }
  block.sync();
  const unsigned rank = blockIdx.x * blockDim.x + threadIdx.x, count = gridDim.x * blockDim.x;
  T* const mine = a.dst.on(a.team.world_my_pe());
  for (int j = 1; j <= n; ++j) {
    const int k = (me + j) % n;
    if (rows_of[k] == 0) continue;
    group_copy(rank, count, mine + first_here[k] * a.row_length,
               a.src.on(a.team.world_pe(k)) + first_there[k] * a.row_length,
               static_cast<std::size_t>(rows_of[k]) * a.row_length * sizeof(T));
  }
  collective_flags_round(block, a.team, flags_offset, channel);
}

} // namespace detail
SYMM_END_NAMESPACE
#endif
