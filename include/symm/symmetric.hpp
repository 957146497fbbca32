// symm/symmetric.hpp: symmetric containers — symm::array<T> / array<T, N> and symm::scalar<T> (owning, host). Their
// trivially copyable views array_ref / scalar_ref, which is what kernels take, are in symm/array_ref.hpp.
#pragma once

#include <symm/array_ref.hpp>
#include <symm/concepts.hpp>
#include <symm/detail/checked_size.hpp>
#include <symm/detail/collective_release.hpp>
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
template <class T, std::size_t Extent> // Extent's default: symm/array_ref.hpp, which declares array
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
template <class T>
inline constexpr bool enable_symmetric_object<scalar<T>> = true;

SYMM_END_NAMESPACE
