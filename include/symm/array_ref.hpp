// symm/array_ref.hpp: array_ref<T, Extent> and scalar_ref<T>, the trivially copyable views of symmetric containers
// that kernels take by value (the owning symm::array and symm::scalar are in symm/symmetric.hpp). A translation unit of
// kernels needs these, symm/remote.hpp and symm/rma.hpp, not the host runtime behind symm::world.
#pragma once

#include <symm/concepts.hpp>
#include <symm/detail/extent_name.hpp>
#include <symm/detail/peer_table.hpp>
#include <symm/detail/world_interface.hpp>
#include <symm/error.hpp>

#include <cuda/std/span>

#include <cstddef>
#include <type_traits>

SYMM_BEGIN_NAMESPACE

// The owning containers (symm/symmetric.hpp), declared here so that remote() and the conversions can name them.
template <class T, std::size_t Extent = dynamic_extent>
class array;
template <class T>
class scalar;

//! A non-owning view of a symmetric array: the same (offset, extent) on every PE plus this PE's peer table.
//!
//! Trivially copyable: pass it to kernels by value (a symm::array converts to it implicitly). It is valid while the
//! symm::array it came from lives. `local()` is this PE's part; `symm::remote(ref, pe)` is PE pe's part.
template <class T, std::size_t Extent = dynamic_extent>
class array_ref {
  static_assert(transportable<T>, "symm::array<T>: T must be trivially copyable (transportable), because puts and "
                                  "gets copy its bytes between PEs");

public:
  using element_type = T;
  using value_type = std::remove_cv_t<T>;
  static constexpr std::size_t extent = Extent;

  array_ref() = default;
  SYMM_HOST_DEVICE
  array_ref(detail::world_interface* world, std::byte* const* host_peers, std::byte* const* device_peers,
            std::size_t offset, std::size_t size, int my_pe, int n_pes) noexcept
      : world_(world), host_peers_(host_peers), device_peers_(device_peers), offset_(offset), size_(size),
        my_pe_(my_pe), n_pes_(n_pes) {
    local_ = reinterpret_cast<T*>(host_peers[my_pe] + offset);
  }
  //! array_ref<const T> from array_ref<T>.
  template <class U>
    requires std::is_convertible_v<U (*)[], T (*)[]> SYMM_HOST_DEVICE array_ref(const array_ref<U, Extent>& other)
  noexcept
      : array_ref(other.world(), other.host_peers(), other.device_peers(), other.offset(), other.size(), other.my_pe(),
                  other.n_pes()) {}

  //! This PE's elements. On the CUDA backend this is device memory: read it in kernels, or copy it from the host.
  [[nodiscard]] SYMM_HOST_DEVICE cuda::std::span<T, Extent> local() const noexcept {
    return cuda::std::span<T, Extent>(local_, size());
  }
  [[nodiscard]] SYMM_HOST_DEVICE constexpr std::size_t size() const noexcept {
    if constexpr (Extent != dynamic_extent) return Extent;
    else return size_;
  }
  [[nodiscard]] SYMM_HOST_DEVICE constexpr std::size_t size_bytes() const noexcept { return size() * sizeof(T); }
  //! Byte offset of element 0 in every PE's heap.
  [[nodiscard]] SYMM_HOST_DEVICE constexpr std::size_t offset() const noexcept { return offset_; }
  [[nodiscard]] SYMM_HOST_DEVICE constexpr int my_pe() const noexcept { return my_pe_; }
  [[nodiscard]] SYMM_HOST_DEVICE constexpr int n_pes() const noexcept { return n_pes_; }

  //! Address of element 0 on PE `pe` in this PE's mapping (detail::peer_base says how the table is read).
  [[nodiscard]] SYMM_HOST_DEVICE T* address_on(int pe) const noexcept {
    return reinterpret_cast<T*>(detail::peer_base(host_peers_, device_peers_, pe) + offset_);
  }

  //! Elements [first, first + count) as a symmetric array of their own: the same elements on every PE. Host code
  //! throws errc::invalid_argument when they do not lie inside this array; device code does not check.
  [[nodiscard]] SYMM_HOST_DEVICE array_ref<T> subarray(std::size_t first, std::size_t count) const {
    NV_IF_TARGET(NV_IS_HOST, (check_subarray(first, count);))
    return array_ref<T>(*this, first * sizeof(T), count);
  }

  [[nodiscard]] SYMM_HOST_DEVICE detail::world_interface* world() const noexcept { return world_; }
  [[nodiscard]] SYMM_HOST_DEVICE std::byte* const* host_peers() const noexcept { return host_peers_; }
  [[nodiscard]] SYMM_HOST_DEVICE std::byte* const* device_peers() const noexcept { return device_peers_; }

private:
  template <class, std::size_t>
  friend class array_ref;
  template <class U, class V, std::size_t E>
  friend SYMM_HOST_DEVICE array_ref<U> array_cast(const array_ref<V, E>&);

  //! The bytes of an element of U, as cv-qualified as U (a reinterpret_cast may not drop const).
  template <class U>
  using bytes_of = std::conditional_t<std::is_const_v<U>, const std::byte, std::byte>;

  //! `other`'s bytes from `byte_offset` on, as `size` elements of T (sub-arrays and casts). Works in device code: the
  //! local address comes from other's, not from the host's peer table. The bytes keep U's constness, so a view of
  //! const elements stays one (array_ref<const T>::subarray) and making T non-const from a const U does not compile.
  template <class U, std::size_t E>
  SYMM_HOST_DEVICE array_ref(const array_ref<U, E>& other, std::size_t byte_offset, std::size_t size) noexcept
      : local_(reinterpret_cast<T*>(reinterpret_cast<bytes_of<U>*>(other.local_) + byte_offset)), world_(other.world_),
        host_peers_(other.host_peers_), device_peers_(other.device_peers_), offset_(other.offset_ + byte_offset),
        size_(size), my_pe_(other.my_pe_), n_pes_(other.n_pes_) {}

  void check_subarray(std::size_t first, std::size_t count) const {
    if (count == dynamic_extent) { // not "to the end" as in pe_span::subspan: a subarray's count is a number
      SYMM_THROW(errc::invalid_argument,
                 "PE {}: subarray({}, {}): the count is symm::dynamic_extent, not a number of elements; the symmetric "
                 "array has {} elements",
                 my_pe_, first, detail::extent_name(count), size());
    }
    if (first > size() || count > size() - first) {
      SYMM_THROW(errc::invalid_argument,
                 "PE {}: subarray({}, {}) asks for elements {} to {} of a symmetric array of {} elements", my_pe_,
                 first, count, first, first + count, size());
    }
  }

  T* local_ = nullptr;
  detail::world_interface* world_ = nullptr;
  std::byte* const* host_peers_ = nullptr;
  std::byte* const* device_peers_ = nullptr;
  std::size_t offset_ = 0;
  std::size_t size_ = 0;
  int my_pe_ = 0;
  int n_pes_ = 0;
};

static_assert(std::is_trivially_copyable_v<array_ref<float>>, "array_ref travels to kernels by value");

//! The bytes of a symmetric array as elements of U (what std::as_bytes and reinterpret_cast do for a span):
//! size_bytes() / sizeof(U) of them. U keeps T's constness. Host code throws errc::invalid_argument when the array's
//! heap offset is not aligned for U.
//! \code
//!   symm::array<std::byte> raw(world, 1 << 20);
//!   symm::array_ref<float> floats = symm::array_cast<float>(raw.ref());
//! \endcode
template <class U, class T, std::size_t E>
[[nodiscard]] SYMM_HOST_DEVICE array_ref<U> array_cast(const array_ref<T, E>& a) {
  static_assert(std::is_const_v<U> || !std::is_const_v<T>, "symm::array_cast: cannot cast away const");
  NV_IF_TARGET(NV_IS_HOST, ({
                 if (a.offset() % alignof(U) != 0) {
                   SYMM_THROW(errc::invalid_argument,
                              "PE {}: symm::array_cast to an element of alignment {}: the array lies at heap offset {}",
                              a.my_pe(), alignof(U), a.offset());
                 }
               }))
  return array_ref<U>(a, 0, a.size_bytes() / sizeof(U));
}

//! The kernel-side name of a symmetric array view (same type as array_ref).
template <class T, std::size_t Extent = dynamic_extent>
using device_array = array_ref<T, Extent>;

//! Kernel-side view of a symm::scalar: one element at the same offset on every PE.
template <class T>
class scalar_ref {
public:
  scalar_ref() = default;
  SYMM_HOST_DEVICE explicit scalar_ref(const array_ref<T, 1>& element) noexcept : element_(element) {}
  //! This PE's element. On the CUDA backend this is device memory: dereference it in device code only.
  [[nodiscard]] SYMM_HOST_DEVICE T& local() const noexcept { return element_.local()[0]; }
  [[nodiscard]] SYMM_HOST_DEVICE const array_ref<T, 1>& element() const noexcept { return element_; }

private:
  array_ref<T, 1> element_;
};

template <class T, std::size_t E>
inline constexpr bool enable_symmetric_object<array_ref<T, E>> = true;
template <class T>
inline constexpr bool enable_symmetric_object<scalar_ref<T>> = true;

SYMM_END_NAMESPACE
