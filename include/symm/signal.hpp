// symm/signal.hpp: signals — 64-bit symmetric words that say "your data has arrived" — and put_signal, which
// delivers data and then updates the target's signal (OpenSHMEM's put_signal / signal_wait_until, NVSHMEM's
// put_signal), and signal_update, the update alone (NVSHMEM's signal_op), in host and device code.
//
//   symm::array<float> buf(world, n);
//   symm::signal ready(world);                                           // 0 on every PE
//   // producer (PE 0):
//   symm::put_signal(symm::remote(buf, 1), data, symm::remote(ready, 1), round, symm::signal_op::set);
//   // consumer (PE 1):
//   symm::signal_wait_until(ready, symm::cmp::ge, round);                // then buf.local() holds the data
//
// Guarantees (docs/ordering.md has the whole model):
// - the data of a put_signal is visible at the target before the signal update is: a PE that sees the new signal
//   value (signal_wait_until, signal_fetch, both with acquire order) sees the data;
// - the signal update is atomic (a release store for signal_op::set, a release fetch_add for signal_op::add, at system
//   scope), so several producers may add into one signal;
// - nothing orders one put_signal after an earlier put to the same PE except fence() (or quiet()) between them.
//
// Where they run:
// - host code, host backend: put_signal copies, then updates the signal; complete on return (put_signal_nbi too, its
//   future is then empty). signal_wait_until spins, then yields, checking that the other PEs are alive.
// - device code (both backends): the group copies, synchronises, and one thread fences at system scope and updates the
//   signal with release order. put_signal_nbi does the same and returns a device_future whose wait() (or quiet())
//   completes the transfer from the group's side.
// - host code, CUDA backend: put_signal(stream, ...) orders the copy (cudaMemcpyAsync) and then the signal store
//   (cuStreamWriteValue64, which the driver precedes by a system-wide fence) on a stream, and returns a future.
//   Only signal_op::set: the stream has no atomic add, so signal_op::add throws errc::unsupported there (do it in a
//   kernel). The forms without a stream use the world's own stream; put_signal waits for it, put_signal_nbi does not
//   (quiet() does). In host code signal_fetch reads the signal (GPU memory) with a small copy after the world stream's
//   earlier work, and signal_wait_until copies it again until the comparison holds (symm/wait.hpp says how),
//   checking that the other PEs are alive as on the host backend.
// - signal_wait_until_for (both): the same wait with a deadline, returning a wait_result (symm/wait_status.hpp)
//   instead of trapping (device) or throwing errc::peer_failed (host).
#pragma once

#include <symm/atomic.hpp>
#include <symm/detail/backend/nvshmem/device_rma.hpp>
#include <symm/detail/wait_duration.hpp>
#include <symm/future.hpp>
#include <symm/pe_span.hpp>
#include <symm/remote.hpp>
#include <symm/rma.hpp>
#include <symm/symmetric.hpp>
#include <symm/wait.hpp>
#include <symm/wait_status.hpp>

#include <cuda/atomic>
#include <cuda/std/span>

#if SYMM_CUDA_BACKEND()
#  include <symm/detail/backend/cuda/host_atomics_wait.hpp>
#  include <symm/detail/backend/cuda/stream_write.hpp>
#endif

#include <cstdint>
#include <ranges>
#include <type_traits>
#include <vector>

SYMM_BEGIN_NAMESPACE

//! How put_signal updates the signal: store the value, or add it (atomically, so several PEs can count into one).
enum class signal_op { set, add };

//! One signal: a 64-bit word at the same offset on every PE. The trivially copyable view kernels take, made from a
//! symm::signal or an element of a symm::signal_array; valid while that object lives.
class signal_ref {
public:
  using value_type = std::uint64_t;
  signal_ref() = default;
  SYMM_HOST_DEVICE explicit signal_ref(const array_ref<std::uint64_t>& word) noexcept : word_(word) {}

  //! This PE's signal word, to write or read it in place (NVSHMEM's `*psync = 1`): device code, and host code on the
  //! host backend. Device memory on the cuda and nvshmem backends, where host code writes it with
  //! `symm::remote(sig.word(), my_pe)[0].store(v)` and reads it with signal_fetch. A plain access: when a peer may
  //! update the word at the same time, use signal_fetch / signal_wait_until and that pe_ref's atomics instead.
  [[nodiscard]] SYMM_HOST_DEVICE std::uint64_t& local() const noexcept { return word_.local()[0]; }
  //! The address of local().
  [[nodiscard]] SYMM_HOST_DEVICE std::uint64_t* local_address() const noexcept { return word_.local().data(); }
  //! The signal as a one-element symmetric array: `symm::remote(sig.word(), pe)[0]` is PE pe's word as a pe_ref.
  [[nodiscard]] SYMM_HOST_DEVICE const array_ref<std::uint64_t>& word() const noexcept { return word_; }
  [[nodiscard]] SYMM_HOST_DEVICE int my_pe() const noexcept { return word_.my_pe(); }
  [[nodiscard]] SYMM_HOST_DEVICE detail::world_interface* world() const noexcept { return word_.world(); }

private:
  array_ref<std::uint64_t> word_;
};

static_assert(std::is_trivially_copyable_v<signal_ref>, "signal_ref travels to kernels by value");

//! PE pe()'s copy of a signal: `symm::remote(sig, pe)`, what put_signal updates. Trivially copyable.
class pe_signal {
public:
  SYMM_HOST_DEVICE pe_signal(std::uint64_t* address, int pe, detail::world_interface* world) noexcept
      : address_(address), pe_(pe), world_(world) {}
  [[nodiscard]] SYMM_HOST_DEVICE int pe() const noexcept { return pe_; }
  //! The word's address in this PE's mapping of PE pe()'s heap.
  [[nodiscard]] SYMM_HOST_DEVICE std::uint64_t* address() const noexcept { return address_; }
  [[nodiscard]] SYMM_HOST_DEVICE detail::world_interface* world() const noexcept { return world_; }

private:
  std::uint64_t* address_;
  int pe_;
  detail::world_interface* world_;
};

static_assert(std::is_trivially_copyable_v<pe_signal>, "pe_signal travels to kernels by value");

//! The signals of a symm::signal_array, as kernels take them. Trivially copyable; valid while the array lives.
class signal_array_ref {
public:
  signal_array_ref() = default;
  SYMM_HOST_DEVICE explicit signal_array_ref(const array_ref<std::uint64_t>& words) noexcept : words_(words) {}
  [[nodiscard]] SYMM_HOST_DEVICE std::size_t size() const noexcept { return words_.size(); }
  //! Signal i (not bounds-checked in device code).
  [[nodiscard]] SYMM_HOST_DEVICE signal_ref operator[](std::size_t i) const {
    NV_IF_TARGET(NV_IS_HOST, (check_index(i);))
    return signal_ref(words_.subarray(i, 1));
  }
  //! This PE's signal words, e.g. for wait_until_any over them, or to write one in place as signal_ref::local().
  [[nodiscard]] SYMM_HOST_DEVICE cuda::std::span<std::uint64_t> local() const noexcept { return words_.local(); }

private:
  void check_index(std::size_t i) const {
    if (i >= words_.size()) {
      SYMM_THROW(errc::invalid_argument, "signal_array[{}]: index out of range for {} signals", i, words_.size());
    }
  }
  array_ref<std::uint64_t> words_;
};

static_assert(std::is_trivially_copyable_v<signal_array_ref>, "signal_array_ref travels to kernels by value");

//! `count` signals, symmetric: collective construction and destruction like symm::array, and every signal starts at 0
//! on every PE (construction ends with a barrier, so no PE signals before every PE has zeroed its copy).
class signal_array {
public:
  template <detail::count_integer Count>
  signal_array(const world& w, Count count) : words_(w, count) {
    std::vector<std::uint64_t> zeros(words_.size(), 0); // words_ checked the count
    auto* state = detail::state_of(words_.ref().world());
    state->copy(words_.local().data(), zeros.data(), words_.size_bytes());
    state->wait_for_all(state->world_group(), "symm::signal_array construction"); // after the agreed allocation
  }
  // Move-only: kernels take symm::signal_array_ref; pass the signal_array (it converts) or ref().
  signal_array(const signal_array&, detail::kernels_and_copies_take_the_view<signal_array_ref> = {}) = delete;
  signal_array& operator=(const signal_array&) = delete;
  signal_array(signal_array&&) = default;
  signal_array& operator=(signal_array&&) = default;
  [[nodiscard]] std::size_t size() const noexcept { return words_.size(); }
  [[nodiscard]] signal_ref operator[](std::size_t i) const { return ref()[i]; }
  [[nodiscard]] signal_array_ref ref() const { return signal_array_ref(words_.ref()); }
  operator signal_array_ref() const { return ref(); }
  //! This PE's signal words (device memory on the CUDA backend).
  [[nodiscard]] cuda::std::span<std::uint64_t> local() const { return words_.local(); }
  void reset() { words_.reset(); }

private:
  array<std::uint64_t> words_;
};

//! One symmetric signal, 0 on every PE after construction (collective, like symm::scalar). `remote(sig, pe)` is PE
//! pe's copy, for put_signal; kernels take it as a signal_ref (an implicit conversion).
//! \code
//!   symm::signal ready(world);
//!   kernel<<<1, 256, 0, stream>>>(buf, ready);   // __global__ void kernel(symm::array_ref<float>, symm::signal_ref)
//! \endcode
class signal {
public:
  explicit signal(const world& w) : words_(w, 1) {}
  // Move-only: kernels take symm::signal_ref; pass the signal (it converts) or ref().
  signal(const signal&, detail::kernels_and_copies_take_the_view<signal_ref> = {}) = delete;
  signal& operator=(const signal&) = delete;
  signal(signal&&) = default;
  signal& operator=(signal&&) = default;
  [[nodiscard]] signal_ref ref() const { return words_[0]; }
  operator signal_ref() const { return ref(); }
  //! This PE's signal word, as signal_ref::local() (device memory on the cuda and nvshmem backends).
  [[nodiscard]] std::uint64_t& local() const { return ref().local(); }
  void reset() { words_.reset(); }

private:
  signal_array words_;
};

template <>
inline constexpr bool enable_symmetric_object<signal> = true;
template <>
inline constexpr bool enable_symmetric_object<signal_ref> = true;
template <>
inline constexpr bool enable_symmetric_object<signal_array> = true;
template <>
inline constexpr bool enable_symmetric_object<signal_array_ref> = true;

//! PE `pe`'s copy of a signal, for put_signal. Throws errc::invalid_pe (host) / traps (device) for a bad PE.
template <detail::count_integer PE>
[[nodiscard]] SYMM_HOST_DEVICE pe_signal remote(const signal_ref& sig, PE pe) {
  pe_ref<std::uint64_t> word = remote(sig.word(), pe)[0];
  return pe_signal(word.address(), word.pe(), word.world());
}
template <detail::count_integer PE>
[[nodiscard]] pe_signal remote(const signal& sig, PE pe) {
  return remote(sig.ref(), pe);
}

//! A signal update without data (NVSHMEM's nvshmemx_signal_op, OpenSHMEM's shmem_signal_set / shmem_signal_add): `op`
//! with `value` on PE sig.pe()'s signal, atomically at system scope, with release order: a PE that sees the update
//! (signal_wait_until, signal_fetch) sees what the calling thread wrote before it, its completed puts among them
//! (quiet() completes the non-blocking ones first). Several PEs may add into one signal. Host code: complete on return,
//! on every backend (the CUDA backend: a stream write for set, a one-thread kernel for add, as pe_ref's atomics).
//! Device code: the calling thread alone, like a pe_ref atomic.
//! \code
//!   symm::remote(flags, right)[i] = 1;                                          // a p, then
//!   symm::signal_update(symm::remote(ready, right), 1, symm::signal_op::add);   // the signal that says so
//! \endcode
SYMM_HOST_DEVICE inline void signal_update(const pe_signal& sig, std::uint64_t value, signal_op op) {
  const pe_ref<std::uint64_t> word(sig.address(), sig.pe(), sig.world());
  if (op == signal_op::set) word.store(value, cuda::memory_order_release);
  else word.add(value, cuda::memory_order_release);
}

namespace detail {

//! The signal update of put_signal: release order, so the data written before it is visible to whoever sees it.
SYMM_HOST_DEVICE SYMM_FORCEINLINE void update_signal(std::uint64_t* word, std::uint64_t value, signal_op op) {
  NV_IF_TARGET(NV_IS_DEVICE, (if (is_rma_address(word)) {
                 rma_signal(word, value, op == signal_op::add);
                 return;
               }))
  if (op == signal_op::set) system_atomic(word).store(value, cuda::memory_order_release);
  else system_atomic(word).fetch_add(value, cuda::memory_order_release);
}

inline void check_signal_pe(int data_pe, int signal_pe, const char* what) {
  if (data_pe != signal_pe) {
    SYMM_THROW(errc::invalid_argument,
               "{}: the data goes to PE {} but the signal is on PE {}; both must name the same "
               "PE",
               what, data_pe, signal_pe);
  }
}

#if SYMM_CUDA_BACKEND()
//! The stream-ordered put_signal: copy, then the signal store (set only).
inline void put_signal_on(cudaStream_t stream, void* dst, const void* src, std::size_t bytes, const pe_signal& sig,
                          std::uint64_t value, signal_op op, const char* what) {
#  if SYMM_NVSHMEM_BACKEND()
  if (is_rma_address(sig.address())) { // a peer reached through NVSHMEM RMA: its put-with-signal does set and add
    state_of(sig.world())
        ->cuda()
        ->nvshmem()
        ->put_on(stream, dst, src, bytes, sig.address(), value,
                 op == signal_op::add ? NVSHMEM_SIGNAL_ADD : NVSHMEM_SIGNAL_SET);
    return;
  }
#  endif
  if (op != signal_op::set) {
    SYMM_THROW(errc::unsupported,
               "PE {}: {} with signal_op::add from host code on the cuda backend: a stream can "
               "store a value but not add one atomically; use signal_op::set, or put_signal from device code",
               sig.world()->my_pe(), what);
  }
  if (bytes != 0) SYMM_TRY_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream));
  stream_write_u64(stream, sig.address(), value);
}
#endif

} // namespace detail

//! Put with signal: copies `source` into PE dst.pe()'s elements, then updates that PE's signal `sig` (`op` with
//! `value`); a PE that sees the update sees the data. Host code; complete (data and signal) on return.
//! Throws errc::invalid_argument when dst and sig name different PEs, errc::extent_mismatch when the sizes differ,
//! errc::unsupported for signal_op::add on the cuda backend.
//! \code
//!   symm::put_signal(symm::remote(buf, right), mine, symm::remote(ready, right), 1, symm::signal_op::add);
//! \endcode
template <class T, std::size_t E, class Range>
  requires contiguous_range_of<Range, T>
void put_signal(const pe_span<T, E>& dst, Range&& source, const pe_signal& sig, std::uint64_t value, signal_op op) {
  static_assert(!std::is_const_v<T>, "symm::put_signal: cannot put into a pe_span<const T>: the remote data is const");
  static_assert(!detail::extents_conflict<E, detail::static_extent_v<Range>>,
                "symm::put_signal between static extents "
                "that differ");
  detail::check_signal_pe(dst.pe(), sig.pe(), "symm::put_signal");
  detail::check_same_extent(dst.size(), std::ranges::size(source), dst.pe(), "put_signal", E,
                            detail::static_extent_v<Range>);
  detail::world_state* world = detail::state_of(dst.world());
#if SYMM_CUDA_BACKEND()
  if (heap_on_gpu(world->kind())) {
    cudaStream_t stream = world->cuda()->stream();
    detail::put_signal_on(stream, dst.address(), std::ranges::data(source), dst.size_bytes(), sig, value, op,
                          "symm::put_signal");
    SYMM_TRY_CUDA(cudaStreamSynchronize(stream));
    return;
  }
#endif
  if (dst.size_bytes() != 0) world->copy(dst.address(), std::ranges::data(source), dst.size_bytes());
  detail::update_signal(sig.address(), value, op);
}

//! Non-blocking put with signal: like put_signal, but may return before the transfer is done; the future's wait() or
//! quiet() completes it, and `source` must stay unchanged until then. The host backend does it all before returning
//! (the future is empty); the cuda backend orders it on the world's stream.
template <class T, std::size_t E, class Range>
  requires contiguous_range_of<Range, T>
[[nodiscard]] future<>
put_signal_nbi(const pe_span<T, E>& dst, Range&& source, const pe_signal& sig, std::uint64_t value, signal_op op) {
  static_assert(!std::is_const_v<T>, "symm::put_signal_nbi: cannot put into a pe_span<const T>: the remote data is "
                                     "const");
  static_assert(!detail::extents_conflict<E, detail::static_extent_v<Range>>,
                "symm::put_signal_nbi between static "
                "extents that differ");
  detail::check_signal_pe(dst.pe(), sig.pe(), "symm::put_signal_nbi");
  detail::check_same_extent(dst.size(), std::ranges::size(source), dst.pe(), "put_signal_nbi", E,
                            detail::static_extent_v<Range>);
  detail::world_state* world = detail::state_of(dst.world());
#if SYMM_CUDA_BACKEND()
  if (heap_on_gpu(world->kind())) {
    cudaStream_t stream = world->cuda()->stream();
    detail::put_signal_on(stream, dst.address(), std::ranges::data(source), dst.size_bytes(), sig, value, op,
                          "symm::put_signal_nbi");
    return future<>(world->cuda()->own_stream_operation("symm::put_signal_nbi"));
  }
#endif
  if (dst.size_bytes() != 0) world->copy(dst.address(), std::ranges::data(source), dst.size_bytes());
  detail::update_signal(sig.address(), value, op);
  return future<>();
}

//! Waits until this PE's signal satisfies `signal <c> value`; returns the value seen. Acquire order: the data of the
//! put_signal that made it true is visible after. Host: throws errc::peer_failed when another PE dies meanwhile; on the
//! cuda backend it copies the signal with back-off until the comparison holds (microseconds per wait: tight loops
//! belong in a kernel). Device: traps after SYMM_DEVICE_WAIT_TIMEOUT_NS, or, printing "PE n failed", within
//! milliseconds of this PE's host side finding that PE n failed (the world's failure word).
SYMM_HOST_DEVICE inline std::uint64_t signal_wait_until(const signal_ref& sig, cmp c, std::uint64_t value) {
  std::uint64_t* word = sig.local_address();
  NV_IF_TARGET(
      NV_IS_DEVICE, ({
        std::uint64_t seen = 0;
        detail::device_wait_until(
            [&] { return compare(seen = detail::system_atomic(word).load(cuda::memory_order_acquire), c, value); },
            "symm::signal_wait_until", sig.my_pe(), -1, detail::heap_base_of(word, sig.word().offset()));
        return seen;
      }),
      ({
        detail::require_host_atomics(sig.world(), sig.my_pe(), "symm::signal_wait_until");
        return detail::host_wait_until(
            *detail::state_of(sig.world()), sig.my_pe(), word, c, value, "symm::signal_wait_until");
      }))
}

//! signal_wait_until with a deadline: waits until this PE's signal satisfies `signal <c> value` or `timeout` (any
//! std::chrono or cuda::std::chrono duration) has passed; returns how it ended and the value seen last, as
//! wait_until_for (symm/wait.hpp) does: ok (acquire order: the data of the put_signal that made it true is visible),
//! timed_out (after at least `timeout`), or, in host code, peer_failed when the liveness check finds that some other
//! PE of the world failed (any PE, not only the signal's writer). Device code sees that too, within milliseconds of
//! this PE's host side finding it (the world's failure word; cuda and nvshmem backends, unless SYMM_FAILURE_POLL_MS=0).
//! \code
//!   if (auto r = symm::signal_wait_until_for(ready, symm::cmp::ge, round, cuda::std::chrono::milliseconds(20));
//!       !r.ok()) return; // in a kernel: leave cleanly, the host reports
//! \endcode
template <detail::wait_duration Duration>
[[nodiscard]] SYMM_HOST_DEVICE wait_result<std::uint64_t>
signal_wait_until_for(const signal_ref& sig, cmp c, std::uint64_t value, const Duration& timeout) {
  std::uint64_t* word = sig.local_address();
  const std::uint64_t ns = detail::timeout_ns(timeout);
  NV_IF_TARGET(
      NV_IS_DEVICE, ({
        std::uint64_t seen = 0;
        const wait_status status = detail::device_wait_until_for(
            [&] { return compare(seen = detail::system_atomic(word).load(cuda::memory_order_acquire), c, value); }, ns,
            detail::heap_base_of(word, sig.word().offset()));
        return wait_result<std::uint64_t>{status, seen};
      }),
      ({
        detail::require_host_atomics(sig.world(), sig.my_pe(), "symm::signal_wait_until_for");
        return detail::host_wait_until_for(
            *detail::state_of(sig.world()), sig.my_pe(), word, c, value, ns, "symm::signal_wait_until_for");
      }))
}

//! This PE's signal value now (an acquire load). Host code on the cuda backend: a copy of the word after the world
//! stream's earlier work.
[[nodiscard]] SYMM_HOST_DEVICE inline std::uint64_t signal_fetch(const signal_ref& sig) {
  NV_IF_TARGET(NV_IS_HOST, ({
                 detail::require_host_atomics(sig.world(), sig.my_pe(), "symm::signal_fetch");
                 return detail::host_acquire_load(*detail::state_of(sig.world()), sig.local_address());
               }),
               (return detail::system_atomic(sig.local_address()).load(cuda::memory_order_acquire);))
}

SYMM_END_NAMESPACE

// ---------------------------------------------------------------------------------------------------------------------
// Device code: group-scoped put with signal. Every thread of `group` calls it with the same arguments.
#if SYMM_CUDA_COMPILATION()
#  include <symm/detail/device_copy.hpp>
#  include <symm/group.hpp>

SYMM_BEGIN_NAMESPACE

namespace detail {
template <class Group, class T, std::size_t E, class U, std::size_t E2>
SYMM_DEVICE SYMM_FORCEINLINE void
device_put_signal(const Group& group, const pe_span<T, E>& dst, cuda::std::span<U, E2> source, const pe_signal& sig,
                  std::uint64_t value, signal_op op) {
  static_assert(!std::is_const_v<T>, "symm::put_signal: cannot put into a pe_span<const T>: the remote data is const");
  static_assert(!detail::extents_conflict<E, E2>, "symm::put_signal between static extents that differ");
  static_assert(syncs_after_bulk<Group>,
                "symm::put_signal: the signal must follow every thread's part of the copy, "
                "which needs the group to synchronise; a grid group can only do that under "
                "a cooperative launch, so use a block, a warp tile or symm::this_thread()");
  if constexpr (SYMM_CHECK_LEVEL(1)) {
    if (dst.pe() != sig.pe()) __trap(); // data and signal must go to the same PE
  }
  if (is_rma_address(dst.address())) {
    rma_put_signal(group, dst.address(), source.data(),
                   dst.size_bytes() < source.size_bytes() ? dst.size_bytes() : source.size_bytes(), sig.address(),
                   value, op == signal_op::add);
    return;
  }
  group_copy(group, dst.address(), dst.size_bytes(), source.data(), source.size_bytes());
  // Every thread's stores are issued; after the group barrier, one thread's system-scope release update is cumulative
  // over them (they happen before it through the barrier) and publishes them with the signal. No separate fence: a
  // sequentially consistent one would cost a second system-wide memory barrier per put_signal.
  sync_group(group);
  if (group.thread_rank() == 0) update_signal(sig.address(), value, op);
}
} // namespace detail

//! Put with signal from device code: `group` copies `source` into PE dst.pe()'s elements, then one of its threads
//! updates PE sig.pe()'s signal with release order at system scope: whoever sees the update sees the data. On return
//! `source` may be reused. Block, warp tile or symm::this_thread() (not a grid group).
//! \code
//!   symm::put_signal(cooperative_groups::this_thread_block(), symm::remote(buf, right), out,
//!                    symm::remote(ready, right), round, symm::signal_op::set);
//! \endcode
template <cooperating_group Group, class T, std::size_t E, class U, std::size_t E2>
requires detail::same_element<U, T> SYMM_DEVICE void
put_signal(const Group& group, const pe_span<T, E>& dst, cuda::std::span<U, E2> source, const pe_signal& sig,
           std::uint64_t value, signal_op op) {
  detail::with_group_syncs(group, [&](const auto& g) { detail::device_put_signal(g, dst, source, sig, value, op); });
}

//! Non-blocking put with signal from device code: the same transfer; the returned device_future's wait() (or quiet())
//! completes it from this group's side. The signal still follows the data.
template <cooperating_group Group, class T, std::size_t E, class U, std::size_t E2>
  requires detail::same_element<U, T>
[[nodiscard]] SYMM_DEVICE device_future<detail::copying_group_t<Group>>
put_signal_nbi(const Group& group, const pe_span<T, E>& dst, cuda::std::span<U, E2> source, const pe_signal& sig,
               std::uint64_t value, signal_op op) {
  detail::with_group_syncs(group, [&](const auto& g) { detail::device_put_signal(g, dst, source, sig, value, op); });
  return device_future<detail::copying_group_t<Group>>(detail::copying_group(group));
}

SYMM_END_NAMESPACE
#endif

// ---------------------------------------------------------------------------------------------------------------------
// Host code on the CUDA backend: put with signal ordered on a stream.
#if SYMM_CUDA_BACKEND()
SYMM_BEGIN_NAMESPACE

//! Put with signal ordered on `stream`: after the stream's earlier work, copies `source` (device or host memory) into
//! PE dst.pe()'s elements, then stores `value` into its signal (cuStreamWriteValue64, preceded by a system-wide
//! fence); the future completes when both are done. signal_op::set only (errc::unsupported for add: use device code).
template <class T, std::size_t E, class Range>
  requires contiguous_range_of<Range, T> future<>
  put_signal(cudaStream_t stream, const pe_span<T, E>& dst, Range&& source, const pe_signal& sig, std::uint64_t value,
             signal_op op) {
    static_assert(!std::is_const_v<T>, "symm::put_signal: cannot put into a pe_span<const T>: the remote data is "
                                       "const");
    static_assert(!detail::extents_conflict<E, detail::static_extent_v<Range>>,
                  "symm::put_signal between static "
                  "extents that differ");
    detail::require_cuda_backend(dst.world(), "symm::put_signal(stream, ...)");
    detail::check_signal_pe(dst.pe(), sig.pe(), "symm::put_signal(stream, ...)");
    detail::check_same_extent(dst.size(), std::ranges::size(source), dst.pe(), "put_signal(stream, ...)", E,
                              detail::static_extent_v<Range>);
    detail::put_signal_on(stream, dst.address(), std::ranges::data(source), dst.size_bytes(), sig, value, op,
                          "symm::put_signal(stream, ...)");
    return future<>(detail::stream_operation(stream, "symm::put_signal(stream, ...)", dst.world()->my_pe()));
  }

SYMM_END_NAMESPACE
#endif
