// symm/pe_span.hpp: pe_span<T, Extent>, a contiguous run of a symmetric object's elements on another PE.
#pragma once

#include <symm/concepts.hpp>
#include <symm/detail/backend/nvshmem/device_rma.hpp>
#include <symm/detail/extent_name.hpp>
#include <symm/detail/peer_table.hpp>
#include <symm/detail/world_interface.hpp>
#include <symm/group.hpp>
#include <symm/pe_ref.hpp>

#include <cuda/std/span>

#include <ranges>
#include <type_traits>
#include <vector>

SYMM_BEGIN_NAMESPACE

template <class T, std::size_t Extent = dynamic_extent>
class pe_span;

namespace detail {
//! Throws errc::extent_mismatch naming both sizes, the PE and both sides' extents (the static ones as numbers, a
//! dynamic one as `dynamic`: at least one is, or the mismatch would not have compiled).
inline void check_same_extent(std::size_t remote_size, std::size_t local_size, int pe, const char* what,
                              std::size_t remote_extent, std::size_t local_extent) {
  if (remote_size != local_size) {
    SYMM_THROW(errc::extent_mismatch,
               "{}: the remote side on PE {} has {} elements but the local side has {} (extents: remote {}, local {})",
               what, pe, remote_size, local_size, extent_name(remote_extent), extent_name(local_extent));
  }
}

template <class>
inline constexpr bool is_pe_span = false;
template <class T, std::size_t E>
inline constexpr bool is_pe_span<pe_span<T, E>> = true;

//! Why `Range` cannot be the local side of a put or get of T elements (`Writable`: a get's destination): one
//! static_assert a case, which the catch-all overloads of pe_span, put, get, put_nbi and get_nbi reach, so that the
//! first error of a common mistake says what to write instead of listing overloads that do not match.
template <class Range, class T, bool Writable>
SYMM_HOST_DEVICE constexpr void diagnose_local_range() {
  using R = std::remove_cvref_t<Range>;
  if constexpr (symmetric_object<R>) {
    static_assert(always_false<R>, "symm: put/get: a symmetric object (symm::array, symm::scalar) as the local side; "
                                   "pass its part on this PE, a.local(), or symm::remote(a, pe) for another PE's");
  } else if constexpr (is_pe_span<R>) {
    static_assert(always_false<R>, "symm: put/get between two remote spans would hide a get and a put: get into local "
                                   "memory first (dst = std::vector<T>(src)), or put from a device kernel");
  } else if constexpr (!std::ranges::contiguous_range<R> || !std::ranges::sized_range<R>) {
    static_assert(always_false<R>, "symm: put/get: the local side must be a contiguous sized range of the remote "
                                   "element type (a.local(), std::vector, std::array, std::span, cuda::std::span)");
  } else if constexpr (!std::same_as<std::remove_cv_t<std::ranges::range_value_t<R>>, std::remove_cv_t<T>>) {
    static_assert(always_false<R>, "symm: put/get: the element types differ; a put or get copies elements of one "
                                   "type, so convert into a range of the remote element type first");
  } else if constexpr (Writable) {
    static_assert(always_false<R>, "symm: get: the destination is const; pass a writable range");
  }
}
} // namespace detail

//! The elements [offset, offset + size) of a symmetric object on PE `pe()`: `symm::remote(obj, pe)`.
//!
//! Like std::span, but every access is communication, and the type says so. In host code, `remote = range` puts the
//! local range there (complete on return) and `range = remote` / `remote.get(out)` gets it; in device code, one
//! thread's `remote = span` copies element by element, and symm::put / symm::get take a cooperating group for bulk.
//! Elements are pe_ref<T>. Extents are checked: at compile time when both are static, else at run time.
//! Trivially copyable; valid as long as the symmetric object.
template <class T, std::size_t Extent>
class pe_span {
  static_assert(transportable<T>, "symm::pe_span<T>: T must be trivially copyable (transportable)");

public:
  using element_type = T;
  using value_type = std::remove_cv_t<T>;
  using reference = pe_ref<T>;
  static constexpr std::size_t extent = Extent;

  SYMM_HOST_DEVICE constexpr pe_span(T* address, std::size_t size, int pe, detail::world_interface* world) noexcept
      : address_(address), size_(size), pe_(pe), world_(world) {}

  //! A pe_span<const T> can be made from a pe_span<T>; the other way round does not compile.
  template <class U, std::size_t E>
    requires(std::is_convertible_v<U (*)[], T (*)[]> && (E == Extent || Extent == dynamic_extent))
  SYMM_HOST_DEVICE constexpr pe_span(const pe_span<U, E>& other) noexcept
      : address_(other.address()), size_(other.size()), pe_(other.pe()), world_(other.world()) {}

  [[nodiscard]] SYMM_HOST_DEVICE constexpr std::size_t size() const noexcept {
    if constexpr (Extent != dynamic_extent) return Extent;
    else return size_;
  }
  [[nodiscard]] SYMM_HOST_DEVICE constexpr std::size_t size_bytes() const noexcept { return size() * sizeof(T); }
  [[nodiscard]] SYMM_HOST_DEVICE constexpr bool empty() const noexcept { return size() == 0; }
  [[nodiscard]] SYMM_HOST_DEVICE constexpr int pe() const noexcept { return pe_; }
  //! The first element's address in this PE's mapping of PE pe()'s heap (valid in device code on the CUDA backend).
  [[nodiscard]] SYMM_HOST_DEVICE constexpr T* address() const noexcept { return address_; }
  [[nodiscard]] SYMM_HOST_DEVICE constexpr detail::world_interface* world() const noexcept { return world_; }
  //! NVSHMEM's nvshmem_ptr: the first element on PE pe() as a plain pointer, for loads and stores of one's own (a
  //! hand-written kernel, a library that takes T*); null when this PE does not map that PE's heap (the nvshmem backend,
  //! a peer on another node), where only symm's operations reach it. Host backend: host memory. cuda and nvshmem
  //! backends: GPU memory, for device code and CUDA copies, not host loads. Valid while the symmetric object lives.
  //! \code
  //!   if (float* right = symm::remote(u, pe + 1).data()) my_kernel<<<g, b>>>(right, n);   // else: symm::put
  //! \endcode
  [[nodiscard]] SYMM_HOST_DEVICE constexpr T* data() const noexcept {
    return detail::is_rma_address(address_) ? nullptr : address_;
  }

  //! One remote element; not bounds-checked in device code (SYMM_CHECK applies to host code).
  [[nodiscard]] SYMM_HOST_DEVICE constexpr pe_ref<T> operator[](std::size_t i) const {
    NV_IF_TARGET(NV_IS_HOST, (if constexpr (SYMM_CHECK_LEVEL(1)) {
                   if (i >= size()) {
                     SYMM_THROW(errc::invalid_argument, "remote(obj, {})[{}]: index out of range for {} elements", pe_,
                                i, size());
                   }
                 }))
    return pe_ref<T>(address_ + i, pe_, world_);
  }

  [[nodiscard]] SYMM_HOST_DEVICE constexpr pe_span<T>
  subspan(std::size_t offset, std::size_t count = dynamic_extent) const {
    NV_IF_TARGET(NV_IS_HOST, (check_range(offset, count, "subspan", true);))
    if (count == dynamic_extent) count = size() - offset;
    return pe_span<T>(address_ + offset, count, pe_, world_);
  }
  [[nodiscard]] SYMM_HOST_DEVICE constexpr pe_span<T> first(std::size_t count) const { return subspan(0, count); }
  [[nodiscard]] SYMM_HOST_DEVICE constexpr pe_span<T> last(std::size_t count) const {
    NV_IF_TARGET(NV_IS_HOST, (check_range(0, count, "last");))
    return pe_span<T>(address_ + (size() - count), count, pe_, world_);
  }
  template <std::size_t Count>
  [[nodiscard]] SYMM_HOST_DEVICE constexpr pe_span<T, Count> first() const {
    static_assert(Extent == dynamic_extent || Count <= Extent, "pe_span::first<N>(): N exceeds the static extent");
    NV_IF_TARGET(NV_IS_HOST, (check_range(0, Count, "first");))
    return pe_span<T, Count>(address_, Count, pe_, world_);
  }
  template <std::size_t Count>
  [[nodiscard]] SYMM_HOST_DEVICE constexpr pe_span<T, Count> last() const {
    static_assert(Extent == dynamic_extent || Count <= Extent, "pe_span::last<N>(): N exceeds the static extent");
    NV_IF_TARGET(NV_IS_HOST, (check_range(0, Count, "last");))
    return pe_span<T, Count>(address_ + (size() - Count), Count, pe_, world_);
  }

  //! Put: copies `source` (a contiguous range of T) into these remote elements. Host: complete on return. Device: one
  //! thread copies element by element; use symm::put(group, ...) to share the work.
  template <class Range>
  requires contiguous_range_of<Range, T> SYMM_HOST_DEVICE const pe_span& operator=(Range&& source) const {
    static_assert(!std::is_const_v<T>, "symm: cannot put into a pe_span<const T>: the remote data is const");
    static_assert(!detail::extents_conflict<Extent, detail::static_extent_v<Range>>,
                  "symm: put between static extents that differ (remote(a, pe) = b needs a.size() == b.size())");
    NV_IF_TARGET(NV_IS_DEVICE, ({
                   auto* src = source.data();
                   if (detail::is_rma_address(address_)) {
                     detail::rma_group_copy(single_thread{}, address_, src, size_bytes());
                   } else {
                     for (std::size_t i = 0; i < size(); ++i)
                       address_[i] = src[i];
                   }
                 }),
                 ({
                   detail::check_same_extent(size(), std::ranges::size(source), pe_, "put", Extent,
                                             detail::static_extent_v<Range>);
                   world_->copy(address_, std::ranges::data(source), size_bytes());
                 }))
    return *this;
  }
  //! Anything else as the source: a compile error that says what to write (detail::diagnose_local_range). A pe_span
  //! of this very type meets the deleted copy assignment below instead (else the two would be ambiguous).
  template <class Range>
    requires(!contiguous_range_of<Range, T> && !std::is_same_v<std::remove_cvref_t<Range>, pe_span>)
  SYMM_HOST_DEVICE const pe_span& operator=(Range&&) const {
    detail::diagnose_local_range<Range, T, false>();
    return *this;
  }
  // Copying one remote span to another would hide a get and a put: write `dst = std::vector<T>(src)` or use a
  // device-side put from a local span.
  pe_span& operator=(const pe_span&) = delete;

  //! Get into `destination`, a contiguous range of exactly size() elements; complete on return. Host only.
  template <class Range>
    requires writable_contiguous_range_of<Range, value_type>
  void get(Range&& destination) const {
    static_assert(!detail::extents_conflict<Extent, detail::static_extent_v<Range>>,
                  "symm: get between static extents "
                  "that differ");
    detail::check_same_extent(size(), std::ranges::size(destination), pe_, "get", Extent,
                              detail::static_extent_v<Range>);
    world_->copy(std::ranges::data(destination), address_, size_bytes());
  }

  //! Anything else as the destination: a compile error that says what to write.
  template <class Range>
    requires(!writable_contiguous_range_of<Range, value_type>)
  void get(Range&&) const { detail::diagnose_local_range<Range, value_type, true>(); }

  //! Get of the whole span into a new vector. Host only.
  [[nodiscard]] std::vector<value_type> get() const {
    std::vector<value_type> out(size());
    get(out);
    return out;
  }
  operator std::vector<value_type>() const { return get(); }

private:
  //! Host check that elements [offset, offset + count) lie inside the span. A count of dynamic_extent means "to the
  //! end" where `to_end` (subspan's default) and is out of range anywhere else; messages spell it `dynamic`.
  void check_range(std::size_t offset, std::size_t count, const char* what, bool to_end = false) const {
    if constexpr (SYMM_CHECK_LEVEL(1)) {
      if (count == dynamic_extent) {
        if (to_end && offset <= size()) return;
        SYMM_THROW(errc::invalid_argument, "remote(obj, {}).{}: offset {}, count {}: outside the {} elements", pe_,
                   what, offset, detail::extent_name(count), size());
      }
      if (offset > size() || count > size() - offset) {
        SYMM_THROW(errc::invalid_argument, "remote(obj, {}).{}: [{}, {}) is outside the {} elements", pe_, what, offset,
                   offset + count, size());
      }
    }
  }

  T* address_;
  std::size_t size_;
  int pe_;
  detail::world_interface* world_;
};

static_assert(std::is_trivially_copyable_v<pe_span<int>>, "pe_span travels to kernels by value");

SYMM_END_NAMESPACE
