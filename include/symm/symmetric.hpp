// symm/symmetric.hpp: symmetric containers — symm::array<T> / array<T, N> and symm::scalar<T> (owning, host),
// and their trivially copyable views array_ref / scalar_ref, which is what kernels take.
#pragma once

#include <symm/concepts.hpp>
#include <symm/detail/checked_size.hpp>
#include <symm/detail/collective_release.hpp>
#include <symm/detail/device_check.hpp>
#include <symm/detail/peer_table.hpp>
#include <symm/world.hpp>

#include <cuda/std/span>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <limits>
#include <memory>
#include <type_traits>

SYMM_BEGIN_NAMESPACE

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
  SYMM_HOST_DEVICE array_ref(detail::world_state* world, std::byte* const* host_peers, std::byte* const* device_peers,
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

  [[nodiscard]] SYMM_HOST_DEVICE detail::world_state* world() const noexcept { return world_; }
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
    if (first > size() || count > size() - first) {
      SYMM_THROW(errc::invalid_argument,
                 "PE {}: subarray({}, {}) asks for elements {} to {} of a symmetric array of {} elements", my_pe_,
                 first, count, first, first + count, size());
    }
  }

  T* local_ = nullptr;
  detail::world_state* world_ = nullptr;
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

//! How a symm::array or symm::scalar is allocated: NVSHMEM's calloc and align. Every field has a default, so designated
//! initializers may name any subset (`{.zeroed = true}`). Part of the collective allocation's agreement: every PE must
//! pass the same options, or construction throws errc::allocation_mismatch listing each PE's request.
//! \code
//!   symm::array<float> grid(world, n, {.zeroed = true, .alignment = 4096});   // shmem_calloc + shmem_align
//!   symm::array<int, 16> flags(world, {.zeroed = true});
//! \endcode
struct array_options {
  //! Every element's bytes are 0 on every PE when construction returns (host backend: a memset; cuda and nvshmem: a
  //! cudaMemset on the GPU), and no PE's construction returns before every PE has zeroed its part.
  bool zeroed = false;
  //! Bytes: element 0 lies at a heap offset, and so at an address on every PE, that is a multiple of it. A power of
  //! two, at most the alignment of the heap's base (a page or more on the host backend, the VMM granularity on cuda);
  //! else errc::invalid_argument naming the PE and the value. Below 256 or alignof(T), those apply.
  std::size_t alignment = detail::heap_allocator::min_alignment;
};

//! A symmetric array: `size()` elements of T at the same heap offset on every PE.
//!
//! Construction and destruction are collective: every PE must create and destroy the same symmetric objects, with
//! the same sizes, in the same order. Construction returns when every PE has allocated (a barrier); it throws
//! errc::allocation_mismatch listing each PE's size when the PEs disagree, and errc::heap_exhausted with the bytes
//! asked, free and in total when the heap is full. Destruction completes this PE's outstanding operations and waits
//! for every PE (an out-of-order free is reported as an error, not a hang). Contents start uninitialised unless
//! array_options::zeroed asks for zeros. Move-only.
//!
//! \code
//!   symm::array<float> dst(world, 1024);      // dynamic extent
//!   symm::array<int, 16> flags(world);         // static extent
//!   symm::array<double> acc(world, 1024, {.zeroed = true, .alignment = 4096});
//!   symm::remote(dst, 1) = src.local();        // put into PE 1's dst
//! \endcode
template <class T, std::size_t Extent = dynamic_extent>
class array {
  static_assert(transportable<T>, "symm::array<T>: T must be trivially copyable (transportable), because puts and "
                                  "gets copy its bytes between PEs");
  static_assert(Extent == dynamic_extent || Extent <= std::numeric_limits<std::size_t>::max() / sizeof(T),
                "symm::array<T, N>: N elements of T are more bytes than a std::size_t counts");

public:
  using element_type = T;
  using value_type = std::remove_cv_t<T>;
  static constexpr std::size_t extent = Extent;

  //! Collective allocation of `count` elements (dynamic extent). `count` may be any integer type: a negative one
  //! throws errc::invalid_argument, one whose bytes no std::size_t counts errc::heap_exhausted, before anything is
  //! allocated (a negative int converted to std::size_t would otherwise ask for ~2^64 elements).
  template <detail::count_integer Count>
    requires(Extent == dynamic_extent)
  array(const world& w, Count count) : array(w, count, array_options{}) {}
  //! The same with options (zero fill, alignment); every PE must pass the same ones.
  template <detail::count_integer Count>
    requires(Extent == dynamic_extent)
  array(const world& w, Count count, const array_options& options)
      : array(w.state(), detail::checked_element_count(count, sizeof(T), w.my_pe(), describe()), options) {}
  //! Collective allocation of Extent elements (static extent), with options or without.
  explicit array(const world& w) requires(Extent != dynamic_extent) : array(w.state(), Extent, array_options{}) {}
  array(const world& w, const array_options& options) requires(Extent != dynamic_extent)
      : array(w.state(), Extent, options) {}

  array(array&& other) noexcept : world_(std::move(other.world_)), ref_(other.ref_), uncaught_(other.uncaught_) {}
  array& operator=(array&& other) noexcept {
    if (this != &other) {
      release();
      world_ = std::move(other.world_);
      ref_ = other.ref_;
      uncaught_ = other.uncaught_;
    }
    return *this;
  }
  // Not copyable: kernels take symm::array_ref<T> (symm::device_array<T>); pass the array (it converts) or ref().
  array(const array&, detail::kernels_and_copies_take_the_view<array_ref<T, Extent>> = {}) = delete;
  array& operator=(const array&) = delete;
  ~array() { release(); }

  //! This PE's elements (host memory on the host backend, device memory on the CUDA backend).
  [[nodiscard]] cuda::std::span<T, Extent> local() const {
    require_live("array::local()");
    return ref_.local();
  }
  [[nodiscard]] constexpr std::size_t size() const noexcept { return ref_.size(); }
  [[nodiscard]] constexpr std::size_t size_bytes() const noexcept { return ref_.size_bytes(); }
  [[nodiscard]] std::size_t offset() const noexcept { return ref_.offset(); }

  //! The trivially copyable view, for kernels; also an implicit conversion.
  [[nodiscard]] array_ref<T, Extent> ref() const {
    require_live("array::ref()");
    return ref_;
  }
  operator array_ref<T, Extent>() const { return ref(); }
  template <class U = T>
    requires(!std::is_const_v<U>)
  operator array_ref<const T, Extent>() const { return ref(); }

  //! Collective early free: what the destructor does, but errors are thrown rather than printed.
  void reset() {
    if (!world_) return;
    auto world = std::move(world_);
    if (world->alive()) world->deallocate(ref_.offset(), "symm::array::reset()");
  }

private:
  array(const std::shared_ptr<detail::world_state>& world, std::size_t count, const array_options& options)
      : world_(world), uncaught_(std::uncaught_exceptions()) {
    world->require_alive("symm::array construction");
    check_alignment(*world, options.alignment);
    std::size_t bytes = count * sizeof(T); // cannot wrap: checked_element_count, or the static_assert on Extent
    auto what = fmt::format("symm::array of {} elements of {} bytes", count, sizeof(T));
    std::size_t offset = world->allocate(bytes, std::max(options.alignment, alignof(T)), what, options.zeroed);
    ref_ = array_ref<T, Extent>(world.get(), world->peer_bases(), world->device_peer_bases(), offset, count,
                                world->my_pe(), world->n_pes());
  }

  static std::string describe() { return fmt::format("symm::array of {}-byte elements", sizeof(T)); }

  //! Before the agreement, like the element count's check: a bad value is this PE's error, not a mismatch.
  static void check_alignment(const detail::world_state& world, std::size_t alignment) {
    if (!std::has_single_bit(alignment)) {
      SYMM_THROW(errc::invalid_argument,
                 "PE {}: {}: array_options::alignment = {} is not a power of two (an alignment is 1, 2, 4, ... bytes)",
                 world.my_pe(), describe(), alignment);
    }
    if (alignment > world.max_alignment()) {
      SYMM_THROW(errc::invalid_argument,
                 "PE {}: {}: array_options::alignment = {} is more than this PE's symmetric heap can promise: its base "
                 "is aligned to {} bytes, and the PEs agree on heap offsets, not addresses",
                 world.my_pe(), describe(), alignment, world.max_alignment());
    }
  }

  void require_live(const char* what) const {
    if (!world_) SYMM_THROW(errc::invalid_argument, "{} on a moved-from or reset symm::array", what);
    world_->require_alive(what);
  }

  void release() noexcept {
    if (!world_) return;
    // Made while unwinding too, so that a PE that catches the exception stays in step with the others
    // (detail/collective_release.hpp has the rule and what happens when the release fails).
    auto world = std::move(world_);
    detail::release_collectively(
        *world, "a symm::array", std::uncaught_exceptions() > uncaught_, detail::on_release_failure::abort,
        [&] { world->deallocate(ref_.offset(), "symm::array's destructor"); });
  }

  std::shared_ptr<detail::world_state> world_;
  array_ref<T, Extent> ref_;
  int uncaught_ = 0;
};

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

//! A symmetric single value: `symm::remote(s, pe)` is a pe_ref<T>. Collective like symm::array.
template <class T>
class scalar {
public:
  explicit scalar(const world& w) : element_(w) {}
  //! With options: `symm::scalar<long> total(world, {.zeroed = true});`.
  scalar(const world& w, const array_options& options) : element_(w, options) {}
  // Move-only: kernels take symm::scalar_ref<T>; pass the scalar (it converts) or ref().
  scalar(const scalar&, detail::kernels_and_copies_take_the_view<scalar_ref<T>> = {}) = delete;
  scalar& operator=(const scalar&) = delete;
  scalar(scalar&&) = default;
  scalar& operator=(scalar&&) = default;
  //! This PE's value. On the CUDA backend it is device memory: use remote(s, my_pe) from host code.
  [[nodiscard]] T& local() const { return element_.local()[0]; }
  [[nodiscard]] scalar_ref<T> ref() const { return scalar_ref<T>(element_.ref()); }
  operator scalar_ref<T>() const { return ref(); }
  void reset() { element_.reset(); }

private:
  array<T, 1> element_;
};

template <class T, std::size_t E>
inline constexpr bool enable_symmetric_object<array<T, E>> = true;
template <class T, std::size_t E>
inline constexpr bool enable_symmetric_object<array_ref<T, E>> = true;
template <class T>
inline constexpr bool enable_symmetric_object<scalar<T>> = true;
template <class T>
inline constexpr bool enable_symmetric_object<scalar_ref<T>> = true;

SYMM_END_NAMESPACE
