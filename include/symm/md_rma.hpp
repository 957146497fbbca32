// symm/md_rma.hpp: put and get between multi-dimensional views: another PE's copy or slice of a symm::mdarray (a
// pe_mdspan, symm/mdarray_ref.hpp) and a local cuda::std::mdspan of the same extents, in any strided layouts: a row, a
// column, a tile or a face in one call (NVSHMEM's iput/iget, and more dimensions). Host code: blocking or nbi, 2-D
// copies along whichever dimension is contiguous (cudaMemcpy2D on the CUDA backend). Device code: group-scoped; one
// contiguous run on both sides (a row) is the vectorised copy of the span forms; a tile whose rows start 16-byte
// aligned on both sides goes a row per team of threads with 16-byte vectors; anything else every element once, spread
// over the group in row-major order so that a warp touches consecutive elements of a row.
#pragma once

#include <symm/concepts.hpp>
#include <symm/detail/config.hpp>
#include <symm/detail/device_check.hpp>
#include <symm/detail/world_interface.hpp>
#include <symm/error.hpp>
#include <symm/future.hpp>
#include <symm/group.hpp>
#include <symm/mdarray_ref.hpp>
#include <symm/rma.hpp>

#include <cuda/std/bit>
#include <cuda/std/mdspan>

#if SYMM_CUDA_COMPILATION()
#  include <symm/detail/device_copy.hpp>
#endif

#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

SYMM_BEGIN_NAMESPACE

namespace detail {
//! Whether two extents types can never hold the same shape: different ranks, or a static extent that differs.
template <class E1, class E2>
consteval bool md_extents_conflict() {
  if constexpr (E1::rank() != E2::rank()) {
    return true;
  } else {
    for (std::size_t r = 0; r < E1::rank(); ++r) {
      if (E1::static_extent(r) != cuda::std::dynamic_extent && E2::static_extent(r) != cuda::std::dynamic_extent &&
          E1::static_extent(r) != E2::static_extent(r))
        return true;
    }
    return false;
  }
}

//! A local mdspan: its accessor reaches plain memory (the default accessor, or one like it), not another PE.
template <class A, class T>
inline constexpr bool plain_accessor =
    std::is_same_v<typename A::data_handle_type, T*>&& std::is_same_v<typename A::reference, T&>;

template <class E1, class E2>
SYMM_HOST_DEVICE constexpr bool same_shape(const E1& a, const E2& b) noexcept {
  for (std::size_t r = 0; r < E1::rank(); ++r)
    if (static_cast<std::size_t>(a.extent(r)) != static_cast<std::size_t>(b.extent(r))) return false;
  return true;
}

//! errc::extent_mismatch naming both shapes, when they differ.
template <class RemoteExtents, class LocalExtents>
void check_same_shape(const RemoteExtents& remote, const LocalExtents& local, int pe, const char* what) {
  if (!same_shape(remote, local)) {
    SYMM_THROW(errc::extent_mismatch, "{}: the remote side on PE {} has extents {} but the local side has {}", what, pe,
               md_shape_string(remote), md_shape_string(local));
  }
}

//! A local view a multi-dimensional put reads or a get writes: a cuda::std::mdspan of plain memory.
template <class M>
inline constexpr bool local_mdspan = false;
template <class U, class E, class L, class A>
inline constexpr bool local_mdspan<cuda::std::mdspan<U, E, L, A>> = plain_accessor<A, U>;

//! Why `Local` cannot be the local side of a multi-dimensional put or get: one static_assert a case, which the
//! catch-all overloads below reach, so that the first error says what to write instead of listing overloads.
template <class Local>
constexpr void diagnose_md_local() {
  using R = std::remove_cvref_t<Local>;
  if constexpr (is_pe_mdspan<R>) {
    static_assert(always_false<R>, "symm: put/get between two remote views (pe_mdspan): get into a local buffer, then "
                                   "put that; each call moves data between this PE and one other");
  } else if constexpr (symmetric_object<R>) {
    static_assert(always_false<R>, "symm: put/get: a symmetric object (symm::mdarray) as the local side; pass its part "
                                   "on this PE, grid.local(), or a symm::submdspan of it");
  } else {
    static_assert(always_false<R>, "symm: put/get of a pe_mdspan: the local side must be a cuda::std::mdspan of "
                                   "memory this PE reads and writes directly (the default accessor)");
  }
}

//! Whether both views cover one contiguous run of elements in the same order (both exhaustive, equal strides): then a
//! put or get of them is one flat copy.
template <class DstMapping, class SrcMapping>
SYMM_HOST_DEVICE constexpr bool same_contiguous_order(const DstMapping& dm, const SrcMapping& sm) noexcept {
  if (!dm.is_exhaustive() || !sm.is_exhaustive()) return false;
  if constexpr (DstMapping::extents_type::rank() > 0) {
    for (std::size_t r = 0; r < DstMapping::extents_type::rank(); ++r) // an extent of 1 never steps: any stride
      if (dm.extents().extent(r) > 1 &&
          static_cast<std::size_t>(dm.stride(r)) != static_cast<std::size_t>(sm.stride(r)))
        return false;
  }
  return true;
}

//! The compile-time rules of every multi-dimensional put (host, device, stream) and get: the remote side writable (put)
//! or the local one (get), the same element type, static extents (and ranks) that can match.
template <class T, class E, class U, class E2>
SYMM_HOST_DEVICE constexpr void require_md_put() {
  static_assert(!std::is_const_v<T>, "symm::put: cannot put into a pe_mdspan<const T>: the remote data is const");
  static_assert(std::is_same_v<std::remove_cv_t<U>, T>, "symm::put: the element types differ");
  static_assert(!md_extents_conflict<E, E2>(), "symm::put between multi-dimensional views whose static extents "
                                               "(or ranks) differ");
}
template <class U, class E2, class T, class E>
SYMM_HOST_DEVICE constexpr void require_md_get() {
  static_assert(!std::is_const_v<U>, "symm::get: the destination must be writable");
  static_assert(std::is_same_v<U, std::remove_cv_t<T>>, "symm::get: the element types differ");
  static_assert(!md_extents_conflict<E, E2>(), "symm::get between multi-dimensional views whose static extents "
                                               "(or ranks) differ");
}

//! Host: copies every element of the view that `sm` maps at src to the same index of the one `dm` maps at dst (the
//! extents are the same) with `copy_2d(dst, dst_pitch, src, src_pitch, width, rows)` (world_interface::copy_2d's
//! arguments), as few calls as the layouts allow, whichever dimension is contiguous (row- and column-major slices
//! alike): the run is a dimension of stride 1 on both sides (else single elements), the rows another dimension whose
//! strides on both sides are pitches of at least the run (cudaMemcpy2D's rule; else one row a call), and one call per
//! index of the remaining dimensions. Returns the number of calls (0: an empty view).
template <class T, class DstMapping, class SrcMapping, class Copy2d>
std::size_t host_copy_md(T* dst, const DstMapping& dm, const T* src, const SrcMapping& sm, Copy2d&& copy_2d) {
  using extents_type = typename DstMapping::extents_type;
  constexpr std::size_t rank = extents_type::rank();
  const auto& ext = dm.extents();
  if constexpr (rank == 0) {
    copy_2d(dst, sizeof(T), src, sizeof(T), sizeof(T), 1);
    return 1;
  } else {
    const auto extent = [&](std::size_t r) { return static_cast<std::size_t>(ext.extent(r)); };
    const auto dst_stride = [&](std::size_t r) { return static_cast<std::size_t>(dm.stride(r)); };
    const auto src_stride = [&](std::size_t r) { return static_cast<std::size_t>(sm.stride(r)); };
    for (std::size_t r = 0; r < rank; ++r)
      if (extent(r) == 0) return 0;
    if (same_contiguous_order(dm, sm)) { // whole arrays, in either layout: one copy
      const std::size_t bytes = static_cast<std::size_t>(dm.required_span_size()) * sizeof(T);
      copy_2d(dst, bytes, src, bytes, bytes, 1);
      return 1;
    }
    // Dimensions of extent 1 take no part: their index is 0. `none` marks a role no dimension takes.
    constexpr std::size_t none = rank;
    std::size_t run = none, row = none;
    for (std::size_t r = 0; r < rank; ++r)
      if (extent(r) > 1 && dst_stride(r) == 1 && src_stride(r) == 1 && (run == none || extent(r) > extent(run)))
        run = r;
    const std::size_t width = (run == none ? 1 : extent(run)) * sizeof(T);
    for (std::size_t r = 0; r < rank; ++r)
      if (r != run && extent(r) > 1 && dst_stride(r) * sizeof(T) >= width && src_stride(r) * sizeof(T) >= width &&
          (row == none || extent(r) > extent(row)))
        row = r;
    const std::size_t rows = row == none ? 1 : extent(row);
    // One row: its pitch is never used; the width keeps cudaMemcpy2D's rule (pitch >= width).
    const std::size_t dst_pitch = row == none ? width : dst_stride(row) * sizeof(T);
    const std::size_t src_pitch = row == none ? width : src_stride(row) * sizeof(T);
    std::size_t loop[rank] = {}, loops = 0; // the dimensions looped over, one call per index
    for (std::size_t r = 0; r < rank; ++r)
      if (r != run && r != row && extent(r) > 1) loop[loops++] = r;
    std::size_t index[rank] = {};
    for (std::size_t calls = 1;; ++calls) {
      std::size_t dst_at = 0, src_at = 0;
      for (std::size_t l = 0; l < loops; ++l) {
        dst_at += index[l] * dst_stride(loop[l]);
        src_at += index[l] * src_stride(loop[l]);
      }
      copy_2d(dst + dst_at, dst_pitch, src + src_at, src_pitch, width, rows);
      std::size_t l = loops; // the odometer over the looped dimensions, the last fastest
      while (l > 0 && ++index[l - 1] == extent(loop[l - 1]))
        index[--l] = 0;
      if (l == 0) return calls;
    }
  }
}

//! The blocking host copy of put and get.
template <class T, class DstMapping, class SrcMapping>
void host_copy_md(world_interface& world, T* dst, const DstMapping& dm, const T* src, const SrcMapping& sm) {
  (void) host_copy_md(dst, dm, src, sm,
                      [&](void* d, std::size_t dp, const void* s, std::size_t sp, std::size_t width, std::size_t rows) {
                        world.copy_2d(d, dp, s, sp, width, rows);
                      });
}

//! The non-blocking host copy of put_nbi and get_nbi: every 2-D copy of the view in one completion.
template <class T, class DstMapping, class SrcMapping>
std::shared_ptr<completion>
host_copy_md_async(world_interface& world, T* dst, const DstMapping& dm, const T* src, const SrcMapping& sm) {
  std::vector<copy_2d_spec> copies;
  (void) host_copy_md(dst, dm, src, sm,
                      [&](void* d, std::size_t dp, const void* s, std::size_t sp, std::size_t width, std::size_t rows) {
                        copies.push_back({d, dp, s, sp, width, rows});
                      });
  return world.copy_2d_async(std::move(copies));
}

//! The stream-ordered copy of put(stream, ...) and get(stream, ...): the state of its last 2-D copy, which the stream
//! runs after the others (an empty view: a copy of 0 bytes, so that there is a state).
template <class T, class DstMapping, class SrcMapping>
stream_state stream_copy_md(world_interface& world, void* stream, T* dst, const DstMapping& dm, const T* src,
                            const SrcMapping& sm, const char* what) {
  stream_state last{};
  const std::size_t copies = host_copy_md(
      dst, dm, src, sm,
      [&](void* d, std::size_t dp, const void* s, std::size_t sp, std::size_t width, std::size_t rows) {
        last = world.copy_2d_on_stream(stream, d, dp, s, sp, width, rows, what);
      });
  return copies != 0 ? last : world.copy_on_stream(stream, dst, src, 0, what);
}

//! Where index k of the row-major order over a view's first `Dims` dimensions (the others at index 0) is on each side,
//! in elements from each side's first (FirstFastest: the column-major order, dimension 0 varying fastest): the
//! odometer of the device loops, without a division for the slowest index (k is below the product of the extents).
//! Unsigned: extents are never negative, and a signed index would be sign-extended (and divided signed) per element.
struct md_offsets {
  std::size_t dst = 0, src = 0;
};
template <std::size_t Dims, bool FirstFastest = false, class Extents, class DstMapping, class SrcMapping>
SYMM_HOST_DEVICE SYMM_FORCEINLINE md_offsets
linear_offsets(const Extents& shape, const DstMapping& dm, const SrcMapping& sm, std::size_t k) noexcept {
  using index_type = std::make_unsigned_t<typename Extents::index_type>;
  md_offsets at;
  if constexpr (Dims > 0) {
    const auto add = [&](std::size_t r, index_type i) {
      at.dst += static_cast<std::size_t>(i) * static_cast<std::size_t>(dm.stride(r));
      at.src += static_cast<std::size_t>(i) * static_cast<std::size_t>(sm.stride(r));
    };
    auto rest = static_cast<index_type>(k);
    for (std::size_t step = 0; step + 1 < Dims; ++step) { // fastest dimension first
      const std::size_t r = FirstFastest ? step : Dims - 1 - step;
      const auto e = static_cast<index_type>(shape.extent(r));
      add(r, static_cast<index_type>(rest % e));
      rest = static_cast<index_type>(rest / e);
    }
    add(FirstFastest ? Dims - 1 : 0, rest);
  }
  return at;
}

//! Whether a device element loop should step through a view in column-major order: its remote side is layout_left.
template <class RemoteMapping>
inline constexpr bool column_major_order = std::is_same_v<typename RemoteMapping::layout_type, cuda::std::layout_left>;

//! How a group copies a view row by row (its innermost dimension, contiguous on both sides: a tile of a row-major
//! grid), each row with 16-byte vectors by a team of `team` threads (the smallest power of two that gives each a
//! vector, at most the largest power of two of the group's threads, so that narrow rows keep many teams busy and wide
//! ones few), the teams taking rows in turn; a row's tail in the element's widest word. `rows == 0`: not this way (rank
//! below 2, an inner stride that is not 1, a row start that is not 16-byte aligned on both sides, rows shorter than a
//! vector); the caller copies element by element then.
struct md_row_plan {
  std::size_t rows = 0, row_bytes = 0;
  unsigned team = 0;
};
template <class T, class Extents, class DstMapping, class SrcMapping>
SYMM_HOST_DEVICE md_row_plan plan_md_rows(const Extents& shape, const DstMapping& dm, const T* dst,
                                          const SrcMapping& sm, const T* src, unsigned threads) noexcept {
  constexpr std::size_t rank = Extents::rank();
  md_row_plan plan;
  if constexpr (rank >= 2) {
    if (dm.stride(rank - 1) != 1 || sm.stride(rank - 1) != 1) return plan;
    auto misaligned = reinterpret_cast<std::uintptr_t>(dst) | reinterpret_cast<std::uintptr_t>(src);
    std::size_t rows = 1;
    for (std::size_t r = 0; r + 1 < rank; ++r) {
      rows *= static_cast<std::size_t>(shape.extent(r));
      if (shape.extent(r) > 1)
        misaligned |= (static_cast<std::size_t>(dm.stride(r)) | static_cast<std::size_t>(sm.stride(r))) * sizeof(T);
    }
    const std::size_t row_bytes = static_cast<std::size_t>(shape.extent(rank - 1)) * sizeof(T);
    if ((misaligned & 15) != 0 || row_bytes < 16 || threads == 0) return plan;
    plan.rows = rows;
    plan.row_bytes = row_bytes;
    // The smallest power of two at least the row's vectors, and at most the largest power of two not above the
    // group's threads (so that the copy splits a thread's rank into team and lane with shifts).
    const std::size_t vectors = row_bytes / 16;
    const auto widest = cuda::std::bit_floor(threads);
    plan.team = vectors < widest ? static_cast<unsigned>(cuda::std::bit_ceil(vectors)) : widest;
  }
  return plan;
}

#if SYMM_CUDA_COMPILATION()
//! Device: the local side's extents are the remote side's, else a trap (SYMM_CHECK >= 1; `what` names the call).
template <class RemoteExtents, class LocalExtents>
SYMM_DEVICE SYMM_FORCEINLINE void
device_check_same_shape(const RemoteExtents& remote, const LocalExtents& local, [[maybe_unused]] const char* what) {
  for (std::size_t r = 0; r < RemoteExtents::rank(); ++r)
    SYMM_DEVICE_ASSERT_EXTENT(static_cast<std::size_t>(local.extent(r)), static_cast<std::size_t>(remote.extent(r)),
                              what);
}

//! Device: `group` moves every element of a `shape`-shaped view, element k of the order going to the thread of rank k
//! modulo the group's size: `move(dst_offset, src_offset)` with each side's offset through its mapping. The order is
//! row-major, or column-major (FirstFastest) when the remote side is layout_left, so that a warp touches consecutive
//! elements of the remote side's contiguous dimension.
template <bool FirstFastest, class Group, class Extents, class DstMapping, class SrcMapping, class Move>
SYMM_DEVICE SYMM_FORCEINLINE void
group_for_each_md(const Group& group, const Extents& shape, const DstMapping& dm, const SrcMapping& sm, Move&& move) {
  constexpr std::size_t rank = Extents::rank();
  std::size_t n = 1;
  for (std::size_t r = 0; r < rank; ++r)
    n *= static_cast<std::size_t>(shape.extent(r));
  const auto count = static_cast<std::size_t>(group.num_threads());
  for (std::size_t k = static_cast<std::size_t>(group.thread_rank()); k < n; k += count) {
    const md_offsets at = linear_offsets<rank, FirstFastest>(shape, dm, sm, k);
    move(at.dst, at.src);
  }
}

//! Device: `group` copies the rows of `plan` (plan_md_rows), row r from src + its offset to dst + its offset. Rows of
//! whole vectors (the usual tile) go four rows at a time per team, each lane loading its vectors of the four rows
//! before it stores them: four loads in flight, as the contiguous copy keeps them, however few vectors a lane has in
//! one row. Measured on an H100 (docs/benchmarks-h100, 2026-12-07-tile-rows): a row at a time took up to 1.6x the
//! time of a hand-written tile copy.
template <class Group, class T, class Extents, class DstMapping, class SrcMapping>
SYMM_DEVICE SYMM_FORCEINLINE void group_copy_md_rows(const Group& group, const md_row_plan& plan, const Extents& shape,
                                                     T* dst, const DstMapping& dm, const T* src, const SrcMapping& sm) {
  const auto rank = static_cast<unsigned>(group.thread_rank()), count = static_cast<unsigned>(group.num_threads());
  const auto shift = static_cast<unsigned>(cuda::std::countr_zero(plan.team)); // plan.team is a power of two
  const unsigned team = rank >> shift, lane = rank & (plan.team - 1), teams = count >> shift;
  if (team >= teams) return; // the threads beyond the last whole team
  const std::size_t vectors = plan.row_bytes / 16, done = vectors * 16;
  const auto from = [&](std::size_t offset) { return reinterpret_cast<const int4*>(src + offset); };
  const auto to = [&](std::size_t offset) { return reinterpret_cast<int4*>(dst + offset); };
  const auto at_row = [&](std::size_t r) { return linear_offsets<Extents::rank() - 1>(shape, dm, sm, r); };
  const std::size_t step = teams;
  std::size_t row = team;
  if (done == plan.row_bytes && vectors <= plan.team) { // a vector of a row per lane at most: no loop over a row
    if (lane >= vectors) return;
#  pragma unroll 1
    for (; row + 3 * step < plan.rows; row += 4 * step) {
      const md_offsets a = at_row(row), b = at_row(row + step), c = at_row(row + 2 * step), d = at_row(row + 3 * step);
      const int4 va = from(a.src)[lane], vb = from(b.src)[lane], vc = from(c.src)[lane], vd = from(d.src)[lane];
      to(a.dst)[lane] = va;
      to(b.dst)[lane] = vb;
      to(c.dst)[lane] = vc;
      to(d.dst)[lane] = vd;
    }
#  pragma unroll 1
    for (; row < plan.rows; row += step) {
      const md_offsets at = at_row(row);
      to(at.dst)[lane] = from(at.src)[lane];
    }
    return;
  }
  if (done == plan.row_bytes) { // rows wider than a team: a lane's vectors of four rows, then the last rows
#  pragma unroll 1
    for (; row + 3 * step < plan.rows; row += 4 * step) {
      const md_offsets a = at_row(row), b = at_row(row + step), c = at_row(row + 2 * step), d = at_row(row + 3 * step);
#  pragma unroll 1
      for (std::size_t v = lane; v < vectors; v += plan.team) {
        const int4 va = from(a.src)[v], vb = from(b.src)[v], vc = from(c.src)[v], vd = from(d.src)[v];
        to(a.dst)[v] = va;
        to(b.dst)[v] = vb;
        to(c.dst)[v] = vc;
        to(d.dst)[v] = vd;
      }
    }
#  pragma unroll 1
    for (; row < plan.rows; row += step) {
      const md_offsets at = at_row(row);
      copy_vectors(lane, plan.team, to(at.dst), from(at.src), vectors);
    }
    return;
  }
  // The tail (under 16 bytes, a whole number of elements, 16-byte aligned) in the widest word an element divides into:
  // an element is never written in pieces narrower than it needs.
  using tail_word =
      std::conditional_t<sizeof(T) % 8 == 0, std::uint64_t,
                         std::conditional_t<sizeof(T) % 4 == 0, std::uint32_t,
                                            std::conditional_t<sizeof(T) % 2 == 0, std::uint16_t, std::uint8_t>>>;
  for (; row < plan.rows; row += teams) {
    const md_offsets at = at_row(row);
    auto* d = reinterpret_cast<unsigned char*>(dst + at.dst);
    const auto* s = reinterpret_cast<const unsigned char*>(src + at.src);
    copy_vectors(lane, plan.team, reinterpret_cast<int4*>(d), reinterpret_cast<const int4*>(s), vectors);
    copy_vectors<false>(lane, plan.team, reinterpret_cast<tail_word*>(d + done),
                        reinterpret_cast<const tail_word*>(s + done), (plan.row_bytes - done) / sizeof(tail_word));
  }
}

//! Device: what put(group, ...) and get(group, ...) do between the group's syncs, from `src` (mapped by `sm`) to `dst`
//! (mapped by `dm`), `remote` being the side on the other PE: one contiguous run on both sides (a row, or whole arrays)
//! takes the span forms' vectorised copy; aligned rows group_copy_md_rows; anything else `move(dst_offset,
//! src_offset)` per element (through the remote side's pe_ref), in the remote side's order (RemoteColumnMajor).
template <bool RemoteColumnMajor, class Group, class Elem, class Extents, class DstMapping, class SrcMapping, class Move>
SYMM_DEVICE SYMM_FORCEINLINE void
group_copy_md(const Group& g, const Extents& shape, Elem* dst, const DstMapping& dm, const Elem* src,
              const SrcMapping& sm, const void* remote, Move&& move) {
  if (same_contiguous_order(dm, sm)) {
    const std::size_t bytes = static_cast<std::size_t>(dm.required_span_size()) * sizeof(Elem);
    group_copy(g, dst, bytes, src, bytes);
    return;
  }
  if constexpr (Extents::rank() >= 2) { // a tile: rows of 16-byte vectors, when they are aligned on both sides
    const md_row_plan rows = plan_md_rows(shape, dm, dst, sm, src, static_cast<unsigned>(g.num_threads()));
    if (rows.rows != 0 && !is_rma_address(remote)) {
      group_copy_md_rows(g, rows, shape, dst, dm, src, sm);
      return;
    }
  }
  group_for_each_md<RemoteColumnMajor>(g, shape, dm, sm, move);
}
#endif
} // namespace detail

//! Put (host): copies the local view `source` into PE dst.pe()'s elements that `dst` views (a pe_mdspan: remote(grid,
//! pe) or a symm::submdspan of it). Complete when it returns. Extents must match: a compile error when static
//! ones differ, errc::extent_mismatch naming both shapes when dynamic ones do.
//! \code
//!   auto west = symm::submdspan(symm::remote(grid, left), cuda::std::full_extent, nx - 1); // their last column
//!   symm::put(west, symm::submdspan(grid.local(), cuda::std::full_extent, 1));            // my first interior
//! \endcode
template <class T, class E, class L, class U, class E2, class L2, class A2>
  requires detail::plain_accessor<A2, U>
void put(const pe_mdspan<T, E, L>& dst, const cuda::std::mdspan<U, E2, L2, A2>& source) {
  detail::require_md_put<T, E, U, E2>();
  const remote_handle<T>& h = dst.data_handle();
  detail::check_same_shape(dst.extents(), source.extents(), h.pe, "symm::put of a multi-dimensional view");
  detail::host_copy_md(*h.world, h.address, dst.mapping(), source.data_handle(), source.mapping());
}

// Anything else as the local side of a host put or get: a compile error that says what to write.
template <class T, class E, class L, class Local>
  requires(!detail::local_mdspan<std::remove_cvref_t<Local>>)
void put(const pe_mdspan<T, E, L>&, Local&&) {
  detail::diagnose_md_local<Local>();
}
template <class Local, class T, class E, class L>
  requires(!detail::local_mdspan<std::remove_cvref_t<Local>>)
void get(Local&&, const pe_mdspan<T, E, L>&) {
  detail::diagnose_md_local<Local>();
}

//! Get (host): copies PE src.pe()'s elements that `src` views into the local view `destination`. Complete when it
//! returns. Extents as for put.
template <class U, class E2, class L2, class A2, class T, class E, class L>
  requires detail::plain_accessor<A2, U>
void get(const cuda::std::mdspan<U, E2, L2, A2>& destination, const pe_mdspan<T, E, L>& src) {
  detail::require_md_get<U, E2, T, E>();
  const remote_handle<T>& h = src.data_handle();
  detail::check_same_shape(src.extents(), destination.extents(), h.pe, "symm::get of a multi-dimensional view");
  detail::host_copy_md(*h.world, destination.data_handle(), destination.mapping(), h.address, src.mapping());
}

//! Non-blocking put (host): starts the copy of `source` into the elements `dst` views and returns; the data is at the
//! target once the future's wait() (or quiet()) returns, and `source` must stay unchanged until then. Extents as for
//! put. On a GPU heap the copies run on the world's stream, in order with its other non-blocking operations.
template <class T, class E, class L, class U, class E2, class L2, class A2>
  requires detail::plain_accessor<A2, U>
[[nodiscard]] future<> put_nbi(const pe_mdspan<T, E, L>& dst, const cuda::std::mdspan<U, E2, L2, A2>& source) {
  detail::require_md_put<T, E, U, E2>();
  const remote_handle<T>& h = dst.data_handle();
  detail::check_same_shape(dst.extents(), source.extents(), h.pe, "symm::put_nbi of a multi-dimensional view");
  return future<>(
      detail::host_copy_md_async(*h.world, h.address, dst.mapping(), source.data_handle(), source.mapping()));
}

//! Non-blocking get (host): `destination` holds the data once the future's wait() returns. Extents as for put.
template <class U, class E2, class L2, class A2, class T, class E, class L>
  requires detail::plain_accessor<A2, U>
[[nodiscard]] future<> get_nbi(const cuda::std::mdspan<U, E2, L2, A2>& destination, const pe_mdspan<T, E, L>& src) {
  detail::require_md_get<U, E2, T, E>();
  const remote_handle<T>& h = src.data_handle();
  detail::check_same_shape(src.extents(), destination.extents(), h.pe, "symm::get_nbi of a multi-dimensional view");
  return future<>(detail::host_copy_md_async(
      *h.world, destination.data_handle(), destination.mapping(), static_cast<const U*>(h.address), src.mapping()));
}

template <class T, class E, class L, class Local>
  requires(!detail::local_mdspan<std::remove_cvref_t<Local>>)
future<> put_nbi(const pe_mdspan<T, E, L>&, Local&&) {
  detail::diagnose_md_local<Local>();
  return {};
}
template <class Local, class T, class E, class L>
  requires(!detail::local_mdspan<std::remove_cvref_t<Local>>)
future<> get_nbi(Local&&, const pe_mdspan<T, E, L>&) {
  detail::diagnose_md_local<Local>();
  return {};
}

#if SYMM_CUDA_COMPILATION()
//! Put (device): `group` copies the local view `source` into the elements `dst` views on PE dst's PE, each element once
//! (a pe_ref store: through the peer mapping, or NVSHMEM's p for a peer reached by RMA). Synchronisation as the span
//! form's: none for a plain group, both sides for symm::synced(group). Extents: a compile error when static ones
//! differ; a trap (SYMM_CHECK >= 1) when dynamic ones do.
template <cooperating_group Group, class T, class E, class L, class U, class E2, class L2, class A2>
requires detail::plain_accessor<A2, U> SYMM_DEVICE void
put(const Group& group, const pe_mdspan<T, E, L>& dst, const cuda::std::mdspan<U, E2, L2, A2>& source) {
  detail::require_md_put<T, E, U, E2>();
  detail::device_check_same_shape(
      dst.extents(), source.extents(), "symm::put of a multi-dimensional view: the local side's extent");
  detail::with_group_syncs(group, [&](const auto& g) {
    const remote_accessor<T> to;
    const U* from = source.data_handle();
    detail::group_copy_md<detail::column_major_order<typename pe_mdspan<T, E, L>::mapping_type>>(
        g, dst.extents(), dst.data_handle().address, dst.mapping(), static_cast<const T*>(from), source.mapping(),
        dst.data_handle().address, [&](std::size_t d, std::size_t s) { to.access(dst.data_handle(), d) = from[s]; });
  });
}

//! Get (device): `group` copies the elements `src` views on its PE into the local view `destination`; each thread's
//! share has landed on return, the whole destination once the group synchronises. Extents as for put.
template <cooperating_group Group, class U, class E2, class L2, class A2, class T, class E, class L>
requires detail::plain_accessor<A2, U> SYMM_DEVICE void
get(const Group& group, const cuda::std::mdspan<U, E2, L2, A2>& destination, const pe_mdspan<T, E, L>& src) {
  detail::require_md_get<U, E2, T, E>();
  detail::device_check_same_shape(
      src.extents(), destination.extents(), "symm::get of a multi-dimensional view: the local side's extent");
  detail::with_group_syncs(group, [&](const auto& g) {
    const remote_accessor<T> from;
    U* to = destination.data_handle();
    const U* remote = src.data_handle().address;
    detail::group_copy_md<detail::column_major_order<typename pe_mdspan<T, E, L>::mapping_type>>(
        g, src.extents(), to, destination.mapping(), remote, src.mapping(), remote,
        [&](std::size_t d, std::size_t s) { to[d] = from.access(src.data_handle(), s).get(); });
  });
}

//! Non-blocking put (device): the stores are issued without waiting; the future's wait() (or quiet()) completes them.
//! The source must stay unchanged until then.
template <cooperating_group Group, class T, class E, class L, class U, class E2, class L2, class A2>
  requires detail::plain_accessor<A2, U>
[[nodiscard]] SYMM_DEVICE device_future<detail::copying_group_t<Group>>
put_nbi(const Group& group, const pe_mdspan<T, E, L>& dst, const cuda::std::mdspan<U, E2, L2, A2>& source) {
  put(group, dst, source);
  return device_future<detail::copying_group_t<Group>>(detail::copying_group(group));
}

//! Non-blocking get (device): `destination` holds the data once the future's wait() returns.
template <cooperating_group Group, class U, class E2, class L2, class A2, class T, class E, class L>
  requires detail::plain_accessor<A2, U>
[[nodiscard]] SYMM_DEVICE device_future<detail::copying_group_t<Group>>
get_nbi(const Group& group, const cuda::std::mdspan<U, E2, L2, A2>& destination, const pe_mdspan<T, E, L>& src) {
  get(group, destination, src);
  return device_future<detail::copying_group_t<Group>>(detail::copying_group(group));
}
#endif

SYMM_END_NAMESPACE

// ---------------------------------------------------------------------------------------------------------------------
// Host code on the CUDA backend: put and get of multi-dimensional views ordered on a stream.
#if SYMM_CUDA_BACKEND()
#  include <cuda_runtime_api.h>

SYMM_BEGIN_NAMESPACE

//! Put ordered on `stream` (one cudaMemcpy2DAsync per index of the outer dimensions): starts after the stream's earlier
//! work; the data is at the target once the stream has run up to it, which the future's wait() waits for. Capturable
//! into a CUDA graph like the span form. `source` may be device or host memory. Extents as for the blocking put.
template <class T, class E, class L, class U, class E2, class L2, class A2>
  requires detail::plain_accessor<A2, U> future<>
  put(cudaStream_t stream, const pe_mdspan<T, E, L>& dst, const cuda::std::mdspan<U, E2, L2, A2>& source) {
    detail::require_md_put<T, E, U, E2>();
    const remote_handle<T>& h = dst.data_handle();
    detail::require_cuda_backend(h.world, "symm::put(stream, ...) of a multi-dimensional view");
    detail::check_same_shape(dst.extents(), source.extents(), h.pe,
                             "symm::put(stream, ...) of a multi-dimensional view");
    return future<>(detail::stream_copy_md(*h.world, stream, h.address, dst.mapping(), source.data_handle(),
                                           source.mapping(), "symm::put(stream, ...) of a multi-dimensional view"));
  }

//! Get ordered on `stream`; the future completes when `destination` holds the data.
template <class U, class E2, class L2, class A2, class T, class E, class L>
  requires detail::plain_accessor<A2, U> future<>
  get(cudaStream_t stream, const cuda::std::mdspan<U, E2, L2, A2>& destination, const pe_mdspan<T, E, L>& src) {
    detail::require_md_get<U, E2, T, E>();
    const remote_handle<T>& h = src.data_handle();
    detail::require_cuda_backend(h.world, "symm::get(stream, ...) of a multi-dimensional view");
    detail::check_same_shape(src.extents(), destination.extents(), h.pe,
                             "symm::get(stream, ...) of a multi-dimensional view");
    return future<>(detail::stream_copy_md(
        *h.world, stream, destination.data_handle(), destination.mapping(), static_cast<const U*>(h.address),
        src.mapping(), "symm::get(stream, ...) of a multi-dimensional view"));
  }

SYMM_END_NAMESPACE
#endif
