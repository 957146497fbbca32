// symm/submdspan.hpp: symm::submdspan, cuda::std::submdspan with the slices of layout_right views that CCCL 3.0 (CUDA
// 13.0) gets wrong put right. There, cutting a layout_right mdspan with full_extent in every dimension but the last and
// a sub-range in the last, e.g. submdspan(grid, full_extent, pair{0, 4}) (the first 4 columns), returns a layout_right
// mapping of the sub-extents: strides (4, 1) where the elements are (9, 1) apart in a 6 x 9 grid, so every row after
// the first reads or writes the wrong elements, silently (CCCL's __can_layout_right walks the slices as
// __can_layout_left does; NVIDIA/cccl pull request 11544 fixes it). symm::submdspan returns cuda::std::submdspan's view
// for every other slicing, and for that one the same elements with the source's strides (layout_stride), for any
// accessor: local mdspans and pe_mdspans alike. Use it (or an unqualified submdspan on a pe_mdspan, which finds it)
// wherever a view's last slice is a sub-range.
#pragma once

#include <symm/detail/config.hpp>

#include <cuda/std/array>
#include <cuda/std/mdspan>

#include <cstddef>
#include <type_traits>

SYMM_BEGIN_NAMESPACE

namespace detail {
template <class... Slices>
inline constexpr bool last_slice_is_full = true; // no slices: a rank-0 view
template <class... Slices>
  requires(sizeof...(Slices) > 0)
inline constexpr bool last_slice_is_full<Slices...> =
    std::is_convertible_v<typename decltype((std::type_identity<Slices>{}, ...))::type, cuda::std::full_extent_t>;

//! Whether cuda::std::submdspan of a `SourceLayout` view by `Slices...` returned a `ResultLayout` view of rank
//! `result_rank` that the standard forbids: layout_right of rank >= 2 whose last slice is not the full extent (its
//! strides are then the sub-extents' products, not the source's). No slice is an index then (each before the last
//! converted to full_extent), so the result's dimension r is the source's dimension r.
template <class SourceLayout, class ResultLayout, std::size_t result_rank, class... Slices>
inline constexpr bool wrong_layout_right_slice =
    (std::is_same_v<SourceLayout, cuda::std::layout_right> && std::is_same_v<ResultLayout, cuda::std::layout_right> &&
     result_rank >= 2 && sizeof...(Slices) == result_rank && !last_slice_is_full<Slices...>);

//! The slice the standard specifies: cuda::std::submdspan's, or for the wrong case above the same elements through a
//! layout_stride mapping of the source's strides (1 for an empty view's zero strides, which layout_stride refuses).
template <class T, class Extents, class Layout, class Accessor, class... Slices>
SYMM_HOST_DEVICE constexpr auto
standard_submdspan(const cuda::std::mdspan<T, Extents, Layout, Accessor>& view, Slices... slices) {
  auto sub = cuda::std::submdspan(view, slices...);
  using sub_type = decltype(sub);
  if constexpr (wrong_layout_right_slice<Layout, typename sub_type::layout_type, sub_type::rank(), Slices...>) {
    using sub_extents = typename sub_type::extents_type;
    cuda::std::array<typename sub_extents::index_type, sub_extents::rank()> strides{};
    for (std::size_t r = 0; r < sub_extents::rank(); ++r)
      strides[r] = static_cast<typename sub_extents::index_type>(view.stride(r) > 0 ? view.stride(r) : 1);
    return cuda::std::mdspan<T, sub_extents, cuda::std::layout_stride, typename sub_type::accessor_type>(
        sub.data_handle(), cuda::std::layout_stride::mapping<sub_extents>(sub.extents(), strides), sub.accessor());
  } else {
    return sub;
  }
}
} // namespace detail

//! cuda::std::submdspan(view, slices...), with the layout_right slicing that CCCL 3.0 gets wrong (see above) returned
//! as a layout_stride view of the same elements. (symm/mdarray_ref.hpp adds the pe_mdspan overload that an unqualified
//! call finds.)
template <class T, class Extents, class Layout, class Accessor, class... Slices>
SYMM_HOST_DEVICE constexpr auto
submdspan(const cuda::std::mdspan<T, Extents, Layout, Accessor>& view, Slices... slices) {
  return detail::standard_submdspan(view, slices...);
}

SYMM_END_NAMESPACE
