// expect-compile: ok
// Every documented member of the views (docs/api.md) compiles, on const and non-const elements alike: array_ref<T> and
// array_ref<const T> of dynamic and static extent (subarray, array_cast, the conversions), scalar_ref, pe_span and
// pe_ref of T and of const T, signal_ref, signal_array_ref, pe_signal, world_ref and team_ref. g++ compiles this file
// as host code; views_ok.cu includes it, so nvcc compiles the same calls as host code, and the members marked "both"
// (the *_both templates below) and the device-only ones inside kernels too. Issue 41: array_ref<const T>::subarray and
// array_cast from an array_ref<const T> did not compile (a reinterpret_cast that dropped const).
#include <symm/format.hpp>
#include <symm/remote.hpp>
#include <symm/rma.hpp>
#include <symm/signal.hpp>
#include <symm/symmetric.hpp>
#include <symm/team.hpp>
#include <symm/wait.hpp>
#include <symm/world_ref.hpp>

#include <cuda/std/span>

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace views_ok {

template <class... Values>
SYMM_HOST_DEVICE constexpr void use(const Values&...) noexcept {}

constexpr auto order = cuda::memory_order_relaxed;

// ---- members callable from host and device code ("both") -------------------------------------------------------

template <class T, std::size_t E>
SYMM_HOST_DEVICE void array_ref_both(const symm::array_ref<T, E>& a, int pe) {
  static_assert(std::is_trivially_copyable_v<symm::array_ref<T, E>>);
  using value = std::remove_cv_t<T>;
  cuda::std::span<T, E> local = a.local();
  const std::size_t sizes = a.size() + a.size_bytes() + a.offset() + symm::array_ref<T, E>::extent;
  const int pes = a.my_pe() + a.n_pes();
  T* there = a.address_on(pe);
  use(local, sizes, pes, there, a.world(), a.host_peers(), a.device_peers());

  symm::array_ref<T> part = a.subarray(1, 2);
  symm::array_ref<T> part_of_part = part.subarray(0, 1);
  symm::array_ref<const value, E> view = a; // from T a conversion, from const T a copy
  symm::array_ref<const value> const_part = view.subarray(1, 2);
  symm::device_array<T, E> alias = a;
  use(part, part_of_part, const_part, alias);

  // array_cast keeps constness, adds it, and never removes it.
  symm::array_ref<const std::byte> bytes = symm::array_cast<const std::byte>(a);
  symm::array_ref<const value> back = symm::array_cast<const value>(bytes).subarray(0, 1);
  symm::array_ref<T> same = symm::array_cast<T>(a);
  symm::array_ref<const char> chars = symm::array_cast<const char>(view.subarray(0, 1));
  use(bytes, back, same, chars);
  if constexpr (!std::is_const_v<T>) {
    symm::array_ref<std::byte> raw = symm::array_cast<std::byte>(a);
    symm::array_ref<T> floats = symm::array_cast<T>(raw).subarray(0, 1); // docs/api.md's example
    symm::array_ref<const value> readable = symm::array_cast<const value>(raw);
    use(floats, readable);
  }

  symm::pe_span<T, E> remote = symm::remote(a, pe);
  symm::pe_span<const value, E> remote_view = symm::remote(view, pe);
  symm::pe_span<const value> remote_part = symm::remote(const_part, pe);
  use(remote, remote_view, remote_part);
}

template <class T>
SYMM_HOST_DEVICE void scalar_ref_both(const symm::scalar_ref<T>& s, int pe) {
  static_assert(std::is_trivially_copyable_v<symm::scalar_ref<T>>);
  T& local = s.local();
  const symm::array_ref<T, 1>& element = s.element();
  symm::pe_ref<T> remote = symm::remote(s, pe);
  const std::remove_cv_t<T> seen = symm::wait_until(s, symm::cmp::ge, 1);
  const bool now = symm::test(s, symm::cmp::eq, 1);
  use(local, element, remote, seen, now);
}

template <class T, std::size_t E>
SYMM_HOST_DEVICE void pe_span_both(const symm::pe_span<T, E>& r, cuda::std::span<const std::remove_cv_t<T>, E> source) {
  static_assert(std::is_trivially_copyable_v<symm::pe_span<T, E>>);
  const std::size_t sizes = r.size() + r.size_bytes() + symm::pe_span<T, E>::extent;
  const bool empty = r.empty();
  const int pe = r.pe();
  T* address = r.address();
  symm::pe_ref<T> element = r[0];
  symm::pe_span<T> sub = r.subspan(1, 2);
  symm::pe_span<T> tail = r.subspan(1);
  symm::pe_span<T> first = r.first(1);
  symm::pe_span<T> last = r.last(1);
  symm::pe_span<T, 1> first_static = r.template first<1>();
  symm::pe_span<T, 1> last_static = r.template last<1>();
  symm::pe_span<const std::remove_cv_t<T>, E> view = r;
  use(sizes, empty, pe, address, element, sub, tail, first, last, first_static, last_static, view, source);
  if constexpr (!std::is_const_v<T>) r = source; // a put
}

template <class T>
SYMM_HOST_DEVICE void pe_ref_both(const symm::pe_ref<T>& r) {
  static_assert(std::is_trivially_copyable_v<symm::pe_ref<T>>);
  using value = std::remove_cv_t<T>;
  const value got = r.get();
  const value converted = r;
  const value loaded = r.load() + r.load(order);
  use(got, converted, loaded, r.pe(), r.address(), r.world());
  if constexpr (!std::is_const_v<T>) {
    r = value{1};
    r.store(2);
    r.store(2, order);
    value expected{};
    const bool swapped = r.compare_exchange(expected, 3) || r.compare_exchange(expected, 3, order);
    const value old = r.exchange(4, order) + r.fetch_add(1, order) + r.fetch_sub(1, order) + r.fetch_and(1, order) +
                      r.fetch_or(1, order) + r.fetch_xor(1, order) + r.fetch_min(1, order) + r.fetch_max(1, order);
    r.add(1, order);
    r.sub(1, order);
    r.bit_and(1, order);
    r.bit_or(1, order);
    r.bit_xor(1, order);
    use(swapped, old);
  }
}

SYMM_HOST_DEVICE inline void signals_both(const symm::signal_ref& sig, const symm::signal_array_ref& sigs, int pe) {
  static_assert(std::is_trivially_copyable_v<symm::signal_ref> && std::is_trivially_copyable_v<symm::signal_array_ref>);
  std::uint64_t* word = sig.local_address();
  const symm::array_ref<std::uint64_t>& words = sig.word();
  use(word, words, sig.my_pe(), sig.world());
  const symm::pe_signal remote = symm::remote(sig, pe);
  use(remote.pe(), remote.address(), remote.world());
  const symm::signal_ref one = sigs[1];
  const cuda::std::span<std::uint64_t> local = sigs.local();
  use(sigs.size(), one, local);
  const std::uint64_t seen = symm::signal_wait_until(sig, symm::cmp::ge, 1) + symm::signal_fetch(one);
  use(seen);
}

SYMM_HOST_DEVICE inline void world_team_both(const symm::world_ref& w, const symm::team_ref& t) {
  static_assert(std::is_trivially_copyable_v<symm::world_ref> && std::is_trivially_copyable_v<symm::team_ref>);
  use(w.my_pe(), w.n_pes());
  use(t.my_pe(), t.n_pes(), t.world_pe(0), t.team_pe(0), t.world_my_pe(), t.world_n_pes(), t.start(), t.stride());
}

//! Every "both" member above, on const and non-const elements, dynamic and static extents.
SYMM_HOST_DEVICE inline void views_both(
    const symm::array_ref<int>& a, const symm::array_ref<const int>& c, const symm::array_ref<int, 4>& fixed,
    const symm::array_ref<const int, 4>& fixed_c, const symm::scalar_ref<int>& s, const symm::scalar_ref<const int>& cs,
    const symm::signal_ref& sig, const symm::signal_array_ref& sigs, const symm::world_ref& w, const symm::team_ref& t,
    int pe) {
  array_ref_both(a, pe);
  array_ref_both(c, pe);
  array_ref_both(fixed, pe);
  array_ref_both(fixed_c, pe);
  scalar_ref_both(s, pe);
  scalar_ref_both(cs, pe);
  const cuda::std::span<const int> source = c.local();
  const cuda::std::span<const int, 4> fixed_source = fixed_c.local();
  pe_span_both(symm::remote(a, pe), source);
  pe_span_both(symm::remote(c, pe), source);
  pe_span_both(symm::remote(fixed, pe), fixed_source);
  pe_span_both(symm::remote(fixed_c, pe), fixed_source);
  pe_ref_both(symm::remote(a, pe)[0]);
  pe_ref_both(symm::remote(c, pe)[0]);
  pe_ref_both(symm::remote(s, pe));
  pe_ref_both(symm::remote(cs, pe));
  signals_both(sig, sigs, pe);
  world_team_both(w, t);
}

// ---- host code: the owning objects' conversions to views, host-only members, host RMA on const views ----------

template <class T, std::size_t E>
void pe_span_host(const symm::pe_span<T, E>& r) {
  using value = std::remove_cv_t<T>;
  std::vector<value> out(r.size());
  r.get(out);
  std::vector<value> got = r.get();
  std::vector<value> converted = r;
  symm::get(out, r);
  symm::future<> f = symm::get_nbi(out, r);
  f.wait();
  use(got, converted, f.ready(), f.valid());
  if constexpr (!std::is_const_v<T>) {
    const std::vector<value> in(r.size());
    symm::put(r, in);
    symm::future<> g = symm::put_nbi(r, in);
    g.wait();
  }
}

inline void views_host(symm::world& world, const symm::team& team) {
  // Issue 41's reproducer: a const view, cut.
  symm::array<int> a(world, 8);
  symm::array_ref<const int> r = a;
  auto s = r.subarray(0, 4);
  static_assert(std::is_same_v<decltype(s), symm::array_ref<const int>>);

  const symm::array<int>& read_only = a;
  symm::array<int, 4> fixed(world);
  symm::array_ref<int> mutable_view = a;
  symm::array_ref<int> from_ref = a.ref();
  symm::array_ref<const int, 4> fixed_view = fixed;
  symm::pe_span<const int> remote_read_only = symm::remote(read_only, 0);
  symm::pe_span<int, 4> remote_fixed = symm::remote(fixed, 0);
  use(s, mutable_view, from_ref, remote_read_only, remote_fixed);
  // symm/format.hpp: every view kind, const elements and static extents included.
  use(fmt::format("{} {} {} {} {} {} {}", a, fixed, r, fixed_view, remote_read_only, remote_fixed, s));

  symm::scalar<int> counter(world);
  const symm::scalar<int>& read_only_counter = counter;
  symm::scalar_ref<int> counter_view = counter;
  symm::scalar_ref<const int> counter_const_view(symm::array_ref<const int, 1>(counter.ref().element()));
  symm::pe_ref<int> remote_counter = symm::remote(counter, 0);
  symm::pe_ref<const int> remote_read_only_counter = symm::remote(read_only_counter, 0);
  use(counter.ref(), remote_counter, remote_read_only_counter);

  symm::signal ready(world);
  symm::signal_array flags(world, 4);
  symm::signal_ref ready_view = ready;
  symm::signal_array_ref flags_view = flags;
  use(ready.ref(), flags.ref(), flags[0], flags.size(), flags.local());

  symm::world_ref world_view = world;
  symm::team_ref team_view = team;
  use(team.ref());

  views_both(a, r, fixed, fixed_view, counter_view, counter_const_view, ready_view, flags_view, world_view, team_view,
             0);
  pe_span_host(symm::remote(mutable_view, 0));
  pe_span_host(symm::remote(r, 0));
  pe_span_host(symm::remote(fixed, 0));
  pe_span_host(symm::remote(fixed_view, 0));
  pe_span_host(remote_read_only.subspan(1, 2));

  const std::vector<int> data(8);
  symm::put_signal(symm::remote(a, 1), data, symm::remote(ready, 1), 1, symm::signal_op::set);
  symm::future<> sent =
      symm::put_signal_nbi(symm::remote(a, 1), data, symm::remote(ready_view, 1), 1, symm::signal_op::add);
  sent.wait();
}

} // namespace views_ok
