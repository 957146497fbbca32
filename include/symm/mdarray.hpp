// symm/mdarray.hpp: symm::mdarray<T, Extents, Layout>, a symmetric multi-dimensional array (owning, host): the same
// extents and layout on every PE, over a symm::array of its elements. Kernels take its view, mdarray_ref
// (symm/mdarray_ref.hpp), which also has remote(grid, pe); put and get of slices are in symm/md_rma.hpp.
#pragma once

#include <symm/detail/checked_size.hpp>
#include <symm/mdarray_ref.hpp>
#include <symm/symmetric.hpp>
#include <symm/world.hpp>

#include <cuda/std/mdspan>

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

SYMM_BEGIN_NAMESPACE

//! A symmetric multi-dimensional array: extents() elements of T in Layout (cuda::std::layout_right or layout_left) at
//! the same heap offset on every PE. Collective like symm::array: every PE constructs it with the same extents (a PE
//! whose extents differ makes construction throw errc::allocation_mismatch naming each PE's), and destroys it in the
//! same order. Move-only; kernels take mdarray_ref (an implicit conversion).
//! \code
//!   symm::mdarray<float, cuda::std::dextents<int, 2>> grid(world, ny, nx);        // dynamic extents
//!   symm::mdarray<double, cuda::std::extents<int, 8, 8>> tile(world);              // static extents
//!   symm::mdarray<float, cuda::std::dextents<int, 3>> cube(world, cuda::std::dextents<int, 3>(4, 4, 4),
//!                                                          {.zeroed = true});
//!   auto peer = symm::remote(grid, right);                                          // a pe_mdspan
//!   symm::put(symm::submdspan(peer, cuda::std::full_extent, 0), my_last_column);
//! \endcode
template <class T, class Extents, class Layout = cuda::std::layout_right>
class mdarray {
public:
  using element_type = T;
  using value_type = std::remove_cv_t<T>;
  using extents_type = Extents;
  using layout_type = Layout;
  using mapping_type = typename mdarray_ref<T, Extents, Layout>::mapping_type;
  using index_type = typename Extents::index_type;

  //! Collective allocation with the dynamic extents in order, of any integer type (none for static extents). A
  //! negative extent, or one index_type cannot hold, throws errc::invalid_argument naming the PE and the value.
  template <detail::count_integer... Sizes>
    requires(sizeof...(Sizes) == Extents::rank_dynamic())
  explicit mdarray(const world& w, Sizes... dynamic_extents)
      : mdarray(w, checked_extents(w.my_pe(), dynamic_extents...), array_options{}) {}
  //! Collective allocation of `extents`, with options (zero fill, alignment) that every PE passes alike.
  mdarray(const world& w, const Extents& extents, const array_options& options = {})
      : mapping_(checked_mapping(w.my_pe(), extents)), elements_(w, agreed_element_count(w, mapping_), options) {}

  mdarray(mdarray&&) noexcept = default;
  mdarray& operator=(mdarray&&) noexcept = default;
  mdarray(const mdarray&, detail::kernels_and_copies_take_the_view<mdarray_ref<T, Extents, Layout>> = {}) = delete;
  mdarray& operator=(const mdarray&) = delete;

  //! This PE's copy (host memory on the host backend, device memory on the CUDA backend).
  [[nodiscard]] cuda::std::mdspan<T, Extents, Layout> local() const {
    return cuda::std::mdspan<T, Extents, Layout>(elements_.local().data(), mapping_);
  }
  [[nodiscard]] const extents_type& extents() const noexcept { return mapping_.extents(); }
  [[nodiscard]] index_type extent(std::size_t r) const noexcept { return mapping_.extents().extent(r); }
  [[nodiscard]] const mapping_type& mapping() const noexcept { return mapping_; }
  //! The number of elements (the product of the extents).
  [[nodiscard]] std::size_t size() const noexcept { return elements_.size(); }

  //! The trivially copyable view, for kernels; also an implicit conversion.
  [[nodiscard]] mdarray_ref<T, Extents, Layout> ref() const {
    return mdarray_ref<T, Extents, Layout>(elements_.ref(), mapping_);
  }
  operator mdarray_ref<T, Extents, Layout>() const { return ref(); }
  template <class U = T>
    requires(!std::is_const_v<U>)
  operator mdarray_ref<const T, Extents, Layout>() const { return ref(); }
  //! The elements as a flat symmetric array (layout order).
  [[nodiscard]] array_ref<T> elements() const { return elements_.ref(); }

  //! Collective early free, as symm::array::reset().
  void reset() { elements_.reset(); }

private:
  static std::string describe(const Extents& extents) {
    return fmt::format("symm::mdarray of extents {} of {}-byte elements", detail::md_shape_string(extents), sizeof(T));
  }

  //! The extents from the constructor's dynamic ones, each checked: not negative, held by index_type.
  template <class... Sizes>
  static Extents checked_extents([[maybe_unused]] int pe, Sizes... sizes) {
    std::size_t position = 0;
    const std::array<std::int64_t, sizeof...(Sizes)> wide{check_extent(pe, position++, sizes)...};
    return std::apply([](auto... e) { return Extents(static_cast<index_type>(e)...); }, wide);
  }
  template <class Size>
  static std::int64_t check_extent(int pe, std::size_t position, Size size) {
    if (std::cmp_less(size, 0) || std::cmp_greater(size, std::numeric_limits<index_type>::max())) {
      SYMM_THROW(errc::invalid_argument,
                 "PE {}: symm::mdarray of {}-byte elements: dynamic extent #{} is {}, but an extent is at least 0 and "
                 "at most {} (the largest value of the extents' index type)",
                 pe, sizeof(T), position, size, std::numeric_limits<index_type>::max());
    }
    return static_cast<std::int64_t>(size);
  }

  //! The layout's mapping, once the element count is known to fit index_type (the mapping's precondition).
  static mapping_type checked_mapping(int pe, const Extents& extents) {
    const auto most = static_cast<std::size_t>(std::numeric_limits<index_type>::max());
    std::size_t count = 1;
    bool fits = true;
    for (std::size_t r = 0; r < Extents::rank() && count != 0; ++r) {
      const auto e = static_cast<std::size_t>(extents.extent(r));
      fits = fits && (e == 0 || count <= most / e);
      count = fits ? count * e : count;
    }
    if (!fits) {
      SYMM_THROW(errc::invalid_argument,
                 "PE {}: {}: the number of elements is more than the extents' index type counts (at most {})", pe,
                 describe(extents), most);
    }
    return mapping_type(extents);
  }

  //! Collective: every PE's extents and layout are the same (two extents a step), else errc::allocation_mismatch with
  //! each PE's; then the element count, which the allocation agrees on in turn.
  static std::size_t agreed_element_count(const world& w, const mapping_type& mapping) {
    const Extents& extents = mapping.extents();
    constexpr std::size_t rank = Extents::rank();
    detail::world_state& state = *w.state();
    const std::string what = describe(extents);
    for (std::size_t first = 0; rank > 1 && first < rank; first += 2) {
      const auto at = [&](std::size_t r) { return r < rank ? static_cast<std::int64_t>(extents.extent(r)) : -1; };
      const detail::collective_request step{
          0,
          detail::collective_kind::mdarray_shape,
          {detail::mdarray_shape_code(rank, std::is_same_v<Layout, cuda::std::layout_left>, first), at(first),
           at(first + 1)},
          state.team_channels()};
      state.agree(step, state.world_group(), what);
    }
    return detail::checked_element_count(mapping.required_span_size(), sizeof(T), w.my_pe(), what);
  }

  mapping_type mapping_;
  array<T> elements_;
};

template <class T, class E, class L>
inline constexpr bool enable_symmetric_object<mdarray<T, E, L>> = true;

//! PE `pe`'s copy of a symmetric multi-dimensional array (symm/mdarray_ref.hpp has the view's form).
template <class T, class E, class L, detail::count_integer PE>
[[nodiscard]] pe_mdspan<T, E, L> remote(mdarray<T, E, L>& grid, PE pe) {
  return remote(grid.ref(), pe);
}
//! A const mdarray gives read-only remote access.
template <class T, class E, class L, detail::count_integer PE>
[[nodiscard]] pe_mdspan<const T, E, L> remote(const mdarray<T, E, L>& grid, PE pe) {
  return remote(mdarray_ref<const T, E, L>(grid.ref()), pe);
}

SYMM_END_NAMESPACE
