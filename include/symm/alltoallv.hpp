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
// This is the host form (host backend; plain copies through the mapped heaps between the team's host barriers, like
// the host collectives). The GPU forms (counts in device memory, on a stream and from a kernel) follow it.
#pragma once

#include <symm/concepts.hpp>
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

} // namespace detail

//! alltoallv over team `t` from host code (host backend): see the top of this header. `send_counts` is a symmetric
//! array of t.n_pes() row counts (std::uint64_t); `src` and `dst` symmetric arrays of one element type whose sizes are
//! multiples of `row_length`; `recv_counts` any t.n_pes() writable std::uint64_t (this PE's memory). Returns the rows
//! received. Collective over the team: every team PE calls it with the same element type and row length (checked,
//! errc::allocation_mismatch listing each PE's call).
//! Throws errc::invalid_argument for a row length of 0, a send count sum beyond src, or counts of the wrong size;
//! errc::extent_mismatch when dst cannot hold what arrives (after the collective: see above); errc::unsupported on the
//! GPU backends (the device forms are to come).
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
                 "heap is GPU memory (the stream and device forms of alltoallv are not there yet)",
                 me, what, to_string(w.kind()));
    }
    const auto d = detail::host_sym_buffer<T>(dst);
    const auto from = detail::host_sym_buffer<const T>(src);
    const auto counts = detail::host_sym_buffer<const std::uint64_t>(send_counts);
    const std::size_t n = static_cast<std::size_t>(s.pes().size);
    const std::span<std::uint64_t> received(std::ranges::data(recv_counts), std::ranges::size(recv_counts));
    if (row_length == 0) SYMM_THROW(errc::invalid_argument, "PE {}: {} on {}: the row length is 0", me, what, s.name());
    if (counts.size != n || received.size() != n) {
      SYMM_THROW(errc::invalid_argument,
                 "PE {}: {} on {}: send_counts has {} and recv_counts {} elements, but the team has {} PEs: one count "
                 "per team PE",
                 me, what, s.name(), counts.size, received.size(), n);
    }
    if (d.size % row_length != 0 || from.size % row_length != 0) {
      SYMM_THROW(errc::extent_mismatch,
                 "PE {}: {} on {}: dst has {} and src {} elements; both must be whole rows of {} elements", me, what,
                 s.name(), d.size, from.size, row_length);
    }
    if (d.offset < from.offset + from.bytes() && from.offset < d.offset + d.bytes() && d.size != 0 && from.size != 0) {
      SYMM_THROW(errc::invalid_argument, "PE {}: {} on {}: dst and src overlap", me, what, s.name());
    }
    // What this PE sends must lie in its src: the receivers read its counts and its rows without checking again.
    const std::uint64_t* mine = counts.on(me);
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
