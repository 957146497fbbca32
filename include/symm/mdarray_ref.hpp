// symm/mdarray_ref.hpp: the views of a symmetric multi-dimensional array. mdarray_ref<T, Extents, Layout> is what
// kernels take (trivially copyable); its local() is a cuda::std::mdspan, and remote(grid, pe) is a pe_mdspan: a
// cuda::std::mdspan whose accessor reaches PE pe's copy, so that its elements are pe_refs (grid(i, j) = v is a put of
// one element, T(grid(i, j)) a get) and symm::submdspan (symm/submdspan.hpp) cuts a row, a column, a tile or a face of
// it. The owning symm::mdarray is in symm/mdarray.hpp; put and get between such views in symm/md_rma.hpp.
#pragma once

#include <symm/array_ref.hpp>
#include <symm/pe_ref.hpp>
#include <symm/remote.hpp>
#include <symm/submdspan.hpp>

#include <cuda/std/mdspan>

#include <cstddef>
#include <string>
#include <type_traits>

SYMM_BEGIN_NAMESPACE

//! Where a pe_mdspan's elements are: element 0's address in this PE's mapping of PE pe's heap, and the world.
template <class T>
struct remote_handle {
  T* address = nullptr;
  int pe = 0;
  detail::world_interface* world = nullptr;

  remote_handle() = default;
  SYMM_HOST_DEVICE constexpr remote_handle(T* address_, int pe_, detail::world_interface* world_) noexcept
      : address(address_), pe(pe_), world(world_) {}
  //! remote_handle<const T> from remote_handle<T> (what pe_mdspan<const T> from pe_mdspan<T> needs).
  template <class U>
  requires std::is_convertible_v<U (*)[], T (*)[]> SYMM_HOST_DEVICE constexpr remote_handle(
      const remote_handle<U>& other) noexcept
      : address(other.address), pe(other.pe), world(other.world) {}
};

//! The accessor of a pe_mdspan: element i of a handle is a pe_ref, the same proxy as remote(array, pe)[i].
template <class T>
struct remote_accessor {
  using offset_policy = remote_accessor;
  using element_type = T;
  using reference = pe_ref<T>;
  using data_handle_type = remote_handle<T>;

  constexpr remote_accessor() noexcept = default;
  template <class U>
  requires std::is_convertible_v<U (*)[], T (*)[]> SYMM_HOST_DEVICE constexpr remote_accessor(
      remote_accessor<U>) noexcept {}

  SYMM_HOST_DEVICE constexpr reference access(const data_handle_type& h, std::size_t i) const noexcept {
    return reference(h.address + i, h.pe, h.world);
  }
  SYMM_HOST_DEVICE constexpr data_handle_type offset(const data_handle_type& h, std::size_t i) const noexcept {
    return data_handle_type(h.address + i, h.pe, h.world);
  }
};

//! Another PE's copy of a symmetric multi-dimensional array, or a slice of one (symm::submdspan of it, whose
//! layout is then usually layout_stride): remote(grid, pe) returns one.
template <class T, class Extents, class Layout = cuda::std::layout_right>
using pe_mdspan = cuda::std::mdspan<T, Extents, Layout, remote_accessor<T>>;

//! A slice of another PE's copy: symm::submdspan (symm/submdspan.hpp: cuda::std::submdspan, with CCCL 3.0's wrong
//! layout_right slices put right). An unqualified submdspan(remote(grid, pe), slices...) finds this overload through
//! the accessor's namespace and prefers it (it is more specialised than cuda::std's).
template <class T, class Extents, class Layout, class... Slices>
SYMM_HOST_DEVICE constexpr auto submdspan(const pe_mdspan<T, Extents, Layout>& view, Slices... slices) {
  return detail::standard_submdspan(view, slices...);
}

namespace detail {
template <class M>
inline constexpr bool is_pe_mdspan = false;
template <class T, class E, class L>
inline constexpr bool is_pe_mdspan<cuda::std::mdspan<T, E, L, remote_accessor<T>>> = true;

//! "(4, 6)": a shape as messages name it.
template <class Extents>
std::string md_shape_string(const Extents& extents) {
  std::string s = "(";
  for (std::size_t r = 0; r < Extents::rank(); ++r)
    s += (r == 0 ? "" : ", ") + std::to_string(extents.extent(r));
  return s + ")";
}

template <class Layout>
inline constexpr bool owning_layout =
    std::is_same_v<Layout, cuda::std::layout_right> || std::is_same_v<Layout, cuda::std::layout_left>;
} // namespace detail

//! A non-owning view of a symmetric multi-dimensional array: the same extents and layout on every PE, its elements a
//! symmetric array (elements()) of mapping().required_span_size() elements. Trivially copyable: pass it to kernels by
//! value (a symm::mdarray converts to it). Valid while the symm::mdarray it came from lives.
template <class T, class Extents, class Layout = cuda::std::layout_right>
class mdarray_ref {
  static_assert(detail::owning_layout<Layout>,
                "symm::mdarray: the layout must be cuda::std::layout_right or layout_left (every element of the "
                "allocation in use); slices of other layouts are what symm::submdspan of local() or remote() "
                "gives");

public:
  using element_type = T;
  using value_type = std::remove_cv_t<T>;
  using extents_type = Extents;
  using layout_type = Layout;
  using mapping_type = typename Layout::template mapping<Extents>;
  using index_type = typename Extents::index_type;

  mdarray_ref() = default;
  SYMM_HOST_DEVICE mdarray_ref(const array_ref<T>& elements, const mapping_type& mapping) noexcept
      : elements_(elements), mapping_(mapping) {}
  //! mdarray_ref<const T> from mdarray_ref<T>.
  template <class U>
    requires std::is_convertible_v<U (*)[], T (*)[]> SYMM_HOST_DEVICE
    mdarray_ref(const mdarray_ref<U, Extents, Layout>& other)
  noexcept : elements_(other.elements()), mapping_(other.mapping()) {}

  //! This PE's copy. On the CUDA backend it is device memory: index it in kernels, or copy it from the host.
  [[nodiscard]] SYMM_HOST_DEVICE cuda::std::mdspan<T, Extents, Layout> local() const noexcept {
    return cuda::std::mdspan<T, Extents, Layout>(elements_.local().data(), mapping_);
  }
  [[nodiscard]] SYMM_HOST_DEVICE constexpr const extents_type& extents() const noexcept { return mapping_.extents(); }
  [[nodiscard]] SYMM_HOST_DEVICE constexpr index_type extent(std::size_t r) const noexcept {
    return mapping_.extents().extent(r);
  }
  [[nodiscard]] SYMM_HOST_DEVICE constexpr const mapping_type& mapping() const noexcept { return mapping_; }
  //! The number of elements (the product of the extents).
  [[nodiscard]] SYMM_HOST_DEVICE constexpr std::size_t size() const noexcept { return elements_.size(); }
  //! The elements as the flat symmetric array beneath (layout order): for the one-dimensional calls (put of the
  //! whole copy, collectives, array_cast).
  [[nodiscard]] SYMM_HOST_DEVICE constexpr const array_ref<T>& elements() const noexcept { return elements_; }

private:
  array_ref<T> elements_;
  mapping_type mapping_;
};

static_assert(std::is_trivially_copyable_v<mdarray_ref<float, cuda::std::dextents<int, 2>>>,
              "mdarray_ref travels to "
              "kernels by value");

template <class T, class E, class L>
inline constexpr bool enable_symmetric_object<mdarray_ref<T, E, L>> = true;

//! PE `pe`'s copy of a symmetric multi-dimensional array, as a pe_mdspan. Throws errc::invalid_pe (host) or traps
//! (device, SYMM_CHECK >= 1) when pe is not in [0, n_pes), as remote(array, pe).
//! \code
//!   auto peer = symm::remote(grid, up);                                          // pe_mdspan<float, dextents<int, 2>>
//!   peer(0, 5) = 1.0f;                                                           // a put of one element
//!   auto column = symm::submdspan(peer, cuda::std::full_extent, nx - 1);   // its last column
//! \endcode
template <class T, class E, class L, detail::count_integer PE>
[[nodiscard]] SYMM_HOST_DEVICE pe_mdspan<T, E, L> remote(const mdarray_ref<T, E, L>& grid, PE pe) {
  const pe_span<T> elements = remote(grid.elements(), pe);
  return pe_mdspan<T, E, L>(remote_handle<T>(elements.address(), elements.pe(), elements.world()), grid.mapping());
}

SYMM_END_NAMESPACE
