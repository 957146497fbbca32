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
                "symm::put_nbi between static extents that differ");
  detail::check_same_extent(dst.size(), std::ranges::size(source), dst.pe(), "put_nbi");
  return future<>(dst.world()->copy_async(dst.address(), std::ranges::data(source), dst.size_bytes()));
}

//! Non-blocking get: `destination` is filled once the future's wait() (or symm::quiet()) returns.
template <class Range, class T, std::size_t E>
  requires writable_contiguous_range_of<Range, std::remove_cv_t<T>>
[[nodiscard]] future<> get_nbi(Range&& destination, const pe_span<T, E>& src) {
  static_assert(!detail::extents_conflict<E, detail::static_extent_v<Range>>,
                "symm::get_nbi between static extents that differ");
  detail::check_same_extent(src.size(), std::ranges::size(destination), src.pe(), "get_nbi");
  return future<>(src.world()->copy_async(std::ranges::data(destination), src.address(), src.size_bytes()));
}

SYMM_END_NAMESPACE
