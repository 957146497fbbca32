// symm/wait.hpp: point-to-point synchronisation — wait until a word of this PE's symmetric memory, which other PEs
// write, satisfies a comparison (OpenSHMEM's wait_until / test and their _all, _any, _some forms), in host and device
// code.
//
//   symm::scalar<int> flag(world);                              // another PE: symm::remote(flag, pe).store(1)
//   symm::wait_until(flag, symm::cmp::eq, 1);                   // host code; in a kernel: wait_until(flag_ref, ...)
//   std::size_t i = symm::wait_until_any(flags.local(), symm::cmp::ne, 0);
//
// Words: integers of 4 or 8 bytes (symm::atomic_integer). Every read is an atomic load at system scope with acquire
// order, so what the writer wrote before its satisfying write (with release order, or by put_signal) is visible after
// the wait returns.
//
// Host code: spins briefly, then sleeps on a futex for 4-byte words (woken by symm's atomics, p's and signals on the
// word; a write symm does not see is noticed within a few milliseconds), or yields for 8-byte words. Every few
// milliseconds it checks that the other PEs are alive: when one has died or failed, the wait throws errc::peer_failed
// naming it, instead of hanging. On the CUDA backend the heap is GPU memory, which a CPU thread cannot load: host code
// reads such words (the heap, or other device memory) with small copies after the world stream's earlier work, and
// waits by copying them again with back-off (no kernel: nothing waits for a free SM); the same liveness checks apply
// (detail/backend/cuda/host_atomics_wait.hpp). That costs microseconds per read or wait: a tight loop belongs in a
// kernel. Host memory (e.g. pinned memory a kernel writes) is read directly. A host wait needs a live symm::world on
// the calling thread (for the liveness checks). Device code: spins; after SYMM_DEVICE_WAIT_TIMEOUT_NS (20 s) it prints
// what it waited for and traps (a probable deadlock), so a kernel never hangs the GPU silently. The forms on a
// scalar_ref also watch the world's failure word (detail/device_wait.hpp; cuda and nvshmem backends): within
// milliseconds of this PE's host side finding that another PE failed, they print "PE n failed" and trap. The forms on
// a plain word or span have no way to their world: they see a dead writer only at the timeout.
//
// Bounded form: wait_until_for(word, cmp, value, timeout) polls the same way but returns a wait_result
// (symm/wait_status.hpp) instead: ok and the value, timed_out after the deadline (instead of the trap), or peer_failed
// (host code: instead of the error; device code: on a scalar_ref, instead of the trap), so that a kernel or a host
// loop can leave cleanly when a peer stalls or dies.
//
// Status arrays (the _all/_any/_some forms): an optional span of int, as long as the words; a word whose status is
// not 0 is left out. Return conventions follow OpenSHMEM 1.5:
// - wait_until_all: returns when every included word satisfies the comparison (checked one after the other);
// - wait_until_any: returns the index of one included word that satisfies it, or symm::no_index when every word is
//   left out (or there are none);
// - wait_until_some: waits until at least one included word satisfies it, writes the indices of all included words
//   that do into `indices` (which must hold as many entries as there are words) and returns their count; 0 when every
//   word is left out;
// - test / test_all / test_any / test_some: the same checks once, without waiting (false, no_index or 0 when not).
// Each has a _vector form (wait_until_all_vector, ..., test_some_vector) that compares word i with values[i], a span of
// one value per word, instead of every word with one value.
#pragma once

#include <symm/atomic.hpp>
#include <symm/detail/backend/cuda/host_atomics_wait.hpp>
#include <symm/detail/device_check.hpp>
#include <symm/detail/device_wait.hpp>
#include <symm/detail/host_wait.hpp>
#include <symm/detail/wait_duration.hpp>
#include <symm/symmetric.hpp>
#include <symm/wait_status.hpp>

#include <cuda/std/span>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

SYMM_BEGIN_NAMESPACE

//! The comparisons of wait_until and test: `word <cmp> value`.
enum class cmp { eq, ne, gt, ge, lt, le };

//! What wait_until_any and test_any return when no word is included (OpenSHMEM's SIZE_MAX).
inline constexpr std::size_t no_index = static_cast<std::size_t>(-1);

//! `a <c> b`.
template <class T>
[[nodiscard]] SYMM_HOST_DEVICE constexpr bool compare(const T& a, cmp c, const T& b) noexcept {
  switch (c) {
    case cmp::eq: return a == b;
    case cmp::ne: return a != b;
    case cmp::gt: return a > b;
    case cmp::ge: return a >= b;
    case cmp::lt: return a < b;
    case cmp::le: return a <= b;
  }
  return false;
}

namespace detail {

template <class T>
SYMM_HOST_DEVICE constexpr void require_wait_word() {
  static_assert(atomic_integer<T>,
                "symm::wait_until / test: the word must be an integer of 4 or 8 bytes (int, "
                "unsigned, long, unsigned long, long long, unsigned long long, e.g. std::int32_t "
                "or std::uint64_t); other types cannot be read atomically everywhere");
}

template <class T>
[[nodiscard]] SYMM_HOST_DEVICE SYMM_FORCEINLINE std::remove_cv_t<T> acquire_load(T* word) {
  return system_atomic(word).load(cuda::memory_order_acquire);
}

SYMM_HOST_DEVICE SYMM_FORCEINLINE bool included(cuda::std::span<const int> status, std::size_t i) {
  return status.empty() || status[i] == 0;
}

//! The host world a wait uses for its liveness checks (and, on the CUDA backend, for its copies).
inline const world_state& host_wait_world(const char* what) {
  return require_current_world(what);
}
//! The same for a wait on a symmetric object: its own world, which must still be live.
inline const world_state& host_wait_world(const world_interface* world, const char* what) {
  const world_state& state = *state_of(world);
  state.require_alive(what);
  return state;
}

//! Host code: waits until `*word <c> value` and returns the value seen. `owner`: the PE whose heap holds the word (-1
//! outside the heaps). GPU memory goes through the CUDA backend's waits, host memory through host_wait.
template <class T>
std::remove_cv_t<T>
host_wait_until(const world_state& world, int owner, T* word, cmp c, std::remove_cv_t<T> value, const char* what) {
  auto holds = [&](std::remove_cv_t<T> v) { return compare(v, c, value); };
#if SYMM_CUDA_BACKEND()
  if (in_gpu_memory(world, word)) return gpu_wait(world, word, holds, what);
#endif
  return host_wait(world, owner, word, holds, what);
}

//! Host code: host_wait_until for at most `timeout_ns`; a failed peer ends it with peer_failed instead of the error.
//! The value is the one seen last (value-initialized when the wait failed before its first read).
template <class T>
wait_result<std::remove_cv_t<T>>
host_wait_until_for(const world_state& world, int owner, T* word, cmp c, std::remove_cv_t<T> value,
                    std::uint64_t timeout_ns, const char* what) {
  std::remove_cv_t<T> last{};
  auto holds = [&](std::remove_cv_t<T> v) {
    last = v;
    return compare(v, c, value);
  };
  const auto deadline = host_deadline(timeout_ns);
  try {
#if SYMM_CUDA_BACKEND()
    if (in_gpu_memory(world, word)) return gpu_wait_until_deadline(world, word, holds, what, deadline);
#endif
    return host_wait_until_deadline(world, owner, word, holds, what, deadline);
  } catch (const error& e) {
    if (e.code() != errc::peer_failed) throw;
    return {wait_status::peer_failed, last};
  }
}

//! Host code: the word now, with acquire order (a copy for GPU memory).
template <class T>
std::remove_cv_t<T> host_acquire_load(const world_state& world, T* word) {
#if SYMM_CUDA_BACKEND()
  if (in_gpu_memory(world, word)) return read_gpu_word(world, word);
#endif
  (void) world;
  return acquire_load(word);
}

//! Host code: `check(snapshot)` on the words as they are now: the words themselves in host memory, a copy of them in
//! GPU memory.
template <class T, std::size_t E, class Check>
auto host_check_words(const world_state& world, cuda::std::span<T, E> words, Check&& check) {
#if SYMM_CUDA_BACKEND()
  if (!words.empty() && in_gpu_memory(world, words.data())) {
    std::vector<std::remove_cv_t<T>> snapshot(words.size());
    read_gpu_words(world, words.data(), words.size(), snapshot.data());
    return check(cuda::std::span<const std::remove_cv_t<T>>(snapshot.data(), snapshot.size()));
  }
#endif
  (void) world;
  return check(words);
}

//! Host code: waits until `done(snapshot)` holds for the words (the _any and _some forms), polling.
template <class T, std::size_t E, class Done>
void host_poll_words(const world_state& world, cuda::std::span<T, E> words, Done&& done, const char* what) {
#if SYMM_CUDA_BACKEND()
  if (!words.empty() && in_gpu_memory(world, words.data())) {
    gpu_poll(world, words.data(), words.size(), done, what);
    return;
  }
#endif
  host_poll(
      world, [&] { return done(words); }, what);
}

inline void check_status_size(std::size_t words, std::size_t status, const char* what) {
  if (status != 0 && status != words) {
    SYMM_THROW(errc::extent_mismatch,
               "{}: the status span has {} entries but there are {} words; pass one entry per "
               "word (0 = included), or none",
               what, status, words);
  }
}

//! Whether a span form compares every word with one value (false) or each word with its own (the _vector forms).
template <class Values>
inline constexpr bool one_value_per_word = false;
template <class V>
inline constexpr bool one_value_per_word<cuda::std::span<const V>> = true;

//! The value word `i` is compared with.
template <class Values>
[[nodiscard]] SYMM_HOST_DEVICE SYMM_FORCEINLINE decltype(auto) value_at(const Values& values, std::size_t i) {
  if constexpr (one_value_per_word<Values>) return values[i];
  else {
    (void) i;
    return values;
  }
}

//! Checks every included word once; writes the indices that satisfy into `indices` (when not empty), returns the
//! count, or the first index (First) / no_index. `values`: one value, or one per word (value_at).
template <bool First, class T, std::size_t E, class Values>
SYMM_HOST_DEVICE std::size_t scan(cuda::std::span<T, E> words, cuda::std::span<std::size_t> indices, cmp c,
                                  const Values& values, cuda::std::span<const int> status) {
  std::size_t count = 0;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (!included(status, i) || !compare(acquire_load(&words[i]), c, value_at(values, i))) continue;
    if constexpr (First) return i;
    if (!indices.empty()) indices[count] = i;
    ++count;
  }
  if constexpr (First) return no_index;
  else return count;
}

template <class T, std::size_t E>
SYMM_HOST_DEVICE bool any_included(cuda::std::span<T, E> words, cuda::std::span<const int> status) {
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (included(status, i)) return true;
  }
  return false;
}

#if SYMM_CUDA_COMPILATION()
//! Device code: waits until `word <c> value` and returns the value seen; traps after SYMM_DEVICE_WAIT_TIMEOUT_NS, or
//! (with `heap...`, this PE's heap base) as soon as its world's failure word names a failed PE. Without a heap it
//! prints why it trapped; with one it writes the trap record (device_wait_until's two forms).
template <class T, class... Heap>
SYMM_DEVICE SYMM_FORCEINLINE std::remove_cv_t<T>
device_wait_word(T& word, cmp c, std::remove_cv_t<T> value, const char* what, int me, Heap... heap) {
  std::remove_cv_t<T> seen{};
  device_wait_until([&] { return compare(seen = acquire_load(&word), c, value); }, what, me, -1, heap...);
  return seen;
}

//! Device code: device_wait_word for at most `timeout_ns`, returning how it ended instead of trapping.
template <class T>
SYMM_DEVICE SYMM_FORCEINLINE wait_result<std::remove_cv_t<T>>
device_wait_word_for(T& word, cmp c, std::remove_cv_t<T> value, std::uint64_t timeout_ns, const std::byte* heap) {
  std::remove_cv_t<T> seen{};
  const wait_status status =
      device_wait_until_for([&] { return compare(seen = acquire_load(&word), c, value); }, timeout_ns, heap);
  return wait_result<std::remove_cv_t<T>>{status, seen};
}
#endif

} // namespace detail

//! Waits until `word <c> value` holds for `word`, a 4- or 8-byte integer of this PE's symmetric memory (or host memory
//! other threads write), and returns the value that satisfied it. Acquire order. Host: throws errc::peer_failed when
//! another PE dies meanwhile, errc::not_initialized without a world; GPU memory (the CUDA backend's heap) is waited on
//! with copies (see the header comment). Device: traps after SYMM_DEVICE_WAIT_TIMEOUT_NS.
//! \code  symm::wait_until(flags.local()[3], symm::cmp::ge, round);  \endcode
template <class T>
  requires(!std::is_pointer_v<T> && !symmetric_object<T>)
SYMM_HOST_DEVICE std::remove_cv_t<T> wait_until(T& word, cmp c, std::type_identity_t<std::remove_cv_t<T>> value) {
  detail::require_wait_word<T>();
  NV_IF_TARGET(
      NV_IS_DEVICE, (return detail::device_wait_word(word, c, value, "symm::wait_until", -1);), ({
        const auto& world = detail::host_wait_world("symm::wait_until");
        return detail::host_wait_until(world, detail::heap_owner(world, &word), &word, c, value, "symm::wait_until");
      }))
}

//! wait_until on the word at `word`.
template <class T>
SYMM_HOST_DEVICE std::remove_cv_t<T> wait_until(T* word, cmp c, std::type_identity_t<std::remove_cv_t<T>> value) {
  return wait_until(*word, c, value);
}

//! wait_until on this PE's value of a symmetric scalar (host: a symm::scalar; device: its scalar_ref). In device code
//! this form, unlike the one on a plain word, also ends when this PE's host side finds a peer failed: it traps within
//! milliseconds of that, and this PE's host prints "PE n failed" (the scalar_ref leads the wait to its world's failure
//! word and trap record).
template <class T>
SYMM_HOST_DEVICE std::remove_cv_t<T>
wait_until(const scalar_ref<T>& word, cmp c, std::type_identity_t<std::remove_cv_t<T>> value) {
  NV_IF_TARGET(NV_IS_DEVICE, ({
                 detail::require_wait_word<T>();
                 return detail::device_wait_word(word.local(), c, value, "symm::wait_until", word.element().my_pe(),
                                                 detail::heap_base_of(&word.local(), word.element().offset()));
               }),
               ({
                 detail::require_wait_word<T>();
                 return detail::host_wait_until(detail::host_wait_world(word.element().world(), "symm::wait_until"),
                                                word.element().my_pe(), &word.local(), c, value, "symm::wait_until");
               }))
}
template <class T>
std::remove_cv_t<T> wait_until(const scalar<T>& word, cmp c, std::type_identity_t<T> value) {
  return wait_until(word.ref(), c, value);
}

//! wait_until with a deadline: waits until `word <c> value` holds or `timeout` (any std::chrono or cuda::std::chrono
//! duration) has passed, and returns how it ended with the value seen last (wait_result: `auto [status, seen] = ...`).
//! ok: the comparison held, `value` is what satisfied it (acquire order, as wait_until). timed_out: the deadline
//! passed first; the wait lasted at least `timeout` (device code may add up to 2048 polls, host code a few
//! milliseconds). peer_failed: the liveness check found that some other PE of the world failed, exited or finalized,
//! whichever PE that is (not only the word's writer), where wait_until would throw errc::peer_failed. In device code
//! only the forms on a scalar_ref see that (within milliseconds, through the world's failure word): this form, on a
//! plain word, has no way to its world, so a dead writer ends it in timed_out. Other host errors (no world:
//! errc::not_initialized) still throw.
//! \code
//!   auto [status, seen] = symm::wait_until_for(flag, symm::cmp::ge, round, std::chrono::milliseconds(50));
//!   if (status != symm::wait_status::ok) return; // a stalled or failed peer: leave the loop cleanly
//! \endcode
template <class T, detail::wait_duration Duration>
  requires(!std::is_pointer_v<T> && !symmetric_object<T>)
[[nodiscard]] SYMM_HOST_DEVICE wait_result<std::remove_cv_t<T>>
wait_until_for(T& word, cmp c, std::type_identity_t<std::remove_cv_t<T>> value, const Duration& timeout) {
  detail::require_wait_word<T>();
  const std::uint64_t ns = detail::timeout_ns(timeout);
  NV_IF_TARGET(NV_IS_DEVICE, (return detail::device_wait_word_for(word, c, value, ns, nullptr);), ({
                 const auto& world = detail::host_wait_world("symm::wait_until_for");
                 return detail::host_wait_until_for(
                     world, detail::heap_owner(world, &word), &word, c, value, ns, "symm::wait_until_for");
               }))
}

//! wait_until_for on the word at `word`.
template <class T, detail::wait_duration Duration>
[[nodiscard]] SYMM_HOST_DEVICE wait_result<std::remove_cv_t<T>>
wait_until_for(T* word, cmp c, std::type_identity_t<std::remove_cv_t<T>> value, const Duration& timeout) {
  return wait_until_for(*word, c, value, timeout);
}

//! wait_until_for on this PE's value of a symmetric scalar (host: a symm::scalar; device: its scalar_ref). In device
//! code this form also returns peer_failed: within milliseconds of this PE's host side finding that some other PE of
//! the world failed, exited or finalized (on the cuda and nvshmem backends, unless SYMM_FAILURE_POLL_MS=0).
template <class T, detail::wait_duration Duration>
[[nodiscard]] SYMM_HOST_DEVICE wait_result<std::remove_cv_t<T>> wait_until_for(
    const scalar_ref<T>& word, cmp c, std::type_identity_t<std::remove_cv_t<T>> value, const Duration& timeout) {
  NV_IF_TARGET(NV_IS_DEVICE, ({
                 detail::require_wait_word<T>();
                 return detail::device_wait_word_for(word.local(), c, value, detail::timeout_ns(timeout),
                                                     detail::heap_base_of(&word.local(), word.element().offset()));
               }),
               ({
                 detail::require_wait_word<T>();
                 return detail::host_wait_until_for(
                     detail::host_wait_world(word.element().world(), "symm::wait_until_for"), word.element().my_pe(),
                     &word.local(), c, value, detail::timeout_ns(timeout), "symm::wait_until_for");
               }))
}
template <class T, detail::wait_duration Duration>
[[nodiscard]] wait_result<std::remove_cv_t<T>>
wait_until_for(const scalar<T>& word, cmp c, std::type_identity_t<T> value, const Duration& timeout) {
  return wait_until_for(word.ref(), c, value, timeout);
}

//! Whether `word <c> value` holds now (one acquire load; no waiting).
template <class T>
  requires(!std::is_pointer_v<T> && !symmetric_object<T>)
[[nodiscard]] SYMM_HOST_DEVICE bool test(T& word, cmp c, std::type_identity_t<std::remove_cv_t<T>> value) {
  detail::require_wait_word<T>();
  NV_IF_TARGET(NV_IS_HOST,
               (return compare(detail::host_acquire_load(detail::host_wait_world("symm::test"), &word), c, value);),
               (return compare(detail::acquire_load(&word), c, value);))
}
template <class T>
[[nodiscard]] SYMM_HOST_DEVICE bool test(T* word, cmp c, std::type_identity_t<std::remove_cv_t<T>> value) {
  return test(*word, c, value);
}
template <class T>
[[nodiscard]] SYMM_HOST_DEVICE bool
test(const scalar_ref<T>& word, cmp c, std::type_identity_t<std::remove_cv_t<T>> value) {
  detail::require_wait_word<T>();
  NV_IF_TARGET(NV_IS_HOST,
               (return compare(detail::host_acquire_load(detail::host_wait_world(word.element().world(), "symm::test"),
                                                         &word.local()),
                               c, value);),
               (return compare(detail::acquire_load(&word.local()), c, value);))
}
template <class T>
[[nodiscard]] bool test(const scalar<T>& word, cmp c, std::type_identity_t<T> value) {
  return test(word.ref(), c, value);
}

namespace detail {
//! The span forms' arguments: status (when given) and, for the _vector forms, values hold one entry per word; some
//! forms' indices can hold every index. Host code throws naming the sizes; device code traps (SYMM_CHECK >= 1; with
//! 2 it prints the sizes first) when the values do not match, since reading past them is reading another object.
template <class Values>
SYMM_HOST_DEVICE SYMM_FORCEINLINE void check_span_sizes(
    std::size_t words, const Values& values, std::size_t status, const std::size_t* indices, const char* what) {
  NV_IF_TARGET(NV_IS_HOST, ({
                 check_status_size(words, status, what);
                 if constexpr (one_value_per_word<Values>) {
                   if (values.size() != words) {
                     SYMM_THROW(errc::extent_mismatch,
                                "{}: the values span has {} entries but there are {} words; pass one value per word",
                                what, values.size(), words);
                   }
                 }
                 if (indices != nullptr && *indices < words) {
                   SYMM_THROW(errc::invalid_argument,
                              "{}: indices has {} entries but there are {} words; it must be able to hold every index",
                              what, *indices, words);
                 }
               }),
               ({
                 (void) status;
                 (void) indices;
                 if constexpr (one_value_per_word<Values>) {
                   SYMM_DEVICE_ASSERT_EXTENT(values.size(), words, what);
                 } else {
                   (void) values;
                   (void) words;
                   (void) what;
                 }
               }))
}

//! The span forms, written once for one value (Values = the word's type) and for one value per word (Values =
//! cuda::std::span<const word type>): the public functions below name them.
template <class T, std::size_t E, class Values>
SYMM_HOST_DEVICE void wait_all_words(cuda::std::span<T, E> words, cmp c, const Values& values,
                                     cuda::std::span<const int> status, const char* what) {
  require_wait_word<T>();
  check_span_sizes(words.size(), values, status.size(), nullptr, what);
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (included(status, i)) (void) wait_until(words[i], c, value_at(values, i));
  }
}

template <class T, std::size_t E, class Values>
SYMM_HOST_DEVICE std::size_t wait_any_word(cuda::std::span<T, E> words, cmp c, const Values& values,
                                           cuda::std::span<const int> status, const char* what) {
  require_wait_word<T>();
  check_span_sizes(words.size(), values, status.size(), nullptr, what);
  if (!any_included(words, status)) return no_index;
  std::size_t found = no_index;
  NV_IF_TARGET(
      NV_IS_DEVICE,
      (device_wait_until([&] { return (found = scan<true>(words, {}, c, values, status)) != no_index; }, what, -1, -1);),
      (host_poll_words(
           host_wait_world(what), words,
           [&](auto snapshot) { return (found = scan<true>(snapshot, {}, c, values, status)) != no_index; }, what);))
  return found;
}

template <class T, std::size_t E, class Values>
SYMM_HOST_DEVICE std::size_t
wait_some_words(cuda::std::span<T, E> words, cuda::std::span<std::size_t> indices, cmp c, const Values& values,
                cuda::std::span<const int> status, const char* what) {
  require_wait_word<T>();
  const std::size_t capacity = indices.size();
  check_span_sizes(words.size(), values, status.size(), &capacity, what);
  if (!any_included(words, status)) return 0;
  std::size_t count = 0;
  NV_IF_TARGET(
      NV_IS_DEVICE,
      (device_wait_until([&] { return (count = scan<false>(words, indices, c, values, status)) != 0; }, what, -1, -1);),
      (host_poll_words(
           host_wait_world(what), words,
           [&](auto snapshot) { return (count = scan<false>(snapshot, indices, c, values, status)) != 0; }, what);))
  return count;
}

//! The test forms: `check` on the words as they are now (a copy of them in GPU memory, from host code).
template <class T, std::size_t E, class Values, class Check>
SYMM_HOST_DEVICE auto test_words(cuda::std::span<T, E> words, const Values& values, cuda::std::span<const int> status,
                                 const std::size_t* indices, const char* what, Check&& check) {
  require_wait_word<T>();
  check_span_sizes(words.size(), values, status.size(), indices, what);
  NV_IF_TARGET(NV_IS_HOST, ({
                 if (words.empty()) return check(words);
                 return host_check_words(host_wait_world(what), words, check);
               }),
               (return check(words);))
}

template <class T, std::size_t E, class Values>
SYMM_HOST_DEVICE bool test_all_words(cuda::std::span<T, E> words, cmp c, const Values& values,
                                     cuda::std::span<const int> status, const char* what) {
  return test_words(words, values, status, nullptr, what, [&](auto snapshot) {
    for (std::size_t i = 0; i < snapshot.size(); ++i) {
      if (included(status, i) && !compare(acquire_load(&snapshot[i]), c, value_at(values, i))) return false;
    }
    return true;
  });
}

template <class T, std::size_t E, class Values>
SYMM_HOST_DEVICE std::size_t test_any_word(cuda::std::span<T, E> words, cmp c, const Values& values,
                                           cuda::std::span<const int> status, const char* what) {
  return test_words(words, values, status, nullptr, what, [&](auto snapshot) {
    return scan<true>(snapshot, {}, c, values, status);
  });
}

template <class T, std::size_t E, class Values>
SYMM_HOST_DEVICE std::size_t
test_some_words(cuda::std::span<T, E> words, cuda::std::span<std::size_t> indices, cmp c, const Values& values,
                cuda::std::span<const int> status, const char* what) {
  const std::size_t capacity = indices.size();
  return test_words(words, values, status, &capacity, what, [&](auto snapshot) {
    return scan<false>(snapshot, indices, c, values, status);
  });
}

//! The values of a _vector form: one per word, of the words' type.
template <class T>
using word_values = cuda::std::span<const std::remove_cv_t<T>>;
} // namespace detail

//! Waits until every included word satisfies `word <c> value` (see the header comment for status).
template <class T, std::size_t E>
SYMM_HOST_DEVICE void
wait_until_all(cuda::std::span<T, E> words, cmp c, std::type_identity_t<std::remove_cv_t<T>> value,
               cuda::std::span<const int> status = {}) {
  detail::wait_all_words(words, c, value, status, "symm::wait_until_all");
}

//! Waits until some included word satisfies `word <c> value`; returns its index, or no_index when none is included.
template <class T, std::size_t E>
[[nodiscard]] SYMM_HOST_DEVICE std::size_t
wait_until_any(cuda::std::span<T, E> words, cmp c, std::type_identity_t<std::remove_cv_t<T>> value,
               cuda::std::span<const int> status = {}) {
  return detail::wait_any_word(words, c, value, status, "symm::wait_until_any");
}

//! Waits until at least one included word satisfies `word <c> value`; stores the indices of those that do into
//! `indices` (at least words.size() entries) and returns how many; 0 when none is included.
template <class T, std::size_t E>
SYMM_HOST_DEVICE std::size_t
wait_until_some(cuda::std::span<T, E> words, cuda::std::span<std::size_t> indices, cmp c,
                std::type_identity_t<std::remove_cv_t<T>> value, cuda::std::span<const int> status = {}) {
  return detail::wait_some_words(words, indices, c, value, status, "symm::wait_until_some");
}

//! Whether every included word satisfies `word <c> value` now.
template <class T, std::size_t E>
[[nodiscard]] SYMM_HOST_DEVICE bool
test_all(cuda::std::span<T, E> words, cmp c, std::type_identity_t<std::remove_cv_t<T>> value,
         cuda::std::span<const int> status = {}) {
  return detail::test_all_words(words, c, value, status, "symm::test_all");
}

//! The index of an included word that satisfies `word <c> value` now, or no_index.
template <class T, std::size_t E>
[[nodiscard]] SYMM_HOST_DEVICE std::size_t
test_any(cuda::std::span<T, E> words, cmp c, std::type_identity_t<std::remove_cv_t<T>> value,
         cuda::std::span<const int> status = {}) {
  return detail::test_any_word(words, c, value, status, "symm::test_any");
}

//! Stores the indices of the included words that satisfy `word <c> value` now into `indices`; returns their count.
template <class T, std::size_t E>
[[nodiscard]] SYMM_HOST_DEVICE std::size_t
test_some(cuda::std::span<T, E> words, cuda::std::span<std::size_t> indices, cmp c,
          std::type_identity_t<std::remove_cv_t<T>> value, cuda::std::span<const int> status = {}) {
  return detail::test_some_words(words, indices, c, value, status, "symm::test_some");
}

// The _vector forms (OpenSHMEM's wait_until_all_vector, ...): word i is compared with values[i], its own value, which
// `values` (as many entries as words, of their type) holds; otherwise as the forms above.

//! Waits until every included word satisfies `words[i] <c> values[i]`.
//! \code  symm::wait_until_all_vector(arrivals.local(), symm::cmp::ge, expected);  // expected: a span of the counts
//! \endcode
template <class T, std::size_t E>
SYMM_HOST_DEVICE void
wait_until_all_vector(cuda::std::span<T, E> words, cmp c, std::type_identity_t<detail::word_values<T>> values,
                      cuda::std::span<const int> status = {}) {
  detail::wait_all_words(words, c, values, status, "symm::wait_until_all_vector");
}

//! Waits until some included word satisfies `words[i] <c> values[i]`; returns its index, or no_index when none is
//! included.
template <class T, std::size_t E>
[[nodiscard]] SYMM_HOST_DEVICE std::size_t
wait_until_any_vector(cuda::std::span<T, E> words, cmp c, std::type_identity_t<detail::word_values<T>> values,
                      cuda::std::span<const int> status = {}) {
  return detail::wait_any_word(words, c, values, status, "symm::wait_until_any_vector");
}

//! Waits until at least one included word satisfies `words[i] <c> values[i]`; stores the indices of those that do
//! into `indices` (at least words.size() entries) and returns how many; 0 when none is included.
template <class T, std::size_t E>
SYMM_HOST_DEVICE std::size_t
wait_until_some_vector(cuda::std::span<T, E> words, cuda::std::span<std::size_t> indices, cmp c,
                       std::type_identity_t<detail::word_values<T>> values, cuda::std::span<const int> status = {}) {
  return detail::wait_some_words(words, indices, c, values, status, "symm::wait_until_some_vector");
}

//! Whether every included word satisfies `words[i] <c> values[i]` now.
template <class T, std::size_t E>
[[nodiscard]] SYMM_HOST_DEVICE bool
test_all_vector(cuda::std::span<T, E> words, cmp c, std::type_identity_t<detail::word_values<T>> values,
                cuda::std::span<const int> status = {}) {
  return detail::test_all_words(words, c, values, status, "symm::test_all_vector");
}

//! The index of an included word that satisfies `words[i] <c> values[i]` now, or no_index.
template <class T, std::size_t E>
[[nodiscard]] SYMM_HOST_DEVICE std::size_t
test_any_vector(cuda::std::span<T, E> words, cmp c, std::type_identity_t<detail::word_values<T>> values,
                cuda::std::span<const int> status = {}) {
  return detail::test_any_word(words, c, values, status, "symm::test_any_vector");
}

//! Stores the indices of the included words that satisfy `words[i] <c> values[i]` now into `indices`; returns their
//! count.
template <class T, std::size_t E>
[[nodiscard]] SYMM_HOST_DEVICE std::size_t
test_some_vector(cuda::std::span<T, E> words, cuda::std::span<std::size_t> indices, cmp c,
                 std::type_identity_t<detail::word_values<T>> values, cuda::std::span<const int> status = {}) {
  return detail::test_some_words(words, indices, c, values, status, "symm::test_some_vector");
}

SYMM_END_NAMESPACE
