// symm/rma.hpp: one-sided put and get as free functions — blocking and non-blocking (futures) in host code; the
// group-scoped device forms are in symm/device_rma.hpp.
#pragma once

#include <symm/future.hpp>
#include <symm/pe_span.hpp>

#include <ranges>

SYMM_BEGIN_NAMESPACE

//! Put: copies `source` into PE dst.pe()'s elements. Complete (visible at the target) when it returns.
//! Throws errc::extent_mismatch when the sizes differ (compile error when both are static).
template <class T, std::size_t E, class Range>
  requires contiguous_range_of<Range, T>
void put(const pe_span<T, E>& dst, Range&& source) {
  dst = std::forward<Range>(source);
}

//! Get: copies PE src.pe()'s elements into `destination`. Complete when it returns.
template <class Range, class T, std::size_t E>
  requires writable_contiguous_range_of<Range, std::remove_cv_t<T>>
void get(Range&& destination, const pe_span<T, E>& src) {
  src.get(std::forward<Range>(destination));
}

//! Non-blocking put: starts the copy and returns at once. The source must stay unchanged, and the target is not
//! guaranteed updated, until the future's wait() (or symm::quiet()) returns.
template <class T, std::size_t E, class Range>
  requires contiguous_range_of<Range, T>
[[nodiscard]] future<> put_nbi(const pe_span<T, E>& dst, Range&& source) {
  static_assert(!std::is_const_v<T>, "symm::put_nbi: cannot put into a pe_span<const T>: the remote data is const");
  static_assert(!detail::extents_conflict<E, detail::static_extent_v<Range>>,
                "symm::put_nbi between static extents "
                "that differ");
  detail::check_same_extent(dst.size(), std::ranges::size(source), dst.pe(), "put_nbi", E,
                            detail::static_extent_v<Range>);
  return future<>(dst.world()->copy_async(dst.address(), std::ranges::data(source), dst.size_bytes()));
}

//! Non-blocking get: `destination` is filled once the future's wait() (or symm::quiet()) returns.
template <class Range, class T, std::size_t E>
  requires writable_contiguous_range_of<Range, std::remove_cv_t<T>>
[[nodiscard]] future<> get_nbi(Range&& destination, const pe_span<T, E>& src) {
  static_assert(!detail::extents_conflict<E, detail::static_extent_v<Range>>,
                "symm::get_nbi between static extents "
                "that differ");
  detail::check_same_extent(src.size(), std::ranges::size(destination), src.pe(), "get_nbi", E,
                            detail::static_extent_v<Range>);
  return future<>(src.world()->copy_async(std::ranges::data(destination), src.address(), src.size_bytes()));
}

// Anything else as the local side: a compile error that says what to write (detail::diagnose_local_range).
template <class T, std::size_t E, class Range>
  requires(!contiguous_range_of<Range, T>)
void put(const pe_span<T, E>&, Range&&) {
  detail::diagnose_local_range<Range, T, false>();
}
template <class Range, class T, std::size_t E>
  requires(!writable_contiguous_range_of<Range, std::remove_cv_t<T>>)
void get(Range&&, const pe_span<T, E>&) {
  detail::diagnose_local_range<Range, T, true>();
}
template <class T, std::size_t E, class Range>
  requires(!contiguous_range_of<Range, T>)
future<> put_nbi(const pe_span<T, E>&, Range&&) {
  detail::diagnose_local_range<Range, T, false>();
  return {};
}
template <class Range, class T, std::size_t E>
  requires(!writable_contiguous_range_of<Range, std::remove_cv_t<T>>)
future<> get_nbi(Range&&, const pe_span<T, E>&) {
  detail::diagnose_local_range<Range, T, true>();
  return {};
}

SYMM_END_NAMESPACE

// ---------------------------------------------------------------------------------------------------------------------
// Device code: group-scoped put and get. Every thread of `group` calls with the same arguments; the group's threads
// share the copy (16-byte accesses when the alignment allows). On return each thread's share of the source may be
// reused; the group synchronises (group.sync(), or a barrier) before a thread reuses data another thread copied, as
// with any cooperative_groups work. The data is on its way: fence() orders it, quiet() completes it, and a device
// barrier does both. No synchronisation is added inside: small transfers cost only their loads and stores. Given
// symm::synced(group), the group synchronises before and after the copy, as NVSHMEM's *_block and *_warp calls do.
#if SYMM_CUDA_COMPILATION()
#  include <symm/detail/device_copy.hpp>
#  include <symm/group.hpp>

#  include <cuda/atomic>

SYMM_BEGIN_NAMESPACE

namespace detail {
template <class U, class T>
inline constexpr bool same_element = std::is_same_v<std::remove_cv_t<U>, std::remove_cv_t<T>>;
}

//! Put from device code: `group` copies `source` into PE dst.pe()'s elements.
//! \code  symm::put(cooperative_groups::this_thread_block(), symm::remote(u, right), u.local().first(256)); \endcode
template <cooperating_group Group, class T, std::size_t E, class U, std::size_t E2>
requires detail::same_element<U, T> SYMM_DEVICE void
put(const Group& group, const pe_span<T, E>& dst, cuda::std::span<U, E2> source) {
  static_assert(!std::is_const_v<T>, "symm::put: cannot put into a pe_span<const T>: the remote data is const");
  static_assert(!detail::extents_conflict<E, E2>, "symm::put between static extents that differ");
  detail::with_group_syncs(group, [&](const auto& g) {
    detail::group_copy(g, dst.address(), dst.size_bytes(), source.data(), source.size_bytes());
  });
}

//! Get from device code: `group` copies PE src.pe()'s elements into `destination`; each thread's share has landed
//! on return, the whole destination once the group synchronises (group.sync()).
template <cooperating_group Group, class U, std::size_t E2, class T, std::size_t E>
requires detail::same_element<U, T> SYMM_DEVICE void
get(const Group& group, cuda::std::span<U, E2> destination, const pe_span<T, E> src) {
  static_assert(!std::is_const_v<U>, "symm::get: the destination must be writable");
  static_assert(!detail::extents_conflict<E, E2>, "symm::get between static extents that differ");
  detail::with_group_syncs(group, [&](const auto& g) {
    detail::group_copy(g, destination.data(), destination.size_bytes(), src.address(), src.size_bytes());
  });
}

//! Completion of a device-side non-blocking put or get, for the group that issued it.
template <class Group>
class [[nodiscard]] device_future {
public:
  SYMM_DEVICE explicit device_future(const Group& group) : group_(group) {}
  //! Every thread of the group calls it: the operation is complete (visible at the target) when it returns.
  SYMM_DEVICE void wait() const {
    cuda::atomic_thread_fence(cuda::memory_order_seq_cst, cuda::thread_scope_system);
    detail::rma_quiet();
    if constexpr (detail::syncs_after_bulk<Group>) detail::sync_group(group_);
  }

private:
  Group group_;
};

//! Non-blocking put from device code: the stores are issued without waiting for the group; wait() (or quiet())
//! completes them. The source must stay unchanged until then.
template <cooperating_group Group, class T, std::size_t E, class U, std::size_t E2>
  requires detail::same_element<U, T>
[[nodiscard]] SYMM_DEVICE device_future<detail::copying_group_t<Group>>
put_nbi(const Group& group, const pe_span<T, E>& dst, cuda::std::span<U, E2> source) {
  static_assert(!std::is_const_v<T>, "symm::put_nbi: cannot put into a pe_span<const T>: the remote data is const");
  static_assert(!detail::extents_conflict<E, E2>, "symm::put_nbi between static extents that differ");
  detail::with_group_syncs(group, [&](const auto& g) {
    detail::group_copy(g, dst.address(), dst.size_bytes(), source.data(), source.size_bytes());
  });
  return device_future<detail::copying_group_t<Group>>(detail::copying_group(group));
}

template <cooperating_group Group, class U, std::size_t E2, class T, std::size_t E>
  requires detail::same_element<U, T>
[[nodiscard]] SYMM_DEVICE device_future<detail::copying_group_t<Group>>
get_nbi(const Group& group, cuda::std::span<U, E2> destination, const pe_span<T, E> src) {
  static_assert(!std::is_const_v<U>, "symm::get_nbi: the destination must be writable");
  detail::with_group_syncs(group, [&](const auto& g) {
    detail::group_copy(g, destination.data(), destination.size_bytes(), src.address(), src.size_bytes());
  });
  return device_future<detail::copying_group_t<Group>>(detail::copying_group(group));
}

SYMM_END_NAMESPACE
#endif

// ---------------------------------------------------------------------------------------------------------------------
// Host code on the CUDA backend: operations ordered on a stream, done by the copy engine through the peer mapping.
#if SYMM_CUDA_BACKEND()
#  include <cuda_runtime_api.h>

SYMM_BEGIN_NAMESPACE

//! Put ordered on `stream`: starts after the stream's earlier work; the data is at the target once the stream has run
//! up to it, which the returned future's wait() waits for (with whatever the stream holds by then). Dropping the
//! future does not wait. `source` may be device or host memory.
template <class T, std::size_t E, class Range>
  requires contiguous_range_of<Range, T> future<> put(cudaStream_t stream, const pe_span<T, E>& dst, Range&& source) {
    static_assert(!std::is_const_v<T>, "symm::put: cannot put into a pe_span<const T>: the remote data is const");
    static_assert(!detail::extents_conflict<E, detail::static_extent_v<Range>>,
                  "symm::put between static extents that "
                  "differ");
    detail::require_cuda_backend(dst.world(), "symm::put(stream, ...)");
    detail::check_same_extent(dst.size(), std::ranges::size(source), dst.pe(), "put(stream, ...)", E,
                              detail::static_extent_v<Range>);
    return future<>(dst.world()->copy_on_stream(
        stream, dst.address(), std::ranges::data(source), dst.size_bytes(), "symm::put(stream, ...)"));
  }

//! Get ordered on `stream`; the future completes when `destination` holds the data.
template <class Range, class T, std::size_t E>
  requires writable_contiguous_range_of<Range, std::remove_cv_t<T>> future<>
  get(cudaStream_t stream, Range&& destination, const pe_span<T, E>& src) {
    static_assert(!detail::extents_conflict<E, detail::static_extent_v<Range>>,
                  "symm::get between static extents that "
                  "differ");
    detail::require_cuda_backend(src.world(), "symm::get(stream, ...)");
    detail::check_same_extent(src.size(), std::ranges::size(destination), src.pe(), "get(stream, ...)", E,
                              detail::static_extent_v<Range>);
    return future<>(src.world()->copy_on_stream(
        stream, std::ranges::data(destination), src.address(), src.size_bytes(), "symm::get(stream, ...)"));
  }

SYMM_END_NAMESPACE
#endif
