// symm/alltoallv.hpp: the all-to-all whose PEs send each other different numbers of rows — mixture-of-experts dispatch
// and combine, where a router decides how many tokens go to each PE.
//
// Every team PE sends send_counts[k] rows of `row_length` elements to team PE k, taken one PE after another from the
// start of its src (the rows for team PE 0 first, then those for PE 1, ...). Every PE receives, contiguous by source
// in team order, the rows each PE sent it into dst, and learns in recv_counts how many came from whom: no PE needs to
// know another's counts before the call, because each reads them from the others' symmetric send_counts.
//
// dst's capacity is part of the call: rows that would not fit are never written. The PE whose dst is too small still
// finishes the collective with the others (so no PE is left waiting), then throws errc::extent_mismatch naming the
// sending PE, its count, the rows before it and the capacity; its recv_counts say what was sent.
//
// Two forms: from host code on the host backend (plain copies through the mapped heaps between the team's host
// barriers, like the host collectives), and on a stream on the GPU backends, with the counts in device memory (a
// kernel, detail/alltoallv_device.hpp; it can be recorded into a CUDA graph); and from device code, one group per PE
// inside the user's kernel, which returns what it found to the calling threads (alltoallv_result).
#pragma once

#include <symm/concepts.hpp>
#include <symm/detail/alltoallv_device.hpp>
#include <symm/detail/collective_common.hpp>
#include <symm/symmetric.hpp>
#include <symm/team.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <ranges>
#include <span>

SYMM_BEGIN_NAMESPACE

namespace detail {

//! The element of an alltoallv, as its agreement request carries it: size, then kind (type_kind) from bit 16.
template <class T>
constexpr std::int64_t alltoallv_element_code() noexcept {
  return static_cast<std::int64_t>(sizeof(T) & 0xffff) | static_cast<std::int64_t>(type_kind<T>()) << 16;
}

//! What one receiving PE found: the rows it took, and the first source whose rows did not fit (-1: none).
struct alltoallv_intake {
  std::size_t rows = 0;
  int overflow_from = -1;           //!< team index of the first PE whose rows did not all fit
  std::uint64_t overflow_count = 0; //!< that PE's count
  std::size_t rows_before = 0;      //!< rows from the PEs before it
};

//! This PE's share of an alltoallv on the host backend, between the barriers: for each team PE k in order, read its
//! count for this PE and the rows it sends to the PEs before this one from k's send_counts, and copy the rows that
//! fit in dst (capacity rows) from k's src.
template <class T>
alltoallv_intake
host_alltoallv_work(std::span<const int> members, int me, sym_buffer<T> dst, std::span<std::uint64_t> recv_counts,
                    sym_buffer<const T> src, sym_buffer<const std::uint64_t> send_counts, std::size_t row_length) {
  const std::size_t capacity = dst.size / row_length;
  T* into = dst.on(members[static_cast<std::size_t>(me)]);
  alltoallv_intake intake;
  for (std::size_t k = 0; k < members.size(); ++k) {
    const std::uint64_t* counts = send_counts.on(members[k]);
    std::uint64_t skip = 0; // rows PE k sends to the team PEs before this one
    for (int j = 0; j < me; ++j)
      skip += counts[j];
    const std::uint64_t count = counts[me];
    recv_counts[k] = count;
    const std::size_t fits = static_cast<std::size_t>(std::min<std::uint64_t>(count, capacity - intake.rows));
    if (fits != 0) {
      std::memcpy(static_cast<void*>(into + intake.rows * row_length),
                  src.on(members[k]) + static_cast<std::size_t>(skip) * row_length, fits * row_length * sizeof(T));
    }
    if (fits < count && intake.overflow_from < 0) {
      intake.overflow_from = static_cast<int>(k);
      intake.overflow_count = count;
      intake.rows_before = intake.rows;
    }
    intake.rows += fits;
  }
  return intake;
}

//! The checks every form makes on this PE's arguments: a row length, one count per team PE, whole rows, no overlap.
template <class T>
void check_alltoallv_args(const team_state& s, const char* what, const sym_buffer<T>& dst, std::size_t recv_counts,
                          const sym_buffer<const T>& src, const sym_buffer<const std::uint64_t>& send_counts,
                          std::size_t row_length) {
  const int me = s.world().my_pe();
  const std::size_t n = static_cast<std::size_t>(s.pes().size);
  if (row_length == 0) SYMM_THROW(errc::invalid_argument, "PE {}: {} on {}: the row length is 0", me, what, s.name());
  if (send_counts.size != n || recv_counts != n) {
    SYMM_THROW(errc::invalid_argument,
               "PE {}: {} on {}: send_counts has {} and recv_counts {} elements, but the team has {} PEs: one count "
               "per team PE",
               me, what, s.name(), send_counts.size, recv_counts, n);
  }
  if (dst.size % row_length != 0 || src.size % row_length != 0) {
    SYMM_THROW(errc::extent_mismatch,
               "PE {}: {} on {}: dst has {} and src {} elements; both must be whole rows of {} elements", me, what,
               s.name(), dst.size, src.size, row_length);
  }
  if (dst.offset < src.offset + src.bytes() && src.offset < dst.offset + dst.bytes() && dst.size != 0 &&
      src.size != 0) {
    SYMM_THROW(errc::invalid_argument, "PE {}: {} on {}: dst and src overlap", me, what, s.name());
  }
}

} // namespace detail

//! alltoallv over team `t` from host code (host backend): see the top of this header. `send_counts` is a symmetric
//! array of t.n_pes() row counts (std::uint64_t); `src` and `dst` symmetric arrays of one element type whose sizes are
//! multiples of `row_length`; `recv_counts` any t.n_pes() writable std::uint64_t (this PE's memory). Returns the rows
//! received. Collective over the team: every team PE calls it with the same element type and row length (checked,
//! errc::allocation_mismatch listing each PE's call).
//! Throws errc::invalid_argument for a row length of 0, a send count sum beyond src, or counts of the wrong size;
//! errc::extent_mismatch when dst cannot hold what arrives (after the collective: see above); errc::unsupported on the
//! GPU backends (their form takes a stream, below).
//! \code
//!   // route: this PE's tokens sorted by target PE; per_pe[k] of them go to PE k
//!   symm::alltoallv(world.team(), inbox, arrived, tokens, per_pe, hidden);
//! \endcode
template <detail::collective_buffer Dst, class RecvCounts, detail::collective_buffer Src,
          detail::collective_buffer SendCounts>
  requires writable_contiguous_range_of<RecvCounts, std::uint64_t> std::size_t alltoallv(
      const team& t, Dst&& dst, RecvCounts&& recv_counts, Src&& src, SendCounts&& send_counts, std::size_t row_length) {
    static_assert(detail::check_buffer_pair<Dst, Src>());
    static_assert(std::is_same_v<std::remove_cv_t<detail::buffer_element<SendCounts>>, std::uint64_t>,
                  "symm::alltoallv: send_counts must be a symmetric array of std::uint64_t");
    using T = std::remove_cv_t<detail::buffer_element<Dst>>;
    constexpr const char* what = "symm::alltoallv";
    detail::team_state& s = detail::collective_team(t.state(), what);
    detail::world_state& w = s.world();
    const int me = w.my_pe();
    if (w.kind() != backend::host) {
      SYMM_THROW(errc::unsupported,
                 "PE {}: {}(team, ...) from host code runs on the host backend; this world uses the {} backend, whose "
                 "heap is GPU memory: use the stream form, {}(stream, team, ...)",
                 me, what, to_string(w.kind()), what);
    }
    const auto d = detail::host_sym_buffer<T>(dst);
    const auto from = detail::host_sym_buffer<const T>(src);
    const auto counts = detail::host_sym_buffer<const std::uint64_t>(send_counts);
    const std::span<std::uint64_t> received(std::ranges::data(recv_counts), std::ranges::size(recv_counts));
    detail::check_alltoallv_args(s, what, d, received.size(), from, counts, row_length);
    // What this PE sends must lie in its src: the receivers read its counts and its rows without checking again.
    const std::uint64_t* mine = counts.on(me);
    const std::size_t n = static_cast<std::size_t>(s.pes().size);
    const std::uint64_t src_rows = from.size / row_length;
    std::uint64_t sending = 0;
    for (std::size_t k = 0; k < n; ++k) {
      if (mine[k] > src_rows - sending) { // no sum that wraps around passes
        SYMM_THROW(errc::invalid_argument,
                   "PE {}: {} on {}: send_counts[0..{}] add up to more than the {} rows of {} elements src holds "
                   "(send_counts[{}] = {})",
                   me, what, s.name(), k, src_rows, row_length, k, mine[k]);
      }
      sending += mine[k];
    }
    w.agree(detail::collective_request{0,
                                       detail::collective_kind::team_alltoallv,
                                       {detail::alltoallv_element_code<T>(), static_cast<std::int64_t>(row_length), 0},
                                       w.team_channels()},
            s.group(), what);
    const detail::alltoallv_intake intake = detail::host_alltoallv_work<T>(
        std::span<const int>(s.members()), s.my_index(), d, received, from, counts, row_length);
    w.wait_for_all(s.group(), what); // every PE has read this PE's src and counts
    if (intake.overflow_from >= 0) {
      SYMM_THROW(
          errc::extent_mismatch,
          "PE {}: {} on {}: PE {} sends {} rows after {} rows from the PEs before it, but dst holds {} rows of {} "
          "elements; the rows that did not fit were not written (recv_counts says what each PE sent)",
          me, what, s.name(), s.members()[static_cast<std::size_t>(intake.overflow_from)], intake.overflow_count,
          intake.rows_before, d.size / row_length, row_length);
    }
    return intake.rows;
  }

SYMM_END_NAMESPACE

// ---------------------------------------------------------------------------------------------------------------------
// Device code: alltoallv from one group (a block, a warp, a thread, or the grid) per team PE, inside the user's kernel,
// so that the router, the exchange and the experts can be one kernel. Between two sync_all rounds of the team on the
// channel given: the PEs' counts and rows are ready at the first, and every PE has read them at the second.
#if SYMM_CUDA_COMPILATION()
SYMM_BEGIN_NAMESPACE

//! alltoallv from device code: every thread of `group` on every team PE calls it (one group per PE), with the same
//! row length and channel. `send_counts`, `src` and `dst` are symmetric arrays as for the host form; `recv_counts`
//! t.n_pes() std::uint64_t that the group writes (this PE's memory: local, shared or a device buffer). Returns, to
//! every thread, the rows received and the first problem found (alltoallv_result: rows past dst's capacity or past a
//! sender's src are not moved). Not for teams with a PE reached only through NVSHMEM RMA (it traps, with a message).
//! \code
//!   __global__ void moe(symm::team_ref t, symm::array_ref<float> inbox, std::uint64_t* arrived,
//!                       symm::array_ref<const float> tokens, symm::array_ref<const std::uint64_t> per_pe) {
//!     auto block = cooperative_groups::this_thread_block();
//!     symm::alltoallv_result got = symm::alltoallv(block, t, inbox, arrived, tokens, per_pe, hidden, 1);
//!     if (!got.ok()) return;   // or report it
//!   }
//! \endcode
template <cooperating_group Group, class T, std::size_t E1, class U, std::size_t E2, class C, std::size_t E3>
  requires(std::is_same_v<std::remove_cv_t<T>, std::remove_cv_t<U>> && !std::is_const_v<T> &&
           std::is_same_v<std::remove_cv_t<C>, std::uint64_t>)
SYMM_DEVICE alltoallv_result
alltoallv(const Group& group, const team_ref& t, array_ref<T, E1> dst, std::uint64_t* recv_counts, array_ref<U, E2> src,
          array_ref<C, E3> send_counts, std::size_t row_length, int channel = 0) {
  if (t.rma_peer()) {
    ::printf("symm: alltoallv in device code on a team with a PE reached only through NVSHMEM RMA: not supported "
             "(PE %d)\n",
             t.world_my_pe());
    __trap();
  }
  symm::sync_all(group, t, channel); // every PE's counts and rows are ready
  const alltoallv_result got = detail::device_alltoallv(
      static_cast<unsigned>(group.thread_rank()), static_cast<unsigned>(group.num_threads()), t,
      detail::make_sym_buffer<T>(dst), recv_counts, detail::make_sym_buffer<const T>(src),
      detail::make_sym_buffer<const std::uint64_t>(send_counts), row_length);
  symm::sync_all(group, t, channel); // every PE has read this PE's counts and rows (nothing was stored remotely)
  return got;
}

SYMM_END_NAMESPACE
#endif

// ---------------------------------------------------------------------------------------------------------------------
// Host code on the CUDA backend, in files compiled by nvcc: a kernel on a stream, whose counts exist only in device
// memory (a router kernel computed them), so that nothing waits for the host and the call can be recorded into a CUDA
// graph. detail/alltoallv_device.hpp has the kernel.
#if SYMM_CUDA_COMPILATION() && SYMM_CUDA_BACKEND()
#  include <symm/detail/world_state.hpp>
#  include <symm/future.hpp>

#  include <cuda_runtime_api.h>

#  include <memory>
#  include <string>

SYMM_BEGIN_NAMESPACE
namespace detail {

//! Completion of a stream alltoallv: the stream's, and then what the kernel recorded in this PE's status words, as a
//! symm::error (the words are cleared, so each problem is reported once).
class alltoallv_completion final : public completion {
public:
  alltoallv_completion(cudaStream_t stream, alltoallv_status* status, int pe, std::string team, std::size_t row_length)
      : stream_(stream, "symm::alltoallv(stream, ...)", pe), status_(status), pe_(pe), team_(std::move(team)),
        row_length_(row_length) {}
  bool ready() override {
    if (!stream_.ready()) return false;
    report();
    return true;
  }
  void wait() override {
    stream_.wait();
    report();
  }

private:
  void report() const {
    alltoallv_status found{};
    SYMM_TRY_CUDA(cudaMemcpy(&found, status_, sizeof found, cudaMemcpyDeviceToHost));
    if (found.claimed == 0) return;
    SYMM_TRY_CUDA(cudaMemset(status_, 0, sizeof found));
    const alltoallv_result& r = found.first;
    if (r.problem == alltoallv_result::problem_kind::over_capacity) {
      SYMM_THROW(errc::extent_mismatch,
                 "PE {}: symm::alltoallv(stream, ...) on {}: PE {} sends {} rows after {} rows from the PEs before it, "
                 "but dst holds {} rows of {} elements; the rows that did not fit were not written (recv_counts says "
                 "what each PE sent)",
                 pe_, team_, r.pe, r.count, r.rows_before, r.rows_of_room, row_length_);
    }
    SYMM_THROW(errc::invalid_argument,
               "PE {}: symm::alltoallv(stream, ...) on {}: PE {}'s send_counts give this PE {} rows after the {} it "
               "sends the PEs before it, past the {} rows of {} elements src holds; those rows were not read",
               pe_, team_, r.pe, r.count, r.rows_before, r.rows_of_room, row_length_);
  }

  stream_completion stream_;
  alltoallv_status* status_;
  int pe_;
  std::string team_;
  std::size_t row_length_;
};

} // namespace detail

//! alltoallv on a stream (CUDA backend; nvcc-compiled host code): the same collective as the host form above, with
//! send_counts (a symmetric array of t.n_pes() std::uint64_t) read on the GPU when the stream gets there, so a kernel
//! enqueued before may compute them. `recv_counts`: t.n_pes() std::uint64_t in device memory (this PE's), where the
//! kernel writes what each team PE sent. The future completes with the stream; its wait() (or ready() once true)
//! throws what the kernel found: errc::extent_mismatch when dst could not hold what arrived, errc::invalid_argument
//! when a sender's counts ran past its src (the host form checks that on the sender; here only the receivers can),
//! naming the sending PE, its count and the capacity. Rows that do not fit are never written. Dropping the future does
//! not wait; such a problem is then reported by the next stream alltoallv's future this PE waits for. Collective over
//! the team, ordered with the team's other stream collectives and barriers like them (docs/guide.md). Throws at once,
//! like the host form, for arguments that are wrong on this PE; errc::unsupported on the host backend and, on the
//! nvshmem backend, for a team with a PE reached only through NVSHMEM RMA. \code
//!   route<<<grid, block, 0, stream>>>(tokens, per_pe);          // per_pe: symm::array<std::uint64_t>(world, n)
//!   symm::alltoallv(stream, world.team(), inbox, arrived, tokens, per_pe, hidden);
//!   experts<<<grid, block, 0, stream>>>(inbox, arrived);         // arrived: device memory, n counts
//! \endcode
template <detail::collective_buffer Dst, class RecvCounts, detail::collective_buffer Src,
          detail::collective_buffer SendCounts>
  requires writable_contiguous_range_of<RecvCounts, std::uint64_t> future<>
  alltoallv(cudaStream_t stream, const team& t, Dst&& dst, RecvCounts&& recv_counts, Src&& src,
            SendCounts&& send_counts, std::size_t row_length) {
    static_assert(detail::check_buffer_pair<Dst, Src>());
    static_assert(std::is_same_v<std::remove_cv_t<detail::buffer_element<SendCounts>>, std::uint64_t>,
                  "symm::alltoallv: send_counts must be a symmetric array of std::uint64_t");
    using T = std::remove_cv_t<detail::buffer_element<Dst>>;
    constexpr const char* what = "symm::alltoallv(stream, ...)";
    detail::team_state& s = detail::collective_team(t.state(), what);
    detail::world_state& w = s.world();
    const int me = w.my_pe();
    if (!heap_on_gpu(w.kind())) {
      SYMM_THROW(errc::unsupported,
                 "PE {}: {} runs a kernel, but this world uses the {} backend, whose heap is host memory; call "
                 "symm::alltoallv(team, ...)",
                 me, what, to_string(w.kind()));
    }
#  if SYMM_NVSHMEM_BACKEND()
    if (s.rma_peer()) {
      SYMM_THROW(errc::unsupported,
                 "PE {}: {} on {}: a team PE is reached only through NVSHMEM RMA, which this form does not use yet", me,
                 what, s.name());
    }
#  endif
    const auto d = detail::host_sym_buffer<T>(dst);
    const auto from = detail::host_sym_buffer<const T>(src);
    const auto counts = detail::host_sym_buffer<const std::uint64_t>(send_counts);
    std::uint64_t* const received = std::ranges::data(recv_counts);
    const std::size_t n_received = std::ranges::size(recv_counts);
    detail::check_alltoallv_args(s, what, d, n_received, from, counts, row_length);
    cudaPointerAttributes where{};
    const bool gpu_writes =
        cudaPointerGetAttributes(&where, received) == cudaSuccess &&
        (where.type == cudaMemoryTypeDevice || where.type == cudaMemoryTypeManaged ||
         (where.type == cudaMemoryTypeHost && where.devicePointer != nullptr));
    if (!gpu_writes) {
      (void) cudaGetLastError();
      SYMM_THROW(errc::invalid_argument,
                 "PE {}: {} on {}: recv_counts ({}) is not memory the GPU can write; the kernel writes the counts "
                 "there: give it device memory",
                 me, what, s.name(), static_cast<const void*>(received));
    }
    const int n = s.pes().size;
    const std::size_t shared = detail::alltoallv_shared_bytes(n);
    if (shared > 48 * 1024) {
      SYMM_THROW(errc::unsupported, "PE {}: {} on {}: {} PEs are more than the kernel's table holds (2048)", me, what,
                 s.name(), n);
    }
    // The blocks from the sizes of dst and src and from the team's links, which every PE shares, so that block b meets
    // block b everywhere.
    const detail::collective_plan plan = detail::plan_stream_collective(
        detail::collective_id::alltoall, d.bytes(), from.bytes(), false, w.collective_block_limit(), s.links(),
        w.tuning());
    auto* status = reinterpret_cast<detail::alltoallv_status*>(w.peer_bases()[me] + w.status_offset());
    const detail::alltoallv_args<T> args{t.ref(), d, from, counts, received, row_length, status};
    detail::alltoallv_stream_kernel<T><<<plan.blocks, plan.threads, shared, stream>>>(
        args, detail::collective_flags::of(args.team, w.collective_flags_offset()));
    SYMM_TRY_CUDA(cudaGetLastError());
    return future<>(
        std::make_shared<detail::alltoallv_completion>(stream, status, me, std::string(s.name()), row_length));
  }

SYMM_END_NAMESPACE
#endif
