// symm/detail/collective_common.hpp: what the host and device algorithms of symm/collectives.hpp share — the kinds of
// collective, the view of a symmetric buffer they work on, how the elements are cut into per-PE chunks, and the
// host-side argument checks (extents, root, overlap) with their messages.
#pragma once

#include <symm/detail/collective_ops.hpp>
#include <symm/detail/team_state.hpp>
#include <symm/symmetric.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

SYMM_BEGIN_NAMESPACE

//! Messages of at most this many bytes per PE (dst, or src where larger) take the one-shot algorithms: every PE reads
//! what it needs from every peer and combines it locally, one round trip of latency. Larger ones take the two-shot
//! algorithms: PE i reduces (or, for broadcast, fetches) only chunk i of the data and stores the result straight into
//! chunk i of every PE's dst — a reduce-scatter fused with an all-gather, which moves about 2x the message per PE
//! instead of n_pes x. 64 KiB is where, on one node, a PE's n_pes-fold reads stop being hidden by the barrier's
//! latency. Same value on every PE, so every PE picks the same algorithm.
inline constexpr std::size_t collective_one_shot_max_bytes = std::size_t{64} << 10;

namespace detail {

enum class collective_id : int { broadcast = 1, fcollect, alltoall, reduce, allreduce, reduce_scatter };

SYMM_HOST_DEVICE constexpr const char* collective_name(collective_id c) noexcept {
  switch (c) {
    case collective_id::broadcast: return "symm::broadcast";
    case collective_id::fcollect: return "symm::fcollect";
    case collective_id::alltoall: return "symm::alltoall";
    case collective_id::reduce: return "symm::reduce";
    case collective_id::allreduce: return "symm::allreduce";
    case collective_id::reduce_scatter: return "symm::reduce_scatter";
  }
  return "symm collective";
}

//! The buffers a collective may take: symm::array and symm::array_ref, and symm::scalar and scalar_ref as arrays of
//! one element (NVSHMEM's one-element buffers). `view(a)` is the buffer as an array_ref (host code: array::ref()
//! checks that the array is alive).
template <class A>
struct buffer_traits : std::false_type {};
template <class T, std::size_t E>
struct buffer_traits<array<T, E>> : std::true_type {
  using element = T;
  static constexpr std::size_t extent = E;
  static constexpr bool owning = true;
  static array_ref<T, E> view(const array<T, E>& a) { return a.ref(); }
};
template <class T, std::size_t E>
struct buffer_traits<array_ref<T, E>> : std::true_type {
  using element = T;
  static constexpr std::size_t extent = E;
  static constexpr bool owning = false;
  static array_ref<T, E> view(const array_ref<T, E>& a) { return a; }
};
template <class T>
struct buffer_traits<scalar<T>> : std::true_type {
  using element = T;
  static constexpr std::size_t extent = 1;
  static constexpr bool owning = true; // a const scalar is read-only, as with remote()
  static array_ref<T, 1> view(const scalar<T>& s) { return s.ref().element(); }
};
template <class T>
struct buffer_traits<scalar_ref<T>> : std::true_type {
  using element = T;
  static constexpr std::size_t extent = 1;
  static constexpr bool owning = false;
  static array_ref<T, 1> view(const scalar_ref<T>& s) { return s.element(); }
};

template <class A>
concept collective_buffer = buffer_traits<std::remove_cvref_t<A>>::value;

template <class A>
using buffer_element = typename buffer_traits<std::remove_cvref_t<A>>::element;
template <class A>
inline constexpr std::size_t buffer_extent = buffer_traits<std::remove_cvref_t<A>>::extent;
//! A dst can be written: its elements are not const, and it is not a const symm::array (whose constness, as with
//! remote(), goes to its elements).
template <class A>
inline constexpr bool writable_buffer =
    !std::is_const_v<buffer_element<A>> &&
    !(buffer_traits<std::remove_cvref_t<A>>::owning && std::is_const_v<std::remove_reference_t<A>>);

//! Checks a (dst, src) pair's element types; true when the collective may be instantiated.
template <class Dst, class Src>
SYMM_HOST_DEVICE constexpr bool check_buffer_pair() {
  static_assert(writable_buffer<Dst>, "symm collective: dst must be writable: a non-const symm::array or "
                                      "symm::scalar, or an array_ref<T> or scalar_ref<T> with non-const T");
  static_assert(std::is_same_v<std::remove_cv_t<buffer_element<Dst>>, std::remove_cv_t<buffer_element<Src>>>,
                "symm collective: dst and src must have the same element type");
  return writable_buffer<Dst> &&
         std::is_same_v<std::remove_cv_t<buffer_element<Dst>>, std::remove_cv_t<buffer_element<Src>>>;
}

//! One symmetric buffer as the algorithms see it: the same (offset, size) on every PE, and the peer tables.
template <class T>
struct sym_buffer {
  std::byte* const* host_peers = nullptr;
  std::byte* const* device_peers = nullptr;
  std::size_t offset = 0;
  std::size_t size = 0;

  //! Element 0 on world PE `pe`, in this PE's mapping (the device table in device code, the host table otherwise).
  [[nodiscard]] SYMM_HOST_DEVICE T* on(int pe) const noexcept {
    return reinterpret_cast<T*>(peer_base(host_peers, device_peers, pe) + offset);
  }
  [[nodiscard]] SYMM_HOST_DEVICE std::size_t bytes() const noexcept { return size * sizeof(T); }
};
static_assert(std::is_trivially_copyable_v<sym_buffer<float>>, "sym_buffer travels to kernels by value");

template <class T, class U, std::size_t E>
SYMM_HOST_DEVICE sym_buffer<T> make_sym_buffer(const array_ref<U, E>& r) {
  return sym_buffer<T>{r.host_peers(), r.device_peers(), r.offset(), r.size()};
}
//! Host only: the view of an array, array_ref, scalar or scalar_ref (array::ref() checks that the array is alive).
template <class T, class A>
sym_buffer<T> host_sym_buffer(const A& a) {
  return make_sym_buffer<T>(buffer_traits<std::remove_cvref_t<A>>::view(a));
}

//! Elements [begin, begin + size).
struct index_range {
  std::size_t begin = 0;
  std::size_t size = 0;
};

//! How many elements of T make one 16-byte vector (1 when T does not divide 16): chunks start on vector boundaries.
template <class T>
inline constexpr std::size_t vector_granule = (16 % sizeof(T) == 0) ? 16 / sizeof(T) : std::size_t{1};

//! Chunk `index` of `count` elements cut into `parts` near-equal chunks of whole granules (the last ones may be short
//! or empty). Two-shot algorithms give chunk i to team PE i.
SYMM_HOST_DEVICE constexpr index_range chunk_of(std::size_t count, int parts, int index, std::size_t granule) noexcept {
  std::size_t per = (count + static_cast<std::size_t>(parts) - 1) / static_cast<std::size_t>(parts);
  per = (per + granule - 1) / granule * granule;
  std::size_t begin = per * static_cast<std::size_t>(index);
  begin = begin < count ? begin : count;
  std::size_t end = begin + per < count ? begin + per : count;
  return index_range{begin, end - begin};
}

//! Whether a collective of this kind and these sizes takes the two-shot algorithm. dst and src the same array (in
//! place) always does: the one-shot allreduce would overwrite data that peers are still reading.
SYMM_HOST_DEVICE constexpr bool use_two_shot(collective_id c, std::size_t bytes, bool in_place) noexcept {
  if (c != collective_id::allreduce && c != collective_id::broadcast && c != collective_id::reduce) return false;
  return bytes > collective_one_shot_max_bytes || (in_place && c == collective_id::allreduce);
}

//! What the element type is, for the agreement check's messages.
template <class T>
constexpr int type_kind() noexcept {
  if constexpr (std::is_same_v<T, bool>) return 4;
  else if constexpr (std::is_floating_point_v<T>) return 3;
  else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) return 1;
  else if constexpr (std::is_integral_v<T>) return 2;
  else return 0;
}

//! The first argument of a collective's agreement request (decoded by describe_collective_call in world_state.hpp).
template <class T>
constexpr std::int64_t collective_call_code(collective_id c, op_code op, int root) noexcept {
  return static_cast<std::int64_t>(c) | static_cast<std::int64_t>(op) << 8 |
         static_cast<std::int64_t>(sizeof(T) & 0xffff) << 16 | static_cast<std::int64_t>(type_kind<T>()) << 32 |
         static_cast<std::int64_t>(root + 1) << 40;
}

//! The team as the collectives need it on the host; throws errc::invalid_argument for an invalid or destroyed team or
//! a finalized world.
//! `what` names the call for the messages (alltoallv, the stream barriers).
inline team_state& collective_team(const std::shared_ptr<team_state>& state, const char* what) {
  if (!state) {
    SYMM_THROW(errc::invalid_argument,
               "{} on an invalid team: the handle is empty (default-made, moved from or "
               "destroyed)",
               what);
  }
  state->require_member(what);
  state->world().require_alive(what);
  return *state;
}
inline team_state& collective_team(const std::shared_ptr<team_state>& state, collective_id c) {
  return collective_team(state, collective_name(c));
}

//! Host-side checks of a collective's arguments, with messages that name the PE, the team and the sizes.
inline void check_collective_args(const team_state& s, collective_id c, std::size_t dst_size, std::size_t src_size,
                                  std::size_t dst_offset, std::size_t src_offset, std::size_t element_size, int root) {
  const int me = s.world().my_pe();
  const std::size_t n = static_cast<std::size_t>(s.pes().size);
  const char* what = collective_name(c);
  switch (c) {
    case collective_id::broadcast:
    case collective_id::reduce:
    case collective_id::allreduce:
      if (dst_size != src_size) {
        SYMM_THROW(errc::extent_mismatch, "PE {}: {} on {}: dst has {} elements but src has {}; they must be equal", me,
                   what, s.name(), dst_size, src_size);
      }
      break;
    case collective_id::fcollect:
      if (dst_size != n * src_size) {
        SYMM_THROW(errc::extent_mismatch,
                   "PE {}: {} on {}: dst has {} elements but must have team.n_pes() * "
                   "src.size() = {} * {} = {}",
                   me, what, s.name(), dst_size, n, src_size, n * src_size);
      }
      break;
    case collective_id::alltoall:
      if (dst_size != src_size || src_size % n != 0) {
        SYMM_THROW(errc::extent_mismatch,
                   "PE {}: {} on {}: dst has {} and src {} elements, but both must have "
                   "team.n_pes() * block elements, the same block of elements going to each of the {} PEs",
                   me, what, s.name(), dst_size, src_size, n);
      }
      break;
    case collective_id::reduce_scatter:
      if (src_size != n * dst_size) {
        SYMM_THROW(errc::extent_mismatch,
                   "PE {}: {} on {}: src has {} elements but must have team.n_pes() * "
                   "dst.size() = {} * {} = {}",
                   me, what, s.name(), src_size, n, dst_size, n * dst_size);
      }
      break;
  }
  if ((c == collective_id::broadcast || c == collective_id::reduce) && (root < 0 || root >= static_cast<int>(n))) {
    SYMM_THROW(errc::invalid_pe,
               "PE {}: {} on {}: root {} is not a PE of the team, whose PEs are 0 to {} "
               "(team numbering)",
               me, what, s.name(), root, n - 1);
  }
  const std::size_t dst_end = dst_offset + dst_size * element_size, src_end = src_offset + src_size * element_size;
  const bool overlap = dst_offset < src_end && src_offset < dst_end && dst_size != 0 && src_size != 0;
  const bool same = dst_offset == src_offset && dst_size == src_size;
  const bool in_place_ok = c == collective_id::broadcast || c == collective_id::reduce || c == collective_id::allreduce;
  if (overlap && !(same && in_place_ok)) {
    SYMM_THROW(errc::invalid_argument,
               "PE {}: {} on {}: dst (heap offset {}, {} bytes) and src (heap offset {}, {} "
               "bytes) overlap; they must be distinct arrays ({})",
               me, what, s.name(), dst_offset, dst_size * element_size, src_offset, src_size * element_size,
               in_place_ok ? "or the same array, for the result in place"
                           : "only broadcast, reduce and allreduce work in place");
  }
}

} // namespace detail
SYMM_END_NAMESPACE
