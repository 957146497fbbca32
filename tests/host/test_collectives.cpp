// Collectives on the host backend: broadcast, fcollect, alltoall, reduce, allreduce and reduce_scatter with every
// operation and several element types, on the world team and on sub-teams (split_strided, split_2d), 1 to 8 PEs as
// processes and as threads, 1 element to 64 MiB, one-shot and two-shot, in place; each result is checked against a
// sequential reference computed from every PE's fresh random input. Then the argument checks and their messages.
#include <symm/collectives.hpp>
#include <symm/detail/device_choice.hpp>
#include <symm/symm.hpp>

#include <cuda/functional>
#include <cuda/std/functional>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <tuple>
#include <type_traits>

#include "../pe_check.hpp"
#include "catch.hpp"
#include "fake_topology.hpp"

using symm_test::on_pes;

namespace {

//! A user type with a user operation: affine maps x -> a x + b (mod 2^64) under composition, which is associative
//! but not commutative, so a result in any order but team order is caught.
struct affine {
  std::uint64_t a, b;
  bool operator==(const affine&) const = default;
};
struct compose {
  constexpr affine operator()(const affine& f, const affine& g) const { return {f.a * g.a, f.a * g.b + f.b}; }
};

std::string show(const affine& f) {
  return fmt::format("({}, {})", f.a, f.b);
}
template <class T>
std::string show(const T& v) {
  if constexpr (sizeof(T) == 1 && std::is_integral_v<T>) return fmt::format("{}", static_cast<int>(v));
  else return fmt::format("{}", v);
}

//! Which values a case draws: small ones (sums that cannot overflow), factors (products that cannot), anything.
enum class values { small, factors, any };

std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

//! Element i of world PE pe's input in case `stream`: fresh every run (the seed), computable by any PE (the reference).
template <class T>
T input(std::uint64_t stream, int pe, std::size_t i, values v) {
  const std::uint64_t r = mix(symm_test::seed() ^ mix(stream ^ mix(static_cast<std::uint64_t>(pe) ^ mix(i))));
  if constexpr (std::is_same_v<T, affine>) {
    return affine{r | 1, mix(r)};
  } else if constexpr (std::is_same_v<T, bool>) {
    return (r & 1) != 0;
  } else if constexpr (std::is_floating_point_v<T>) {
    const double u = static_cast<double>(r >> 11) * 0x1.0p-53;
    switch (v) {
      case values::small: return static_cast<T>(u * 2000.0 - 1000.0);
      case values::factors: return static_cast<T>(0.5 + 1.5 * u);
      case values::any: return static_cast<T>(u * 2e6 - 1e6);
    }
    return T{};
  } else {
    switch (v) {
      case values::small: {
        const std::uint64_t span = sizeof(T) == 1 ? 10 : 1000;
        if constexpr (std::is_signed_v<T>)
          return static_cast<T>(static_cast<std::int64_t>(r % (2 * span + 1)) - static_cast<std::int64_t>(span));
        else return static_cast<T>(r % (span + 1));
      }
      case values::factors: return static_cast<T>(1 + r % 3);
      case values::any: return static_cast<T>(r);
    }
    return T{};
  }
}

template <class T>
void fill_input(const symm::array<T>& a, std::uint64_t stream, int pe, values v, std::size_t shift = 0) {
  auto local = a.local();
  for (std::size_t i = 0; i < local.size(); ++i)
    local[i] = input<T>(stream, pe, i + shift, v);
}

//! The reference: element i of the team's inputs folded in team order, and the scale of the rounding error a
//! floating-point result may carry.
template <class T, class Op>
std::pair<T, double> fold(const Op& op, const symm::team& t, std::uint64_t stream, std::size_t i, values v) {
  T acc = input<T>(stream, t.world_pe(0), i, v);
  double scale = 0;
  if constexpr (std::is_floating_point_v<T>) scale = std::abs(static_cast<double>(acc));
  for (int k = 1; k < t.n_pes(); ++k) {
    const T x = input<T>(stream, t.world_pe(k), i, v);
    acc = static_cast<T>(op(acc, x));
    if constexpr (std::is_floating_point_v<T>) scale += std::abs(static_cast<double>(x));
  }
  if constexpr (std::is_floating_point_v<T>) scale = std::max(scale, std::abs(static_cast<double>(acc)));
  return {acc, scale};
}

//! Exact for integers and user types; for floating point within the error of n roundings of the scale (summation
//! order may differ from the reference's in later algorithms).
template <class T>
bool close(const T& got, const T& want, double scale, int n) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::abs(static_cast<double>(got) - static_cast<double>(want)) <=
           4.0 * n * std::numeric_limits<T>::epsilon() * scale + std::numeric_limits<T>::min();
  } else {
    return got == want;
  }
}

[[noreturn]] void wrong(std::string_view what, const symm::world& w, const symm::team& t, std::size_t count,
                        std::size_t i, const std::string& got, const std::string& want) {
  throw std::runtime_error(fmt::format("{}: PE {} (team PE {} of {}), {} elements: element {} is {}, want {} (seed {})",
                                       what, w.my_pe(), t.my_pe(), t.n_pes(), count, i, got, want, symm_test::seed()));
}

//! allreduce (separate and in place), reduce to a root (separate and in place) and reduce_scatter of `count`
//! elements, on every PE of the world (allocation is collective over the world; only the team's PEs reduce).
template <class T, class Op>
void check_reductions(symm::world& w, const symm::team& t, std::size_t count, Op op, values v, std::uint64_t stream) {
  const int me = w.my_pe();
  const std::string name = fmt::format("{} bytes", sizeof(T));
  symm::array<T> src(w, count), dst(w, count), again(w, count);
  fill_input(src, stream, me, v);
  fill_input(again, stream, me, v);
  fill_input(dst, stream + 1, me, v); // what a reduce must leave alone off the root
  if (t.valid()) {
    const int n = t.n_pes();
    symm::allreduce(t, dst, src, op);
    symm::allreduce(t, again, again, op); // in place
    for (std::size_t i = 0; i < count; ++i) {
      const auto [want, scale] = fold<T>(op, t, stream, i, v);
      if (!close(dst.local()[i], want, scale, n))
        wrong("allreduce " + name, w, t, count, i, show(dst.local()[i]), show(want));
      if (!close(again.local()[i], want, scale, n))
        wrong("allreduce in place " + name, w, t, count, i, show(again.local()[i]), show(want));
      if (!(src.local()[i] == input<T>(stream, me, i, v)))
        wrong("allreduce's src " + name, w, t, count, i, show(src.local()[i]), "unchanged");
    }
    const int root = static_cast<int>(stream % static_cast<std::uint64_t>(n));
    fill_input(again, stream, me, v);
    symm::reduce(t, dst, src, op, (root + 1) % n);
    symm::reduce(t, again, again, op, root); // in place
    for (std::size_t i = 0; i < count; ++i) {
      const auto [want, scale] = fold<T>(op, t, stream, i, v);
      if (t.my_pe() == (root + 1) % n && !close(dst.local()[i], want, scale, n))
        wrong("reduce " + name, w, t, count, i, show(dst.local()[i]), show(want));
      if (t.my_pe() == root && !close(again.local()[i], want, scale, n))
        wrong("reduce in place " + name, w, t, count, i, show(again.local()[i]), show(want));
      if (t.my_pe() != root && !(again.local()[i] == input<T>(stream, me, i, v)))
        wrong("reduce off the root " + name, w, t, count, i, show(again.local()[i]), "unchanged");
    }
  }
  // reduce_scatter: block j of every PE's src, reduced, lands on team PE j.
  const std::size_t n_team = t.valid() ? static_cast<std::size_t>(t.n_pes()) : 1;
  symm::array<T> blocks(w, count * static_cast<std::size_t>(w.n_pes())), mine(w, count);
  if (t.valid()) {
    symm::array_ref<T> used(blocks.ref().world(), blocks.ref().host_peers(), blocks.ref().device_peers(),
                            blocks.offset(), count * n_team, me, w.n_pes());
    auto local = used.local();
    for (std::size_t i = 0; i < local.size(); ++i)
      local[i] = input<T>(stream + 2, me, i, v);
    symm::reduce_scatter(t, mine, used, op);
    const std::size_t shift = static_cast<std::size_t>(t.my_pe()) * count;
    for (std::size_t i = 0; i < count; ++i) {
      const auto [want, scale] = fold<T>(op, t, stream + 2, shift + i, v);
      if (!close(mine.local()[i], want, scale, t.n_pes()))
        wrong("reduce_scatter " + name, w, t, count, i, show(mine.local()[i]), show(want));
    }
  }
}

//! broadcast (from every root, and in place), fcollect and alltoall of `count` elements per PE (per block).
template <class T>
void check_movement(symm::world& w, const symm::team& t, std::size_t count, std::uint64_t stream) {
  const int me = w.my_pe();
  const std::size_t slots = static_cast<std::size_t>(w.n_pes());
  const std::string name = fmt::format("{} bytes", sizeof(T));
  symm::array<T> src(w, count), dst(w, count);
  symm::array<T> gathered(w, count * slots), blocks(w, count * slots), exchanged(w, count * slots);
  fill_input(src, stream, me, values::any);
  if (!t.valid()) return;
  const int n = t.n_pes();
  for (int root = 0; root<n; root += n> 3 ? 2 : 1) {
    symm::broadcast(t, dst, src, root);
    for (std::size_t i = 0; i < count; ++i) {
      const T want = input<T>(stream, t.world_pe(root), i, values::any);
      if (!(dst.local()[i] == want))
        wrong(fmt::format("broadcast from {} {}", root, name), w, t, count, i, show(dst.local()[i]), show(want));
    }
  }
  const int root = n - 1;
  symm::broadcast(t, src, src, root); // in place
  for (std::size_t i = 0; i < count; ++i) {
    const T want = input<T>(stream, t.world_pe(root), i, values::any);
    if (!(src.local()[i] == want))
      wrong("broadcast in place " + name, w, t, count, i, show(src.local()[i]), show(want));
  }
  t.sync(); // every PE has read the broadcast before src is written again
  fill_input(src, stream, me, values::any);

  // The team's part of the world-sized arrays, as array_refs of the team's size.
  const std::size_t total = count * static_cast<std::size_t>(n);
  auto part = [&](const symm::array<T>& a) { return a.ref().subarray(0, total); };
  symm::fcollect(t, part(gathered), src);
  for (std::size_t f = 0; f < total; ++f) {
    const T want = input<T>(stream, t.world_pe(static_cast<int>(f / count)), f % count, values::any);
    if (!(gathered.local()[f] == want))
      wrong("fcollect " + name, w, t, total, f, show(gathered.local()[f]), show(want));
  }
  auto out = part(blocks);
  for (std::size_t f = 0; f < total; ++f)
    out.local()[f] = input<T>(stream + 3, me, f, values::any);
  symm::alltoall(t, part(exchanged), out);
  for (std::size_t f = 0; f < total; ++f) {
    // Block k of mine came from team PE k: its block number t.my_pe().
    const std::size_t k = f / count, i = f % count;
    const T want = input<T>(stream + 3, t.world_pe(static_cast<int>(k)),
                            static_cast<std::size_t>(t.my_pe()) * count + i, values::any);
    if (!(exchanged.local()[f] == want))
      wrong("alltoall " + name, w, t, total, f, show(exchanged.local()[f]), show(want));
  }
}

//! Every collective with every operation on team `t`, at sizes on both sides of the one-shot threshold.
void check_everything(symm::world& w, const symm::team& t, std::uint64_t stream) {
  constexpr std::size_t two_shot_floats = symm::collective_one_shot_max_bytes / sizeof(float) + 1001;
  for (std::size_t count : {std::size_t{1}, std::size_t{7}, std::size_t{1000}, two_shot_floats}) {
    check_reductions<float>(w, t, count, symm::plus{}, values::small, stream += 10);
    check_reductions<std::int32_t>(w, t, count, symm::plus{}, values::small, stream += 10);
    check_movement<std::int32_t>(w, t, count, stream += 10);
  }
  for (std::size_t count : {std::size_t{1}, std::size_t{33}, std::size_t{5000}}) {
    check_reductions<double>(w, t, count, symm::multiplies{}, values::factors, stream += 10);
    check_reductions<std::uint32_t>(w, t, count, symm::multiplies{}, values::factors, stream += 10);
    check_reductions<std::int64_t>(w, t, count, symm::min{}, values::any, stream += 10);
    check_reductions<double>(w, t, count, symm::max{}, values::any, stream += 10);
    check_reductions<std::int8_t>(w, t, count, symm::plus{}, values::small, stream += 10);
    check_reductions<std::uint8_t>(w, t, count, symm::bit_and{}, values::any, stream += 10);
    check_reductions<std::uint16_t>(w, t, count, symm::bit_or{}, values::any, stream += 10);
    check_reductions<std::int64_t>(w, t, count, symm::bit_xor{}, values::any, stream += 10);
    check_movement<std::uint8_t>(w, t, count, stream += 10);
    check_movement<double>(w, t, count, stream += 10);
  }
}

} // namespace

TEST_CASE("every collective and operation on the world team of 1 to 8 PEs", "[collectives]") {
  for (int n = 1; n <= 8; ++n) {
    CAPTURE(n, symm_test::seed());
    REQUIRE_NOTHROW(on_pes(n, [](symm::world& world) { check_everything(world, world.team(), 100); }));
  }
}

TEST_CASE("collectives on sub-teams: strided, odd-sized, disjoint teams at once, rows and columns", "[collectives]") {
  for (int n : {3, 5, 8}) {
    CAPTURE(n, symm_test::seed());
    REQUIRE_NOTHROW(on_pes(n, [](symm::world& world) {
      const int n = world.n_pes();
      auto whole = world.team();
      {
        auto odd = whole.split_strided(1, 2, n / 2);
        check_everything(world, odd, 1000);
      }
      {
        auto tail = whole.split_strided(1, 3, (n - 2) / 3 + 1); // world PEs 1, 4, 7, ...
        check_reductions<float>(world, tail, 20000, symm::plus{}, values::small, 2000);
        check_movement<std::int16_t>(world, tail, 9, 2100);
      }
      // Even and odd PEs at once, each team on its own: the teams' barriers and agreement do not mix.
      auto even = whole.split_strided(0, 2, (n + 1) / 2);
      auto odd = whole.split_strided(1, 2, n / 2);
      const symm::team& mine = even.valid() ? even : odd;
      const symm::team& other = even.valid() ? odd : even;
      symm::array<std::int64_t> x(world, 100), y(world, 100);
      for (int round = 0; round < 30; ++round) {
        for (std::size_t i = 0; i < 100; ++i)
          x.local()[i] = world.my_pe() * 1000 + round + static_cast<int>(i);
        symm::allreduce(mine, y, x, symm::plus{});
        std::int64_t want = 0;
        for (int k = 0; k < mine.n_pes(); ++k)
          want += mine.world_pe(k) * 1000 + round + 7;
        PE_REQUIRE_EQ(y.local()[7], want);
      }
      (void) other;
      // The rows and columns of a 2-D split, one after the other (they share PEs).
      auto [row, column] = whole.split_2d(2);
      check_reductions<std::int32_t>(world, row, 300, symm::max{}, values::any, 3000);
      check_reductions<std::int32_t>(world, column, 300, symm::plus{}, values::small, 3100);
      check_movement<float>(world, column, 40000, 3200);
    }));
  }
}

TEST_CASE("reductions with the standard library's, CCCL's and a user's operations", "[collectives]") {
  CAPTURE(symm_test::seed());
  REQUIRE_NOTHROW(on_pes(4, [](symm::world& world) {
    auto t = world.team();
    for (std::size_t count : {std::size_t{1}, std::size_t{100}, std::size_t{40000}}) {
      check_reductions<float>(world, t, count, std::plus<>{}, values::small, 10 + count);
      check_reductions<std::int32_t>(world, t, count, cuda::std::plus<>{}, values::small, 20 + count);
      check_reductions<std::uint64_t>(world, t, count, cuda::std::bit_xor<>{}, values::any, 30 + count);
      check_reductions<std::int16_t>(world, t, count, cuda::maximum<>{}, values::any, 40 + count);
      check_reductions<double>(world, t, count, cuda::minimum<>{}, values::any, 50 + count);
      check_reductions<std::int64_t>(world, t, count, std::multiplies<std::int64_t>{}, values::factors, 60 + count);
      check_reductions<std::int32_t>(
          world, t, count, [](std::int32_t a, std::int32_t b) { return a > b ? a : b; }, values::any, 70 + count);
      check_reductions<affine>(world, t, count, compose{}, values::any, 80 + count); // order matters
      check_movement<affine>(world, t, count, 90 + count);
    }
  }));
}

TEST_CASE("static extents, and collectives many times in a row", "[collectives]") {
  REQUIRE_NOTHROW(on_pes(3, [](symm::world& world) {
    auto t = world.team();
    symm::array<int, 12> a(world), b(world);
    symm::array<int, 4> piece(world);
    for (int i = 0; i < 12; ++i)
      a.local()[static_cast<std::size_t>(i)] = world.my_pe() + i;
    symm::allreduce(t, b, a, symm::plus{});
    for (int i = 0; i < 12; ++i)
      PE_REQUIRE_EQ(b.local()[static_cast<std::size_t>(i)], 3 + 3 * i);
    for (int i = 0; i < 4; ++i)
      piece.local()[static_cast<std::size_t>(i)] = 10 * world.my_pe() + i;
    symm::fcollect(t, b, piece); // dynamic check: 12 == 3 * 4
    for (int i = 0; i < 12; ++i)
      PE_REQUIRE_EQ(b.local()[static_cast<std::size_t>(i)], 10 * (i / 4) + i % 4);
    symm::reduce_scatter(t, piece, a, symm::min{});
    for (int i = 0; i < 4; ++i)
      PE_REQUIRE_EQ(piece.local()[static_cast<std::size_t>(i)], 4 * world.my_pe() + i);
    symm::array_ref<const int, 12> view = a;
    symm::broadcast(t, b, view, 2);
    for (int i = 0; i < 12; ++i)
      PE_REQUIRE_EQ(b.local()[static_cast<std::size_t>(i)], 2 + i);

    symm::array<std::uint64_t> x(world, 1), sum(world, 1);
    for (std::uint64_t round = 0; round < 500; ++round) {
      x.local()[0] = round * 10 + static_cast<std::uint64_t>(world.my_pe());
      symm::allreduce(t, sum, x, symm::plus{});
      PE_REQUIRE_EQ(sum.local()[0], 3 * round * 10 + 3);
    }
  }));
}

TEST_CASE("collectives on symm::scalar and scalar_ref, as one-element arrays", "[collectives][scalar]") {
  for (int n : {2, 3, 4}) {
    REQUIRE_NOTHROW(on_pes(n, [n](symm::world& world) {
      auto t = world.team();
      const int me = world.my_pe();
      symm::scalar<long> x(world), sum(world);
      x.local() = me + 1;
      symm::allreduce(t, sum, x, symm::plus{});
      PE_REQUIRE_EQ(sum.local(), static_cast<long>(n * (n + 1) / 2));
      symm::allreduce(t, x, x, symm::max{}); // in place
      PE_REQUIRE_EQ(x.local(), static_cast<long>(n));
      x.local() = 100 + me;
      symm::broadcast(t, sum.ref(), x, n - 1); // scalar_ref dst
      PE_REQUIRE_EQ(sum.local(), static_cast<long>(100 + n - 1));
      x.local() = me;
      symm::reduce(t, sum, x.ref(), symm::plus{}, 0);
      if (me == 0) PE_REQUIRE_EQ(sum.local(), static_cast<long>(n * (n - 1) / 2));
      // With arrays: a scalar per PE gathered, and one element per PE scattered.
      symm::array<long> all(world, static_cast<std::size_t>(n));
      symm::fcollect(t, all, x);
      for (int i = 0; i < n; ++i)
        PE_REQUIRE_EQ(all.local()[static_cast<std::size_t>(i)], static_cast<long>(i));
      symm::reduce_scatter(t, sum, all, symm::plus{});
      PE_REQUIRE_EQ(sum.local(), static_cast<long>(n * me));
    }));
  }
}

TEST_CASE("collectives of 64 MiB", "[collectives][large]") {
  CAPTURE(symm_test::seed());
  const symm::world_options big{.backend = symm::backend::host, .heap_size = std::size_t{160} << 20};
  REQUIRE_NOTHROW(symm::launch(
      2,
      [](symm::world& world) {
        const std::size_t count = (std::size_t{64} << 20) / sizeof(float);
        auto t = world.team();
        symm::array<float> src(world, count), dst(world, count);
        fill_input(src, 7, world.my_pe(), values::small);
        symm::allreduce(t, dst, src, symm::plus{});
        symm::allreduce(t, src, src, symm::plus{}); // in place
        for (std::size_t i = 0; i < count; ++i) {
          const auto [want, scale] = fold<float>(symm::plus{}, t, 7, i, values::small);
          if (!close(dst.local()[i], want, scale, 2))
            wrong("allreduce of 64 MiB", world, t, count, i, show(dst.local()[i]), show(want));
          if (!close(src.local()[i], want, scale, 2))
            wrong("allreduce in place of 64 MiB", world, t, count, i, show(src.local()[i]), show(want));
        }
      },
      {.world = big}));
  REQUIRE_NOTHROW(symm::launch(
      4,
      [](symm::world& world) {
        const std::size_t count = (std::size_t{16} << 20) / sizeof(std::uint32_t); // 64 MiB gathered on each PE
        symm::array<std::uint32_t> src(world, count), dst(world, 4 * count);
        fill_input(src, 11, world.my_pe(), values::any);
        symm::fcollect(world.team(), dst, src);
        for (std::size_t f = 0; f < 4 * count; f += 4099) {
          PE_REQUIRE_EQ(dst.local()[f], input<std::uint32_t>(11, static_cast<int>(f / count), f % count, values::any));
        }
        symm::broadcast(world.team(), src, src, 3);
        for (std::size_t i = 0; i < count; i += 997)
          PE_REQUIRE_EQ(src.local()[i], input<std::uint32_t>(11, 3, i, values::any));
      },
      {.mode = symm::launch_mode::threads,
       .world = {.backend = symm::backend::host, .heap_size = std::size_t{96} << 20}}));
}

namespace {
//! Rows team PE `from` sends team PE `to` in alltoallv case `round`: 0 to 5, fresh every run, known to every PE.
std::uint64_t rows_sent(int round, int from, int to) {
  return mix(symm_test::seed() ^ mix(static_cast<std::uint64_t>(round) ^
                                     mix(static_cast<std::uint64_t>(from) << 16 | static_cast<std::uint64_t>(to)))) %
         6;
}
//! Element e of row r of what team PE `from` sends team PE `to`.
std::int64_t row_element(int from, int to, std::uint64_t r, std::size_t e) {
  return from * 1000000 + to * 10000 + static_cast<std::int64_t>(r) * 10 + static_cast<std::int64_t>(e);
}

//! One alltoallv over `t` with rows of 3 elements, checked row by row on this PE. Every world PE calls it (the arrays
//! are allocated collectively, sized for the world); PEs outside `t` only allocate.
void check_alltoallv(symm::world& world, const symm::team& t, int round) {
  constexpr std::size_t row = 3;
  const std::size_t most = 5 * row * static_cast<std::size_t>(world.n_pes()); // 5 rows from each PE at most
  symm::array<std::uint64_t> send_counts(world, static_cast<std::size_t>(world.n_pes()));
  symm::array<std::int64_t> src(world, most), dst(world, most + 7);
  if (!t.valid()) return;
  const int n = t.n_pes(), me = t.my_pe();
  std::size_t at = 0;
  for (int k = 0; k < n; ++k) {
    send_counts.local()[static_cast<std::size_t>(k)] = rows_sent(round, me, k);
    for (std::uint64_t r = 0; r < rows_sent(round, me, k); ++r)
      for (std::size_t e = 0; e < row; ++e)
        src.local()[at++] = row_element(me, k, r, e);
  }
  std::fill(dst.local().begin(), dst.local().end(), -1);
  std::vector<std::uint64_t> received(static_cast<std::size_t>(n), 99);
  // dst: whole rows only (the last 7 elements are not a row: a view of the rows); send_counts: one per team PE
  const std::size_t got = symm::alltoallv(
      t, dst.ref().subarray(0, most), received, src, send_counts.ref().subarray(0, static_cast<std::size_t>(n)), row);
  std::size_t expected_rows = 0;
  at = 0;
  for (int k = 0; k < n; ++k) {
    const std::uint64_t count = rows_sent(round, k, me);
    PE_REQUIRE_EQ(received[static_cast<std::size_t>(k)], count);
    expected_rows += count;
    for (std::uint64_t r = 0; r < count; ++r)
      for (std::size_t e = 0; e < row; ++e)
        PE_REQUIRE_EQ(dst.local()[at++], row_element(k, me, r, e));
  }
  PE_REQUIRE_EQ(got, expected_rows);
  while (at < dst.size())
    PE_REQUIRE_EQ(dst.local()[at++], std::int64_t{-1}); // nothing written past the rows received
}
} // namespace

TEST_CASE("alltoallv: each PE's rows for each PE, by source in team order, counts read from the senders",
          "[collectives][alltoallv]") {
  CAPTURE(symm_test::seed());
  for (int n : {1, 2, 3, 4}) {
    REQUIRE_NOTHROW(on_pes(n, [](symm::world& world) {
      for (int round = 0; round < 4; ++round)
        check_alltoallv(world, world.team(), round);
      // A strided team (every other PE), and the world again after it: team indices, not world PEs, index the counts.
      if (world.n_pes() >= 2) {
        auto odd = world.team().split_strided(1, 2, world.n_pes() / 2);
        check_alltoallv(world, odd, 10);
      }
      check_alltoallv(world, world.team(), 11);
    }));
  }
}

TEST_CASE("alltoallv: a dst too small takes what fits, says who sent what, and the others go on",
          "[collectives][alltoallv][errors]") {
  REQUIRE_NOTHROW(on_pes(3, [](symm::world& world) {
    const int me = world.my_pe();
    auto t = world.team();
    symm::array<std::uint64_t> counts(world, 3);
    symm::array<int> src(world, 12), dst(world, 12);
    std::fill(counts.local().begin(), counts.local().end(), 2); // 2 rows of 2 elements to everyone
    for (std::size_t i = 0; i < 12; ++i)
      src.local()[i] = me * 100 + static_cast<int>(i);
    std::fill(dst.local().begin(), dst.local().end(), -1);
    std::vector<std::uint64_t> received(3);
    if (me == 1) { // room for 3 rows: PE 0's 2 fit, then 1 of PE 1's own, PE 2's none
      PE_REQUIRE_ERROR(symm::alltoallv(t, dst.ref().subarray(0, 6), received, src, counts, 2),
                       symm::errc::extent_mismatch, "PE 1", "PE 1 sends 2 rows after 2 rows", "dst holds 3 rows");
      PE_REQUIRE(received == std::vector<std::uint64_t>{2, 2, 2});
      const std::vector<int> want{0 + 4, 0 + 5, 0 + 6, 0 + 7, 100 + 4, 100 + 5, -1, -1, -1, -1, -1, -1};
      PE_REQUIRE(std::vector<int>(dst.local().begin(), dst.local().end()) == want);
    } else {
      PE_REQUIRE_EQ(symm::alltoallv(t, dst, received, src, counts, 2), std::size_t{6});
    }
    // Arguments every PE gets wrong alike: each PE says so itself.
    PE_REQUIRE_ERROR(symm::alltoallv(t, dst, received, src, counts, 0), symm::errc::invalid_argument, "row length");
    PE_REQUIRE_ERROR(symm::alltoallv(t, dst, received, src, counts, 5), symm::errc::extent_mismatch, "dst has 12",
                     "rows of 5");
    std::vector<std::uint64_t> two(2);
    PE_REQUIRE_ERROR(symm::alltoallv(t, dst, two, src, counts, 2), symm::errc::invalid_argument, "recv_counts 2",
                     "3 PEs");
    counts.local()[0] = 5;
    PE_REQUIRE_ERROR(symm::alltoallv(t, dst, received, src, counts, 2), symm::errc::invalid_argument,
                     "send_counts[0..1] add up to more than the 6 rows", "send_counts[1] = 2");
    counts.local()[0] = ~std::uint64_t{0}; // a sum that would wrap around to 3
    PE_REQUIRE_ERROR(symm::alltoallv(t, dst, received, src, counts, 2), symm::errc::invalid_argument,
                     "send_counts[0..0] add up to more than the 6 rows");
    PE_REQUIRE_ERROR(symm::alltoallv(t, dst, received, dst, counts, 2), symm::errc::invalid_argument, "overlap");
    // The PEs disagree on the row length (each call right on its own): every PE sees every PE's call.
    std::fill(counts.local().begin(), counts.local().end(), 1);
    PE_REQUIRE_ERROR(symm::alltoallv(t, dst, received, src, counts, me == 0 ? 3 : 2), symm::errc::allocation_mismatch,
                     "alltoallv of 4-byte elements in rows of 3", "rows of 2");
    std::fill(counts.local().begin(), counts.local().end(), 2);
    PE_REQUIRE_EQ(symm::alltoallv(t, dst, received, src, counts, 2), std::size_t{6}); // still works after all that
  }));
}

TEST_CASE("collectives check their arguments and the PEs' calls", "[collectives][errors]") {
  REQUIRE_NOTHROW(on_pes(3, [](symm::world& world) {
    const int me = world.my_pe();
    auto t = world.team();
    symm::array<float> six(world, 6), two(world, 2), seven(world, 7);
    PE_REQUIRE_ERROR(symm::fcollect(t, seven, two), symm::errc::extent_mismatch, fmt::format("PE {}", me),
                     "dst has 7 elements", "3 * 2 = 6");
    PE_REQUIRE_ERROR(symm::allreduce(t, six, two, symm::plus{}), symm::errc::extent_mismatch, "dst has 6 elements",
                     "src has 2");
    PE_REQUIRE_ERROR(symm::reduce_scatter(t, two, seven, symm::plus{}), symm::errc::extent_mismatch,
                     "src has 7 elements", "3 * 2 = 6");
    PE_REQUIRE_ERROR(symm::alltoall(t, six, six), symm::errc::invalid_argument, "overlap", "only broadcast");
    PE_REQUIRE_ERROR(symm::alltoall(t, six, seven), symm::errc::extent_mismatch, "dst has 6 and src 7");
    PE_REQUIRE_ERROR(symm::broadcast(t, six, six, 3), symm::errc::invalid_pe, "root 3", "0 to 2");
    PE_REQUIRE_ERROR(symm::reduce(t, six, six, symm::max{}, -1), symm::errc::invalid_pe, "root -1");
    PE_REQUIRE_ERROR(symm::fcollect(t, six, six.ref().subarray(0, 2)), symm::errc::invalid_argument, "overlap");
    // The PEs disagree: the agreement step reports every PE's call, on every PE.
    if (me == 0) {
      PE_REQUIRE_ERROR(symm::allreduce(t, six, six, symm::plus{}), symm::errc::allocation_mismatch,
                       "allreduce(plus) of floating-point 4-byte elements", "allreduce(max)");
    } else {
      PE_REQUIRE_ERROR(symm::allreduce(t, six, six, symm::max{}), symm::errc::allocation_mismatch, "PE 0",
                       "allreduce(plus)");
    }
    PE_REQUIRE_ERROR(symm::broadcast(t, six, six, me == 2 ? 1 : 0), symm::errc::allocation_mismatch, "root 1",
                     "root 0");
    // A PE outside the team.
    auto pair = t.split_strided(0, 1, 2);
    if (me == 2) {
      PE_REQUIRE_ERROR(symm::allreduce(pair, six, six, symm::plus{}), symm::errc::invalid_argument, "not a member");
    } else {
      symm::allreduce(pair, two, two, symm::plus{}); // still works after all of the above
    }
  }));
}

TEST_CASE("stream collectives: one plan per call, from the sizes, the GPUs and the environment",
          "[collectives]["
          "plan]") {
  using symm::detail::algorithm_choice;
  using symm::detail::collective_block_limit;
  using symm::detail::collective_id;
  using symm::detail::collective_tuning;
  using symm::detail::plan_stream_collective;
  constexpr std::size_t KiB = 1024, MiB = KiB * KiB;
  constexpr symm::detail::team_links one_gpu{}; // what symm assumed of every team before it knew topologies

  // What every PE can keep resident: one block per SM of the smallest GPU, shared by the PEs of the busiest GPU.
  STATIC_REQUIRE(collective_block_limit(132, 2) == 66);  // 2 PEs on one H100
  STATIC_REQUIRE(collective_block_limit(132, 8) == 16);  // 8 PEs on one H100
  STATIC_REQUIRE(collective_block_limit(132, 1) == 128); // a PE per GPU: every flag channel
  STATIC_REQUIRE(collective_block_limit(4, 8) == 1);
  using symm::detail::gpu_user;
  CHECK(symm::detail::max_pes_per_gpu({}) == 1);
  CHECK(symm::detail::max_pes_per_gpu(
            {{0, "a", "0000:18:00.0", 1},
             {1, "a", "0000:3b:00.0", 2},
             {2, "a", "0000:18:00.0", 3},
             {3, "b", "0000:18:00.0", 4}}) == 2);

  // Blocks: one per 4 KiB of dst + src, at most 64 unless SYMM_COLLECTIVE_BLOCKS asks, never past what is resident.
  STATIC_REQUIRE(plan_stream_collective(collective_id::fcollect, 2 * KiB, 1 * KiB, false, 66, one_gpu).blocks == 1);
  STATIC_REQUIRE(plan_stream_collective(collective_id::fcollect, 64 * KiB, 32 * KiB, false, 66, one_gpu).blocks == 24);
  STATIC_REQUIRE(plan_stream_collective(collective_id::fcollect, 128 * MiB, 64 * MiB, false, 66, one_gpu).blocks == 64);
  STATIC_REQUIRE(plan_stream_collective(collective_id::fcollect, 128 * MiB, 64 * MiB, false, 16, one_gpu).blocks == 16);
  constexpr collective_tuning sixty_four{algorithm_choice::automatic, 64};
  STATIC_REQUIRE(
      plan_stream_collective(collective_id::alltoall, 4 * KiB, 4 * KiB, false, 66, one_gpu, sixty_four).blocks == 64);
  STATIC_REQUIRE(
      plan_stream_collective(collective_id::alltoall, 4 * KiB, 4 * KiB, false, 16, one_gpu, sixty_four).blocks == 16);

  // Algorithm: one-shot up to 64 KiB per PE, two-shot above and always for an allreduce in place; the override holds
  // only where it is safe and the kind has both.
  STATIC_REQUIRE(!plan_stream_collective(collective_id::allreduce, 64 * KiB, 64 * KiB, false, 66, one_gpu).two_shot);
  STATIC_REQUIRE(
      plan_stream_collective(collective_id::allreduce, 64 * KiB + 16, 64 * KiB + 16, false, 66, one_gpu).two_shot);
  STATIC_REQUIRE(plan_stream_collective(collective_id::allreduce, 4 * KiB, 4 * KiB, true, 66, one_gpu).two_shot);
  constexpr collective_tuning one_shot{algorithm_choice::one_shot, 0};
  constexpr collective_tuning two_shot{algorithm_choice::two_shot, 0};
  STATIC_REQUIRE(
      !plan_stream_collective(collective_id::broadcast, 8 * MiB, 8 * MiB, false, 66, one_gpu, one_shot).two_shot);
  STATIC_REQUIRE(
      plan_stream_collective(collective_id::allreduce, 4 * KiB, 4 * KiB, true, 66, one_gpu, one_shot).two_shot);
  STATIC_REQUIRE(
      plan_stream_collective(collective_id::reduce, 4 * KiB, 4 * KiB, false, 66, one_gpu, two_shot).two_shot);
  STATIC_REQUIRE(
      !plan_stream_collective(collective_id::fcollect, 8 * MiB, 1 * MiB, false, 66, one_gpu, two_shot).two_shot);
  CHECK(symm::detail::describe_plan(
            collective_id::allreduce,
            plan_stream_collective(collective_id::allreduce, 1 * MiB, 1 * MiB, false, 66, one_gpu), 1 * MiB, 2,
            one_gpu) == "symm::allreduce on a stream, 1048576 bytes of dst on 2 PEs (one GPU): two-shot, 64 "
                        "blocks x 512 threads");

  // The environment: read once per world, checked on every PE alike.
  {
    const symm_test::scoped_env env(
        {{"SYMM_COLLECTIVE_ALGORITHM", "two_shot"}, {"SYMM_COLLECTIVE_BLOCKS", "32"}, {"SYMM_DEBUG", "1"}});
    std::string problem;
    const collective_tuning t = symm::detail::collective_tuning_from_env(0, problem);
    CHECK((t.algorithm == algorithm_choice::two_shot && t.blocks == 32 && t.debug && problem.empty()));
  }
  for (auto [name, value, expected] :
       {std::tuple{"SYMM_COLLECTIVE_BLOCKS", "129",
                   "SYMM_COLLECTIVE_BLOCKS=129 is not a block count from 0 (chosen) "
                   "to 128"},
        std::tuple{"SYMM_COLLECTIVE_BLOCKS", "lots", "SYMM_COLLECTIVE_BLOCKS=lots"},
        std::tuple{"SYMM_COLLECTIVE_ALGORITHM", "ring",
                   "SYMM_COLLECTIVE_ALGORITHM=ring is not auto, one_shot or "
                   "two_shot"}}) {
    CAPTURE(name, value);
    const symm_test::scoped_env env({{name, value}});
    std::string problem;
    (void) symm::detail::collective_tuning_from_env(3, problem);
    CHECK_THAT(problem, symm_test::contains_substring(std::string("PE 3: ") + expected));
  }
  CHECK(symm::detail::collective_tuning_mismatch({5, 5, 5}, 1).empty());
  // A PE that refused its variables: every other PE names it (it throws its own message).
  CHECK_THAT(symm::detail::collective_tuning_mismatch({5, symm::detail::refused_tuning, 5}, 2),
             symm_test::contains_substring("PE 2: PE 1 refused its SYMM_COLLECTIVE_ALGORITHM or "
                                           "SYMM_COLLECTIVE_BLOCKS"));
  CHECK_THAT(symm::detail::collective_tuning_mismatch({5, 5, 7}, 0),
             symm_test::contains_substring("PE 0: SYMM_COLLECTIVE_ALGORITHM / SYMM_COLLECTIVE_BLOCKS differ between "
                                           "this PE and PE 2"));
}

TEST_CASE("stream collectives: the plan follows the team's weakest link (provisional PCIe rule)",
          "[collectives][plan]["
          "topology]") {
  using symm::detail::collective_id;
  using symm::detail::collective_plan;
  using symm::detail::link_class;
  using symm::detail::one_shot_max_bytes;
  using symm::detail::team_links;
  using symm_test::pe_range;
  constexpr std::size_t KiB = 1024;
  const auto plan = [](team_links links, std::size_t bytes, collective_id c = collective_id::allreduce,
                       symm::detail::collective_tuning tuning = {}) {
    return symm::detail::plan_stream_collective(c, bytes, bytes, false, 66, links, tuning);
  };

  // The threshold: today's 64 KiB where every pair of the team's GPUs is the same GPU, NVLink or unknown; half with a
  // PCIe pair (or `none`).
  STATIC_REQUIRE(one_shot_max_bytes(team_links{link_class::same_gpu}) == symm::collective_one_shot_max_bytes);
  STATIC_REQUIRE(one_shot_max_bytes(team_links{link_class::nvlink}) == 64 * KiB);
  STATIC_REQUIRE(one_shot_max_bytes(team_links{link_class::unknown}) == 64 * KiB);
  STATIC_REQUIRE(one_shot_max_bytes(team_links{link_class::pcie}) == 32 * KiB);
  STATIC_REQUIRE(one_shot_max_bytes(team_links{link_class::none}) == 32 * KiB);

  // The teams of fake machines, as team_state finds their links (topology::links_of over the members).
  const team_links one_gpu = symm_test::all_nvlink(1, 4).links_of(pe_range(0, 4));     // 4 PEs under MPS
  const team_links mps_pair = symm_test::all_nvlink(2, 2).links_of(pe_range(0, 4));    // 2 PEs on each of 2 GPUs
  const team_links nvswitch = symm_test::all_nvlink(8).links_of(pe_range(0, 8));       // 8 GPUs, all NVLink
  const team_links island = symm_test::two_islands().links_of(pe_range(4, 4));         // one NVLink island of 4
  const team_links islands = symm_test::two_islands().links_of(pe_range(0, 8));        // both, over PCIe
  const team_links across = symm_test::two_islands().links_of(std::vector<int>{0, 4}); // a PCIe pair alone
  CHECK(one_gpu.weakest == link_class::same_gpu);
  CHECK(mps_pair.weakest == link_class::nvlink);
  CHECK(nvswitch.weakest == link_class::nvlink);
  CHECK(island.weakest == link_class::nvlink);
  CHECK(islands.weakest == link_class::pcie);
  CHECK(across.weakest == link_class::pcie);

  // Unchanged on one GPU and over NVLink: one-shot up to 64 KiB, two-shot above, the same blocks as before.
  for (const team_links links : {one_gpu, mps_pair, nvswitch, island, team_links{link_class::unknown}}) {
    CAPTURE(to_string(links.weakest));
    CHECK_FALSE(plan(links, 32 * KiB).two_shot);
    CHECK_FALSE(plan(links, 32 * KiB + 16).two_shot);
    CHECK_FALSE(plan(links, 64 * KiB).two_shot);
    CHECK(plan(links, 64 * KiB + 16).two_shot);
    CHECK(plan(links, 48 * KiB) == plan(team_links{}, 48 * KiB));
  }

  // A team with a PCIe pair: two-shot from half the size, everything else as before.
  for (const team_links links : {islands, across}) {
    CHECK_FALSE(plan(links, 32 * KiB).two_shot);
    CHECK(plan(links, 32 * KiB + 16).two_shot);
    CHECK(plan(links, 48 * KiB).two_shot);
    CHECK(plan(links, 1024 * KiB).two_shot);
    CHECK(plan(links, 48 * KiB).blocks == plan(nvswitch, 48 * KiB).blocks);
    CHECK(plan(links, 48 * KiB, collective_id::broadcast).two_shot);
    CHECK(plan(links, 48 * KiB, collective_id::reduce).two_shot);
    CHECK_FALSE(plan(links, 48 * KiB, collective_id::fcollect).two_shot); // no two-shot form: unchanged
    // An allreduce in place is two-shot at any size, and the override still wins where it is safe.
    CHECK(symm::detail::plan_stream_collective(collective_id::allreduce, 4 * KiB, 4 * KiB, true, 66, links).two_shot);
    constexpr symm::detail::collective_tuning one_shot{symm::detail::algorithm_choice::one_shot, 0};
    CHECK_FALSE(plan(links, 48 * KiB, collective_id::allreduce, one_shot).two_shot);
  }
  CHECK_FALSE(plan(nvswitch, 48 * KiB).two_shot); // the same size over NVLink: one-shot

  // SYMM_DEBUG names the link class of the team.
  CHECK(symm::detail::describe_plan(collective_id::allreduce, plan(islands, 48 * KiB), 48 * KiB, 8, islands) ==
        "symm::allreduce on a stream, 49152 bytes of dst on 8 PEs (weakest link PCIe): two-shot, 24 blocks x 512 "
        "threads");
  CHECK(symm::detail::describe_plan(collective_id::allreduce, plan(island, 48 * KiB), 48 * KiB, 4, island) ==
        "symm::allreduce on a stream, 49152 bytes of dst on 4 PEs (weakest link NVLink): one-shot, 24 blocks x 512 "
        "threads");
}
