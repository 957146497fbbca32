// Remote atomics, signals and put_signal, point-to-point waits, fence and quiet, on the host backend, as processes and
// as threads. Every check compares against values that are fresh each run (symm_test::seed()) or against a sequential
// model, so a lost update, a stale element or a wrong return value fails.
#include <symm/symm.hpp>

#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

#include "../atomic_nbi_check.hpp"
#include "../pe_check.hpp"
#include "catch.hpp"

using symm_test::on_pes;

namespace {

std::mt19937_64 rng_for(int pe, std::uint64_t salt) {
  return std::mt19937_64(
      symm_test::seed() ^ (static_cast<std::uint64_t>(pe) * 0x9E3779B97F4A7C15ull) ^ (salt * 0xBF58476D1CE4E5B9ull));
}

//! The value of element i of what `producer` sends in `round` (the consumer recomputes it to check what it got).
std::uint32_t payload(int producer, std::uint64_t round, std::size_t i) {
  std::uint64_t x = symm_test::seed() ^ (static_cast<std::uint64_t>(producer) << 48) ^ (round << 24) ^ i;
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDull;
  x ^= x >> 33;
  return static_cast<std::uint32_t>(x);
}

//! A size between 1 and `max`, spread over every power of two.
std::size_t random_size(std::mt19937_64& rng, std::size_t max) {
  std::size_t bits = rng() % 18;
  return 1 + rng() % std::min(max, std::size_t{1} << bits);
}

void spin_a_little(std::mt19937_64& rng) {
  for (auto n = rng() % 64; n > 0; --n)
    std::this_thread::yield();
}

} // namespace

TEST_CASE("atomic types: which T take which operations", "[atomics]") {
  STATIC_REQUIRE(symm::atomic_value<int>);
  STATIC_REQUIRE(symm::atomic_value<unsigned long long>);
  STATIC_REQUIRE(symm::atomic_value<float>);
  STATIC_REQUIRE(symm::atomic_value<const double>);
  STATIC_REQUIRE(symm::atomic_integer<std::int64_t>);
  STATIC_REQUIRE(symm::atomic_integer<std::uint32_t>);
  STATIC_REQUIRE_FALSE(symm::atomic_integer<double>);
  STATIC_REQUIRE_FALSE(symm::atomic_value<std::int8_t>);
  STATIC_REQUIRE_FALSE(symm::atomic_value<std::int16_t>);
  STATIC_REQUIRE_FALSE(symm::atomic_value<bool>);
  STATIC_REQUIRE_FALSE(symm::atomic_value<long double>);
  struct pair {
    int a, b;
  };
  STATIC_REQUIRE_FALSE(symm::atomic_value<pair>);
  STATIC_REQUIRE(std::is_trivially_copyable_v<symm::pe_signal>);
  STATIC_REQUIRE(std::is_trivially_copyable_v<symm::signal_ref>);
  STATIC_REQUIRE(std::is_trivially_copyable_v<symm::signal_array_ref>);
  STATIC_REQUIRE(symm::symmetric_object<symm::signal>);
}

TEST_CASE("fetch_add: 10^6 increments from every PE end exact, each old value returned once", "[atomics]") {
  constexpr std::uint32_t total = 1'000'000;
  for (int n : {1, 2, 3, 4, 8}) {
    CAPTURE(n, symm_test::seed());
    REQUIRE_NOTHROW(on_pes(n, [](symm::world& world) {
      const int me = world.my_pe(), n_pes = world.n_pes();
      const std::uint32_t share = total / static_cast<std::uint32_t>(n_pes);
      const std::uint32_t mine = share + (static_cast<std::uint32_t>(me) < total % n_pes ? 1 : 0);
      const std::uint32_t first = static_cast<std::uint32_t>(me) * share + std::min<std::uint32_t>(me, total % n_pes);
      symm::scalar<std::uint64_t> counter(world);
      symm::scalar<std::int32_t> counter32(world);
      symm::array<std::uint32_t> olds(world, total);
      counter.local() = 0;
      counter32.local() = 0;
      world.barrier();
      auto target = symm::remote(counter, 0);
      auto target32 = symm::remote(counter32, n_pes - 1);
      std::vector<std::uint32_t> seen(mine);
      for (std::uint32_t i = 0; i < mine; ++i) {
        auto order = (i & 1) ? cuda::memory_order_relaxed : cuda::memory_order_seq_cst;
        seen[i] = static_cast<std::uint32_t>(target.fetch_add(1, order));
        target32.add(1, cuda::memory_order_relaxed); // the non-fetching form, on a 4-byte word
      }
      // One PE's own increments are ordered, so its old values increase.
      PE_REQUIRE(std::is_sorted(seen.begin(), seen.end()) &&
                 std::adjacent_find(seen.begin(), seen.end()) == seen.end());
      symm::remote(olds, 0).subspan(first, mine) = seen;
      world.barrier();
      if (me == 0) {
        PE_REQUIRE_EQ(counter.local(), std::uint64_t{total});
        std::vector<std::uint32_t> all(olds.local().begin(), olds.local().end());
        std::sort(all.begin(), all.end());
        for (std::uint32_t i = 0; i < total; ++i) {
          if (all[i] != i) PE_REQUIRE_EQ(all[i], i); // every old value exactly once: none lost, none twice
        }
      }
      if (me == n_pes - 1) PE_REQUIRE_EQ(counter32.local(), static_cast<std::int32_t>(total));
      PE_REQUIRE_EQ(symm::remote(counter, 0).load(), std::uint64_t{total});
      world.barrier();
    }));
  }
}

TEST_CASE("nbi atomics: fetch_add_nbi futures give each old value once; every form matches a sequential model",
          "[atomics][nbi]") {
  for (int n : {1, 2, 4}) {
    CAPTURE(n);
    REQUIRE_NOTHROW(on_pes(n, [](symm::world& world) {
      symm_test::check_fetch_add_nbi(world, 3000);
      symm_test::check_atomic_nbi_model<std::int32_t>(world);
      symm_test::check_atomic_nbi_model<std::uint32_t>(world);
      symm_test::check_atomic_nbi_model<long long>(world);
      symm_test::check_atomic_nbi_model<unsigned long long>(world);
      symm_test::check_atomic_nbi_model<float>(world);
      symm_test::check_atomic_nbi_model<double>(world);
      symm_test::check_value_future_rules(world);
    }));
  }
}

TEST_CASE("a compare_exchange lock guards a non-atomic read-modify-write: no update is lost", "[atomics]") {
  for (int n : {2, 3, 8}) {
    CAPTURE(n);
    REQUIRE_NOTHROW(on_pes(n, [](symm::world& world) {
      const int me = world.my_pe(), n_pes = world.n_pes();
      const int iterations = 4000 / n_pes;
      symm::scalar<std::int32_t> lock(world);
      symm::scalar<std::int64_t> shared(world);
      lock.local() = 0;
      shared.local() = 0;
      world.barrier();
      auto l = symm::remote(lock, 0);
      auto s = symm::remote(shared, 0);
      for (int i = 0; i < iterations; ++i) {
        for (;;) {
          std::int32_t expected = 0;
          if (l.compare_exchange(expected, me + 1, cuda::memory_order_acquire)) break;
          PE_REQUIRE(expected >= 1 && expected <= n_pes && expected != me + 1); // failure reports the holder
          std::this_thread::yield();
        }
        PE_REQUIRE_EQ(l.load(cuda::memory_order_relaxed), me + 1);
        std::int64_t v = s; // g
        s = v + 1;          // p: a plain read-modify-write, safe only under the lock
        l.store(0, cuda::memory_order_release);
      }
      world.barrier();
      PE_REQUIRE_EQ(s.get(), std::int64_t{iterations} * n_pes);
      world.barrier();
    }));
  }
}

namespace {
enum class op_kind {
  load,
  store,
  exchange,
  cas_hit,
  cas_miss,
  fetch_add,
  fetch_sub,
  add,
  sub,
  fetch_and,
  fetch_or,
  fetch_xor,
  fetch_min,
  fetch_max,
  bit_and,
  bit_or,
  bit_xor,
  count
};

//! Each PE applies a random sequence of atomics to its own slot on another PE, with random memory orders, and checks
//! every returned value against a sequential model (the other PEs hammer the neighbouring slots meanwhile).
template <class T>
void sequential_model(symm::world& world) {
  constexpr bool integer = symm::atomic_integer<T>;
  const int me = world.my_pe(), n = world.n_pes();
  const int target = (me + 1) % n;
  symm::array<T> slots(world, static_cast<std::size_t>(n));
  world.barrier();
  auto rng = rng_for(me, 17 + sizeof(T) + (std::is_floating_point_v<T> ? 100 : 0));
  auto random_value = [&] {
    if constexpr (integer) return static_cast<T>(rng());
    else return static_cast<T>(std::uniform_real_distribution<double>(-1e6, 1e6)(rng));
  };
  auto wrap = [](auto f, T a, T b) {
    if constexpr (integer) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(f(static_cast<U>(a), static_cast<U>(b)));
    } else {
      return static_cast<T>(f(a, b));
    }
  };
  const cuda::memory_order rmw_orders[] = {
      cuda::memory_order_relaxed, cuda::memory_order_acquire, cuda::memory_order_release, cuda::memory_order_acq_rel,
      cuda::memory_order_seq_cst};
  const cuda::memory_order load_orders[] = {
      cuda::memory_order_relaxed, cuda::memory_order_acquire, cuda::memory_order_seq_cst};
  const cuda::memory_order store_orders[] = {
      cuda::memory_order_relaxed, cuda::memory_order_release, cuda::memory_order_seq_cst};
  auto r = symm::remote(slots, target)[static_cast<std::size_t>(me)];
  const auto& read_only = slots;
  auto cr = symm::remote(read_only, target)[static_cast<std::size_t>(me)]; // pe_ref<const T>: load only
  T model = random_value();
  r.store(model);
  const int last = integer ? static_cast<int>(op_kind::count) : static_cast<int>(op_kind::fetch_and);
  std::vector<int> histogram(static_cast<std::size_t>(op_kind::count));
  for (int step = 0; step < 3000; ++step) {
    auto kind = static_cast<op_kind>(rng() % static_cast<unsigned>(last));
    ++histogram[static_cast<std::size_t>(kind)];
    const T v = random_value();
    const auto order = rmw_orders[rng() % 5];
    T old{};
    bool fetched = true;
    T next = model;
    switch (kind) {
      case op_kind::load: old = (step & 1) ? r.load(load_orders[rng() % 3]) : cr.load(load_orders[rng() % 3]); break;
      case op_kind::store:
        r.store(v, store_orders[rng() % 3]);
        fetched = false;
        next = v;
        break;
      case op_kind::exchange:
        old = r.exchange(v, order);
        next = v;
        break;
      case op_kind::cas_hit: {
        T expected = model;
        PE_REQUIRE(r.compare_exchange(expected, v, order));
        PE_REQUIRE(expected == model);
        fetched = false;
        next = v;
        break;
      }
      case op_kind::cas_miss: {
        T expected = model == T(7) ? T(8) : T(7);
        PE_REQUIRE(!r.compare_exchange(expected, v, order));
        old = expected; // the value seen
        break;
      }
      case op_kind::fetch_add:
        old = r.fetch_add(v, order);
        next = wrap(std::plus<>{}, model, v);
        break;
      case op_kind::fetch_sub:
        old = r.fetch_sub(v, order);
        next = wrap(std::minus<>{}, model, v);
        break;
      case op_kind::add:
        r.add(v, order);
        fetched = false;
        next = wrap(std::plus<>{}, model, v);
        break;
      case op_kind::sub:
        r.sub(v, order);
        fetched = false;
        next = wrap(std::minus<>{}, model, v);
        break;
      default:
        if constexpr (integer) {
          switch (kind) {
            case op_kind::fetch_and:
              old = r.fetch_and(v, order);
              next = model & v;
              break;
            case op_kind::fetch_or:
              old = r.fetch_or(v, order);
              next = model | v;
              break;
            case op_kind::fetch_xor:
              old = r.fetch_xor(v, order);
              next = model ^ v;
              break;
            case op_kind::fetch_min:
              old = r.fetch_min(v, order);
              next = std::min(model, v);
              break;
            case op_kind::fetch_max:
              old = r.fetch_max(v, order);
              next = std::max(model, v);
              break;
            case op_kind::bit_and:
              r.bit_and(v, order);
              fetched = false;
              next = model & v;
              break;
            case op_kind::bit_or:
              r.bit_or(v, order);
              fetched = false;
              next = model | v;
              break;
            case op_kind::bit_xor:
              r.bit_xor(v, order);
              fetched = false;
              next = model ^ v;
              break;
            default: PE_REQUIRE(false);
          }
        }
    }
    if (fetched && std::memcmp(&old, &model, sizeof(T)) != 0) {
      throw std::runtime_error(fmt::format(
          "PE {}: step {}: op {} returned {} but the model holds {}", me, step, static_cast<int>(kind), old, model));
    }
    model = next;
  }
  for (int k = 0; k < last; ++k)
    PE_REQUIRE(histogram[static_cast<std::size_t>(k)] > 0);
  PE_REQUIRE(r.load() == model);
  world.barrier();
  // The owner sees the same final values through its local memory.
  const int writer = (me + n - 1) % n;
  T final_value = slots.local()[static_cast<std::size_t>(writer)];
  PE_REQUIRE(symm::remote(slots, me)[static_cast<std::size_t>(writer)].load() == final_value);
  world.barrier();
}
} // namespace

TEMPLATE_TEST_CASE("every atomic of every type matches a sequential model", "[atomics]", std::int32_t, std::uint32_t,
                   std::int64_t, std::uint64_t, float, double) {
  CAPTURE(symm_test::seed());
  REQUIRE_NOTHROW(on_pes(3, [](symm::world& world) { sequential_model<TestType>(world); }));
}

TEST_CASE("put_signal pipeline: the consumer never sees stale data after the signal", "[atomics][signal]") {
  for (int n : {1, 2, 3, 4}) {
    CAPTURE(n, symm_test::seed());
    REQUIRE_NOTHROW(on_pes(n, [](symm::world& world) {
      const int me = world.my_pe(), n_pes = world.n_pes();
      const int right = (me + 1) % n_pes, left = (me + n_pes - 1) % n_pes;
      constexpr std::size_t max = std::size_t{1} << 17;
      constexpr std::uint64_t rounds = 150;
      symm::array<std::uint32_t> buf(world, max);
      symm::signal ready(world);
      symm::scalar<std::uint32_t> ack(world); // rounds my right neighbour has consumed
      ack.local() = 0;
      PE_REQUIRE_EQ(symm::signal_fetch(ready), std::uint64_t{0}); // signals start at 0
      world.barrier();
      // Both sides draw the same sizes: the producer's generator, replayed by its consumer.
      auto produce_sizes = rng_for(me, 5), consume_sizes = rng_for(left, 5);
      auto jitter = rng_for(me, 6);
      std::vector<std::uint32_t> out(max);
      for (std::uint64_t round = 1; round <= rounds; ++round) {
        // Produce: wait until the consumer is done with the previous round, then send.
        symm::wait_until(ack, symm::cmp::ge, static_cast<std::uint32_t>(round - 1));
        if (round % 2 == 1) spin_a_little(jitter); // the consumer is then already waiting when the data comes
        std::size_t size = random_size(produce_sizes, max);
        for (std::size_t i = 0; i < size; ++i)
          out[i] = payload(me, round, i);
        auto source = std::span<const std::uint32_t>(out.data(), size);
        auto dst = symm::remote(buf, right).first(size);
        auto op = round % 2 == 1 ? symm::signal_op::set : symm::signal_op::add;
        std::uint64_t value = op == symm::signal_op::set ? round : 1; // either way the signal becomes `round`
        if (round % 3 == 0) {
          auto f = symm::put_signal_nbi(dst, source, symm::remote(ready, right), value, op);
          f.wait();
        } else {
          symm::put_signal(dst, source, symm::remote(ready, right), value, op);
        }
        if (round % 4 == 0) spin_a_little(jitter); // ... or arrives late
        // Consume: once the signal says `round`, every element must be this round's.
        std::uint64_t seen = symm::signal_wait_until(ready, symm::cmp::ge, round);
        PE_REQUIRE_EQ(seen, round); // the producer cannot run ahead of our ack
        std::size_t expected_size = random_size(consume_sizes, max);
        for (std::size_t i = expected_size; i-- > 0;) { // from the end: what a copy writes last
          std::uint32_t got = buf.local()[i];
          if (got != payload(left, round, i)) {
            throw std::runtime_error(
                fmt::format("PE {}: round {}: element {} of {} is {:#x}, expected {:#x} (stale "
                            "or torn data after the signal)",
                            me, round, i, expected_size, got, payload(left, round, i)));
          }
        }
        PE_REQUIRE_EQ(symm::signal_fetch(ready), round);
        symm::remote(ack, left).store(static_cast<std::uint32_t>(round), cuda::memory_order_release);
      }
      world.barrier();
    }));
  }
}

TEST_CASE("signals: several producers add into one signal; a signal_array gives independent signals",
          "[atomics]["
          "signal]") {
  CAPTURE(symm_test::seed()); // computed here, before the PEs fork, so that they all share it
  REQUIRE_NOTHROW(on_pes(4, [](symm::world& world) {
    const int me = world.my_pe(), n = world.n_pes();
    symm::array<std::uint64_t> slots(world, static_cast<std::size_t>(n));
    symm::signal_array sigs(world, 2);
    PE_REQUIRE_EQ(sigs.size(), std::size_t{2});
    // Everyone writes its slot on PE 0 and adds 1 to signal 0 there; PE 0 waits for all of them.
    std::uint64_t mine = payload(me, 99, 0) | 1;
    std::array<std::uint64_t, 1> one{mine};
    symm::put_signal(symm::remote(slots, 0).subspan(static_cast<std::size_t>(me), 1), one, symm::remote(sigs[0], 0), 1,
                     symm::signal_op::add);
    if (me == 0) {
      PE_REQUIRE_EQ(symm::signal_wait_until(sigs[0], symm::cmp::eq, static_cast<std::uint64_t>(n)),
                    static_cast<std::uint64_t>(n));
      for (int p = 0; p < n; ++p)
        PE_REQUIRE_EQ(slots.local()[static_cast<std::size_t>(p)], payload(p, 99, 0) | 1);
      PE_REQUIRE_EQ(symm::signal_fetch(sigs[1]), std::uint64_t{0}); // the other signal is untouched
      for (int p = 0; p < n; ++p) {
        auto none = std::span<const std::uint64_t>(&mine, 0); // a signal alone: no data
        symm::put_signal(symm::remote(slots, p).first(0), none, symm::remote(sigs[1], p), 7, symm::signal_op::set);
      }
    }
    PE_REQUIRE_EQ(symm::signal_wait_until(sigs[1], symm::cmp::ge, 7), std::uint64_t{7});
    PE_REQUIRE(sigs.local().size() == 2);
    // Misuse: data and signal on different PEs, sizes that differ.
    std::vector<std::uint64_t> two(2);
    PE_REQUIRE_ERROR(
        symm::put_signal(symm::remote(slots, 0).first(2), two, symm::remote(sigs[0], 1), 1, symm::signal_op::add),
        symm::errc::invalid_argument, "signal is on PE");
    PE_REQUIRE_ERROR(
        symm::put_signal(symm::remote(slots, 0).first(3), two, symm::remote(sigs[0], 0), 1, symm::signal_op::add),
        symm::errc::extent_mismatch, "has 2");
    PE_REQUIRE_ERROR((void) symm::remote(sigs[0], n), symm::errc::invalid_pe, "n_pes");
    PE_REQUIRE_ERROR((void) sigs[2], symm::errc::invalid_argument, "out of range");
    world.barrier();
  }));
}

TEST_CASE("signal_update: a signal without data, set after a p and added into by every PE", "[atomics][signal]") {
  REQUIRE_NOTHROW(on_pes(4, [](symm::world& world) {
    const int me = world.my_pe(), n = world.n_pes(), right = (me + 1) % n, left = (me + n - 1) % n;
    symm::array<std::uint64_t> box(world, 1);
    symm::signal ready(world), count(world);
    for (std::uint64_t round = 1; round <= 50; ++round) {
      // The p, then the signal: whoever sees the signal sees the p (release, then the wait's acquire).
      symm::remote(box, right)[0] = payload(me, round, 0);
      symm::signal_update(symm::remote(ready, right), round, symm::signal_op::set);
      PE_REQUIRE_EQ(symm::signal_wait_until(ready, symm::cmp::eq, round), round);
      PE_REQUIRE_EQ(box.local()[0], std::uint64_t{payload(left, round, 0)});
      world.barrier(); // before the next round's p overwrites the box
    }
    // Every PE adds its number plus one into PE 0's count: 1 + 2 + ... + n.
    symm::signal_update(symm::remote(count, 0), static_cast<std::uint64_t>(me) + 1, symm::signal_op::add);
    const auto total = static_cast<std::uint64_t>(n * (n + 1) / 2);
    if (me == 0) PE_REQUIRE_EQ(symm::signal_wait_until(count, symm::cmp::eq, total), total);
    world.barrier();
    PE_REQUIRE_EQ(symm::signal_fetch(count), me == 0 ? total : std::uint64_t{0});
    world.barrier();
  }));
}

TEST_CASE("a PE writes and reads its own signal word in place, as NVSHMEM's ring broadcast does with *psync",
          "[atomics][signal]") {
  CAPTURE(symm_test::seed());
  REQUIRE_NOTHROW(on_pes(4, [](symm::world& world) {
    const int me = world.my_pe(), n = world.n_pes(), root = 1, next = (me + 1) % n;
    constexpr std::size_t count = 64;
    symm::array<std::uint32_t> data(world, count);
    symm::signal psync(world);
    for (std::uint64_t round = 1; round <= 20; ++round) {
      if (me == root) {
        for (std::size_t i = 0; i < count; ++i)
          data.local()[i] = payload(root, round, i);
        psync.local() = 1; // the root has the data: its own signal says so
      }
      PE_REQUIRE_EQ(symm::signal_wait_until(psync, symm::cmp::ne, 0), std::uint64_t{1});
      if (next != root)
        symm::put_signal(symm::remote(data, next), data.local(), symm::remote(psync, next), 1, symm::signal_op::set);
      for (std::size_t i = 0; i < count; ++i)
        PE_REQUIRE_EQ(data.local()[i], payload(root, round, i));
      psync.ref().local() = 0; // read back through every form below
      PE_REQUIRE_EQ(symm::signal_fetch(psync), std::uint64_t{0});
      PE_REQUIRE_EQ(*psync.ref().local_address(), std::uint64_t{0});
      world.barrier(); // no PE signals the next round before every PE has reset its word
    }

    // The other forms name the same word: a signal_array's local() span, and the pe_ref that host code on the cuda and
    // nvshmem backends writes it through.
    symm::signal_array flags(world, 2);
    flags.local()[1] = 5;
    PE_REQUIRE_EQ(symm::signal_fetch(flags[1]), std::uint64_t{5});
    PE_REQUIRE(flags[1].local_address() == &flags.local()[1]);
    PE_REQUIRE(&flags[1].local() == &flags.ref().local()[1]);
    symm::remote(flags[0].word(), me)[0].store(3);
    PE_REQUIRE_EQ(flags[0].local(), std::uint64_t{3});
    PE_REQUIRE_EQ(symm::signal_wait_until(flags[0], symm::cmp::eq, 3), std::uint64_t{3});
    world.barrier();
  }));
}

namespace {
//! PE 0 waits on one word per PE while the others write theirs at random moments, with the _any, _some and _all forms
//! and status masks; the test forms are checked before and after.
template <class T>
void waits_over_spans(symm::world& world) {
  const int me = world.my_pe(), n = world.n_pes();
  const auto count = static_cast<std::size_t>(n);
  symm::array<T> words(world, count);
  for (auto& w : words.local())
    w = 0;
  auto jitter = rng_for(me, 40 + sizeof(T));
  std::vector<int> status(count, 0);
  status[0] = 1; // PE 0's own word is never written: leave it out
  std::vector<std::size_t> indices(count);
  world.barrier();
  auto local = words.local();
  auto mask = cuda::std::span<const int>(status.data(), count);
  auto idx = cuda::std::span<std::size_t>(indices.data(), count);
  if (me == 0) {
    PE_REQUIRE_EQ(symm::test_any(local, symm::cmp::ne, T(0)), symm::no_index);
    PE_REQUIRE_EQ(symm::test_some(local, idx, symm::cmp::ne, T(0)), std::size_t{0});
    PE_REQUIRE(!symm::test_all(local, symm::cmp::ne, T(0), mask));
    PE_REQUIRE(symm::test_all(local, symm::cmp::eq, T(0)));
  }
  world.barrier();
  // Round 1, _any: each writer stores 1 at a random moment; PE 0 finds them one by one, leaving out those found.
  if (me != 0) {
    spin_a_little(jitter);
    symm::remote(words, 0)[static_cast<std::size_t>(me)].store(T(1), cuda::memory_order_release);
  } else {
    std::vector<int> found(status);
    for (int k = 1; k < n; ++k) {
      std::size_t i = symm::wait_until_any(local, symm::cmp::ne, T(0), cuda::std::span<const int>(found.data(), count));
      PE_REQUIRE(i < count && i != 0 && found[i] == 0 && local[i] == T(1));
      found[i] = 1;
    }
    PE_REQUIRE_EQ(symm::wait_until_any(local, symm::cmp::ne, T(0), cuda::std::span<const int>(found.data(), count)),
                  symm::no_index); // everything left out
    PE_REQUIRE_EQ(symm::test_any(local, symm::cmp::ne, T(0), cuda::std::span<const int>(found.data(), count)),
                  symm::no_index);
    PE_REQUIRE(symm::test_all(local, symm::cmp::eq, T(1), mask));
  }
  world.barrier();
  // Round 2, _some: each writer adds 2; PE 0 collects until every word reached 3.
  if (me != 0) {
    spin_a_little(jitter);
    symm::remote(words, 0)[static_cast<std::size_t>(me)].add(T(2));
  } else {
    std::vector<int> found(status);
    int seen = 0;
    while (seen < n - 1) {
      std::size_t got =
          symm::wait_until_some(local, idx, symm::cmp::eq, T(3), cuda::std::span<const int>(found.data(), count));
      PE_REQUIRE(got >= 1 && got <= count - 1);
      for (std::size_t k = 0; k < got; ++k) {
        PE_REQUIRE(indices[k] != 0 && found[indices[k]] == 0 && local[indices[k]] == T(3));
        PE_REQUIRE(k == 0 || indices[k] > indices[k - 1]);
        found[indices[k]] = 1;
        ++seen;
      }
    }
    PE_REQUIRE_EQ(
        symm::wait_until_some(local, idx, symm::cmp::eq, T(3), cuda::std::span<const int>(found.data(), count)),
        std::size_t{0}); // everything left out
    PE_REQUIRE_EQ(symm::test_some(local, idx, symm::cmp::eq, T(3), mask), count - 1);
  }
  world.barrier();
  // Round 3, _all: each writer stores its PE number + 10; PE 0 waits for all of them.
  if (me != 0) {
    spin_a_little(jitter);
    symm::remote(words, 0)[static_cast<std::size_t>(me)] = static_cast<T>(me + 10); // a p wakes waiters too
  } else {
    symm::wait_until_all(local, symm::cmp::ge, T(10), mask);
    for (int p = 1; p < n; ++p)
      PE_REQUIRE(local[static_cast<std::size_t>(p)] == static_cast<T>(p + 10));
    PE_REQUIRE(symm::test_all(local, symm::cmp::gt, T(9), mask));
    PE_REQUIRE(!symm::test_all(local, symm::cmp::gt, T(9))); // word 0 is still 0
    PE_REQUIRE_ERROR(symm::wait_until_all(local, symm::cmp::ge, T(10), cuda::std::span<const int>(status.data(), 1)),
                     symm::errc::extent_mismatch, "status span has 1 entries");
    PE_REQUIRE_ERROR((void) symm::wait_until_some(local, idx.first(1), symm::cmp::ge, T(10)),
                     symm::errc::invalid_argument, "indices has 1 entries");
  }
  world.barrier();
}
} // namespace

TEMPLATE_TEST_CASE("wait_until_any, _some and _all, and the test forms, with status masks", "[atomics][wait]",
                   std::int32_t, std::uint64_t) {
  for (int n : {2, 4, 8}) {
    CAPTURE(n, symm_test::seed());
    REQUIRE_NOTHROW(on_pes(n, [](symm::world& world) { waits_over_spans<TestType>(world); }));
  }
}

namespace {
//! The _vector forms: word i is compared with values[i]. First on words PE 0 sets itself (each form against values
//! that match some words and not others, so one value for every word would give other answers), then PE 0 waits on
//! one word per PE while the others write theirs at random moments, each its own value.
template <class T>
void vector_waits(symm::world& world) {
  const int me = world.my_pe(), n = world.n_pes();
  const auto count = static_cast<std::size_t>(n);
  symm::array<T> words(world, count);
  auto local = words.local();
  std::vector<std::size_t> indices(count);
  auto idx = cuda::std::span<std::size_t>(indices.data(), count);
  const auto own = [&](std::size_t i) { return static_cast<T>(3 * i + 7 + static_cast<std::size_t>(n)); };
  std::vector<T> values(count);
  for (std::size_t i = 0; i < count; ++i)
    values[i] = own(i);
  if (me == 0) {
    // Even words hold their own value, odd words their value + 1.
    for (std::size_t i = 0; i < count; ++i)
      local[i] = static_cast<T>(own(i) + (i % 2));
    PE_REQUIRE_EQ(symm::test_some_vector(local, idx, symm::cmp::eq, values), (count + 1) / 2);
    for (std::size_t k = 0; k < (count + 1) / 2; ++k)
      PE_REQUIRE_EQ(indices[k], 2 * k);
    PE_REQUIRE_EQ(symm::test_some_vector(local, idx, symm::cmp::gt, values), count / 2);
    PE_REQUIRE_EQ(indices[0], std::size_t{1});
    PE_REQUIRE_EQ(symm::test_any_vector(local, symm::cmp::ne, values), std::size_t{1});
    std::vector<int> skip_odd(count, 0), skip_even(count, 0);
    for (std::size_t i = 0; i < count; ++i)
      (i % 2 ? skip_odd : skip_even)[i] = 1;
    const auto odd_out = cuda::std::span<const int>(skip_odd.data(), count);
    const auto even_out = cuda::std::span<const int>(skip_even.data(), count);
    PE_REQUIRE(!symm::test_all_vector(local, symm::cmp::eq, values));
    PE_REQUIRE(symm::test_all_vector(local, symm::cmp::eq, values, odd_out));
    PE_REQUIRE(symm::test_all_vector(local, symm::cmp::gt, values, even_out));
    PE_REQUIRE(symm::test_all_vector(local, symm::cmp::ge, values));
    PE_REQUIRE_EQ(symm::test_any_vector(local, symm::cmp::lt, values), symm::no_index);
    PE_REQUIRE_EQ(symm::test_any_vector(local, symm::cmp::ne, values, odd_out), symm::no_index);
    // Satisfied already: the waits return at once, with the same answers.
    symm::wait_until_all_vector(local, symm::cmp::eq, values, odd_out);
    PE_REQUIRE_EQ(symm::wait_until_any_vector(local, symm::cmp::gt, values), std::size_t{1});
    PE_REQUIRE_EQ(symm::wait_until_some_vector(local, idx, symm::cmp::le, values), (count + 1) / 2);
    // Wrong sizes are named.
    PE_REQUIRE_ERROR(symm::wait_until_all_vector(local, symm::cmp::eq, cuda::std::span<const T>(values.data(), 1)),
                     symm::errc::extent_mismatch, "the values span has 1 entries but there are");
    PE_REQUIRE_ERROR((void) symm::test_any_vector(local, symm::cmp::eq, std::vector<T>(count + 1)),
                     symm::errc::extent_mismatch, "symm::test_any_vector: the values span has");
    PE_REQUIRE_ERROR((void) symm::test_some_vector(local, idx.first(1), symm::cmp::eq, values),
                     symm::errc::invalid_argument, "symm::test_some_vector: indices has 1 entries");
    // Every word at its own value: equal to all of them (one value for all would leave all but one out).
    for (std::size_t i = 0; i < count; ++i)
      local[i] = own(i);
    PE_REQUIRE(symm::test_all_vector(local, symm::cmp::eq, values));
    PE_REQUIRE_EQ(symm::test_some_vector(local, idx, symm::cmp::eq, values), count);
    for (auto& w : local)
      w = 0;
  }
  world.barrier();
  // Each writer stores its word's own value, then PE 0 waits: _any one by one, then _some, then _all, each round
  // writing a larger value than the last (values of round r: own(i) * r).
  std::vector<int> status(count, 0);
  status[0] = 1; // PE 0's own word is never written
  auto jitter = rng_for(me, 60 + sizeof(T));
  for (T round = 1; round <= 3; ++round) {
    for (std::size_t i = 0; i < count; ++i)
      values[i] = static_cast<T>(own(i) * round);
    if (me != 0) {
      spin_a_little(jitter);
      symm::remote(words, 0)[static_cast<std::size_t>(me)].store(
          values[static_cast<std::size_t>(me)], cuda::memory_order_release);
    } else {
      std::vector<int> found(status);
      const auto mask = cuda::std::span<const int>(found.data(), count);
      if (round == 1) {
        for (int k = 1; k < n; ++k) {
          const std::size_t i = symm::wait_until_any_vector(local, symm::cmp::eq, values, mask);
          PE_REQUIRE(i < count && i != 0 && found[i] == 0 && local[i] == values[i]);
          found[i] = 1;
        }
        PE_REQUIRE_EQ(symm::wait_until_any_vector(local, symm::cmp::eq, values, mask), symm::no_index);
      } else if (round == 2) {
        for (int seen = 0; seen < n - 1;) {
          const std::size_t got = symm::wait_until_some_vector(local, idx, symm::cmp::eq, values, mask);
          PE_REQUIRE(got >= 1 && got <= count - 1);
          for (std::size_t k = 0; k < got; ++k) {
            PE_REQUIRE(indices[k] != 0 && found[indices[k]] == 0 && local[indices[k]] == values[indices[k]]);
            found[indices[k]] = 1;
            ++seen;
          }
        }
      } else {
        symm::wait_until_all_vector(local, symm::cmp::eq, values, mask);
        for (std::size_t i = 1; i < count; ++i)
          PE_REQUIRE(local[i] == values[i]);
      }
      PE_REQUIRE(symm::test_all_vector(local, symm::cmp::eq, values, cuda::std::span<const int>(status.data(), count)));
    }
    world.barrier();
  }
}
} // namespace

TEMPLATE_TEST_CASE("wait_until_all_vector, _any_vector, _some_vector and the test forms: a value per word",
                   "[atomics][wait]", std::int32_t, std::uint64_t) {
  for (int n : {2, 5}) {
    CAPTURE(n, symm_test::seed());
    REQUIRE_NOTHROW(on_pes(n, [](symm::world& world) { vector_waits<TestType>(world); }));
  }
}

TEST_CASE("wait_until ping-pong on 4- and 8-byte words, and test with every comparison", "[atomics][wait]") {
  REQUIRE_NOTHROW(on_pes(2, [](symm::world& world) {
    const int me = world.my_pe(), other = 1 - me;
    symm::scalar<std::int32_t> flag32(world);
    symm::scalar<std::uint64_t> flag64(world);
    flag32.local() = 0;
    flag64.local() = 0;
    world.barrier();
    // Each round, PE 0 sends r and waits for -r; PE 1 waits for r and answers -r (a futex wait: sleeps and wakes).
    for (std::int32_t r = 1; r <= 2000; ++r) {
      if (me == 0) {
        symm::remote(flag32, other).store(r);
        PE_REQUIRE_EQ(symm::wait_until(flag32, symm::cmp::eq, -r), -r);
      } else {
        PE_REQUIRE_EQ(symm::wait_until(flag32, symm::cmp::eq, r), r);
        symm::remote(flag32, other).store(-r);
      }
    }
    for (std::uint64_t r = 1; r <= 2000; ++r) { // 8-byte words: spin and yield
      std::uint64_t v = (r << 32) | r;
      if (me == 0) {
        symm::remote(flag64, other).store(v, cuda::memory_order_release);
        PE_REQUIRE_EQ(symm::wait_until(&flag64.local(), symm::cmp::ge, v + 1), v + 1);
      } else {
        PE_REQUIRE_EQ(symm::wait_until(flag64.local(), symm::cmp::eq, v), v);
        std::uint64_t last_answer = r == 1 ? 0 : v - (std::uint64_t{1} << 32); // ((r - 1) << 32 | (r - 1)) + 1
        PE_REQUIRE_EQ(symm::remote(flag64, other).exchange(v + 1), last_answer);
      }
    }
    world.barrier();
    std::int32_t& x = flag32.local();
    x = 5;
    using symm::cmp;
    struct row {
      cmp c;
      bool below, equal, above; // x <c> 4, x <c> 5, x <c> 6
    };
    for (row r : {row{cmp::eq, false, true, false}, row{cmp::ne, true, false, true}, row{cmp::gt, true, false, false},
                  row{cmp::ge, true, true, false}, row{cmp::lt, false, false, true}, row{cmp::le, false, true, true}}) {
      PE_REQUIRE_EQ(symm::test(x, r.c, 4), r.below);
      PE_REQUIRE_EQ(symm::test(&x, r.c, 5), r.equal);
      PE_REQUIRE_EQ(symm::test(flag32, r.c, 6), r.above);
    }
    world.barrier();
  }));
}

TEST_CASE("a wait ends with peer_failed when the PE it waits for dies", "[atomics][wait][failure]") {
  const symm::world_options host{.backend = symm::backend::host, .heap_size = 1 << 20};
  for (int kind = 0; kind < 4; ++kind) {
    CAPTURE(kind);
    // Threads: PE 1 leaves by an exception (its world marks it failed); PE 0 must notice while waiting.
    std::atomic<int> noticed{0};
    auto body = [&](symm::world& world) {
      symm::scalar<std::int32_t> flag32(world);
      symm::scalar<std::uint64_t> flag64(world);
      symm::signal sig(world);
      flag32.local() = 0;
      flag64.local() = 0;
      world.barrier();
      if (world.my_pe() == 1) throw std::runtime_error("PE 1 gives up");
      try {
        switch (kind) {
          case 0: symm::wait_until(flag32, symm::cmp::eq, 1); break;
          case 1: symm::wait_until(flag64, symm::cmp::eq, 1); break;
          case 2: symm::signal_wait_until(sig, symm::cmp::ge, 1); break;
          default: (void) symm::wait_until_any(cuda::std::span<std::int32_t>(&flag32.local(), 1), symm::cmp::ne, 0);
        }
      } catch (const symm::error& e) {
        if (e.code() == symm::errc::peer_failed) noticed = 1;
        throw;
      }
    };
    REQUIRE_THROWS_WITH(symm::launch(2, body, {.mode = symm::launch_mode::threads, .world = host}),
                        symm_test::contains_substring("PE 1 gives up"));
    REQUIRE(noticed == 1);
  }
  // Processes: PE 1 vanishes without a word (as in a crash); PE 0 notices that its process is gone.
  auto vanish = [](symm::world& world) {
    symm::scalar<std::int32_t> flag(world);
    flag.local() = 0;
    world.barrier();
    if (world.my_pe() == 1) ::_exit(0);
    symm::wait_until(flag, symm::cmp::eq, 1);
  };
  REQUIRE_THROWS_WITH(symm::launch(2, vanish, {.mode = symm::launch_mode::processes, .world = host}),
                      symm_test::contains_substring("PE 0"));
}

TEST_CASE("bounded waits: a deadline that passes returns timed_out, a condition that holds returns ok and the value",
          "[atomics][wait][bounded]") {
  using namespace std::chrono_literals;
  REQUIRE_NOTHROW(on_pes(2, [](symm::world& world) {
    const int me = world.my_pe(), other = 1 - me;
    symm::scalar<std::int32_t> flag32(world);
    symm::scalar<std::uint64_t> flag64(world);
    symm::signal sig(world);
    symm::array<std::int32_t> data(world, 1);
    flag32.local() = 0;
    flag64.local() = 0;
    world.barrier();
    // Nobody writes: every form ends at its deadline, having waited at least that long (not much longer: a few ms).
    const auto timed = [](auto&& wait, std::chrono::milliseconds timeout) {
      const auto start = std::chrono::steady_clock::now();
      auto got = wait(timeout);
      const auto took = std::chrono::steady_clock::now() - start;
      PE_REQUIRE(took >= timeout);
      PE_REQUIRE(took < timeout + 5s);
      return got;
    };
    auto r32 = timed([&](auto t) { return symm::wait_until_for(flag32, symm::cmp::eq, 1, t); }, 20ms);
    PE_REQUIRE(r32.status == symm::wait_status::timed_out && !r32.ok());
    PE_REQUIRE_EQ(r32.value, 0);
    auto r64 = timed([&](auto t) { return symm::wait_until_for(&flag64.local(), symm::cmp::ge, 1, t); }, 20ms);
    PE_REQUIRE(r64.status == symm::wait_status::timed_out);
    PE_REQUIRE_EQ(r64.value, std::uint64_t{0});
    auto rs = timed([&](auto t) { return symm::signal_wait_until_for(sig, symm::cmp::ne, 0, t); }, 20ms);
    PE_REQUIRE(rs.status == symm::wait_status::timed_out);
    // A timeout of 0 or less checks and gives up; a cuda::std::chrono duration works as well as a std::chrono one.
    PE_REQUIRE(symm::wait_until_for(flag32, symm::cmp::eq, 1, 0ms).status == symm::wait_status::timed_out);
    PE_REQUIRE(symm::wait_until_for(flag32, symm::cmp::eq, 1, -5s).status == symm::wait_status::timed_out);
    PE_REQUIRE(symm::wait_until_for(flag32, symm::cmp::eq, 1, cuda::std::chrono::microseconds(100)).status ==
               symm::wait_status::timed_out);
    // A condition that holds already returns ok and the value at once, whatever the timeout.
    PE_REQUIRE(symm::wait_until_for(flag32, symm::cmp::eq, 0, 0ms).status == symm::wait_status::ok);
    world.barrier();
    // A peer's write ends the wait with ok and the value it wrote, well before the deadline.
    for (std::int32_t r = 1; r <= 200; ++r) {
      if (me == 0) {
        symm::remote(flag32, other).store(r);
        symm::remote(flag64, other).store(std::uint64_t(r) << 32, cuda::memory_order_release);
        const std::array<std::int32_t, 1> sent{-r};
        symm::put_signal(symm::remote(data, other), sent, symm::remote(sig, other), std::uint64_t(r),
                         symm::signal_op::set);
      } else {
        auto a = symm::wait_until_for(flag32, symm::cmp::ge, r, 30s);
        PE_REQUIRE(a.ok());
        PE_REQUIRE_EQ(a.value, r);
        auto [status, seen] = symm::wait_until_for(flag64.local(), symm::cmp::eq, std::uint64_t(r) << 32, 30s);
        PE_REQUIRE(status == symm::wait_status::ok);
        PE_REQUIRE_EQ(seen, std::uint64_t(r) << 32);
        auto s = symm::signal_wait_until_for(sig, symm::cmp::ge, std::uint64_t(r), 30s);
        PE_REQUIRE(s.ok());
        PE_REQUIRE_EQ(s.value, std::uint64_t(r));
        PE_REQUIRE_EQ(data.local()[0], -r); // the put's data is visible once its signal is seen
      }
      world.barrier();
    }
  }));
}

TEST_CASE("a bounded host wait returns peer_failed when another PE dies", "[atomics][wait][bounded][failure]") {
  using namespace std::chrono_literals;
  const symm::world_options host{.backend = symm::backend::host, .heap_size = 1 << 20};
  // Each form, as threads (PE 1 leaves by an exception: its world marks it failed) and as processes (PE 1 vanishes
  // without a word, as in a crash). PE 0 must see it long before its 30 s deadline; it reports through shared memory,
  // which forked PEs share with the test.
  auto* noticed = static_cast<std::atomic<int>*>(
      ::mmap(nullptr, sizeof(std::atomic<int>), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  REQUIRE(noticed != MAP_FAILED);
  for (int kind = 0; kind < 3; ++kind) {
    for (auto mode : {symm::launch_mode::threads, symm::launch_mode::processes}) {
      CAPTURE(kind, mode == symm::launch_mode::threads);
      noticed->store(0);
      auto body = [&](symm::world& world) {
        symm::scalar<std::int32_t> flag32(world);
        symm::scalar<std::uint64_t> flag64(world);
        symm::signal sig(world);
        flag32.local() = 0;
        flag64.local() = 0;
        world.barrier();
        if (world.my_pe() == 1) {
          if (mode == symm::launch_mode::processes) ::_exit(0);
          throw std::runtime_error("PE 1 gives up");
        }
        const auto start = std::chrono::steady_clock::now();
        symm::wait_status status = symm::wait_status::ok;
        switch (kind) {
          case 0: status = symm::wait_until_for(flag32, symm::cmp::eq, 1, 30s).status; break;
          case 1: status = symm::wait_until_for(flag64, symm::cmp::eq, 1, 30s).status; break;
          default: status = symm::signal_wait_until_for(sig, symm::cmp::ge, 1, 30s).status;
        }
        if (status == symm::wait_status::peer_failed && std::chrono::steady_clock::now() - start < 10s) {
          noticed->store(1);
        }
      };
      // The job still fails (PE 1 did); what matters is how PE 0's wait ended.
      try {
        symm::launch(2, body, {.mode = mode, .world = host});
      } catch (const std::exception&) {
      }
      REQUIRE(noticed->load() == 1);
    }
  }
  ::munmap(noticed, sizeof(std::atomic<int>));
}

TEST_CASE("fence orders put_nbi before a later put; quiet completes it; put_signal after fence",
          "[atomics]["
          "ordering]") {
  for (int n : {2, 3}) {
    CAPTURE(n, symm_test::seed());
    REQUIRE_NOTHROW(on_pes(n, [](symm::world& world) {
      const int me = world.my_pe(), n_pes = world.n_pes();
      const int right = (me + 1) % n_pes, left = (me + n_pes - 1) % n_pes;
      constexpr std::size_t max = std::size_t{1} << 19;
      symm::array<std::uint32_t> buf(world, 2 * max);
      symm::scalar<std::uint32_t> flag(world), ack(world);
      symm::signal ready(world);
      flag.local() = 0;
      ack.local() = 0;
      world.barrier();
      auto sizes = rng_for(me, 70), their_sizes = rng_for(left, 70);
      std::vector<std::uint32_t> out(2 * max);
      for (std::uint32_t round = 1; round <= 60; ++round) {
        symm::wait_until(ack, symm::cmp::ge, round - 1);
        std::size_t size = random_size(sizes, max);
        for (std::size_t i = 0; i < 2 * size; ++i)
          out[i] = payload(me, round, i);
        auto first = std::span<const std::uint32_t>(out.data(), size);
        auto second = std::span<const std::uint32_t>(out.data() + size, size);
        switch (round % 3) {
          case 0: { // put_nbi, fence, p of the flag: the flag must not overtake the data
            auto f = symm::put_nbi(symm::remote(buf, right).first(2 * size), std::span(out.data(), 2 * size));
            symm::fence();
            symm::remote(flag, right) = round;
            break;
          }
          case 1: { // put_nbi twice, quiet, then a relaxed atomic store of the flag
            auto f1 = symm::put_nbi(symm::remote(buf, right).first(size), first);
            auto f2 = symm::put_nbi(symm::remote(buf, right).subspan(size, size), second);
            symm::quiet();
            PE_REQUIRE(f1.ready() && f2.ready());
            symm::remote(flag, right).store(round, cuda::memory_order_relaxed);
            break;
          }
          default: { // put_nbi of the first half, fence, put_signal of the second half
            auto f = symm::put_nbi(symm::remote(buf, right).first(size), first);
            symm::fence();
            symm::put_signal(symm::remote(buf, right).subspan(size, size), second, symm::remote(ready, right), round,
                             symm::signal_op::set);
            break;
          }
        }
        std::size_t expected = random_size(their_sizes, max);
        if (round % 3 == 2) {
          PE_REQUIRE_EQ(symm::signal_wait_until(ready, symm::cmp::eq, round), std::uint64_t{round});
        } else {
          symm::wait_until(flag, symm::cmp::eq, round);
        }
        for (std::size_t i = 2 * expected; i-- > 0;) {
          if (buf.local()[i] != payload(left, round, i)) {
            throw std::runtime_error(
                fmt::format("PE {}: round {} (case {}): element {} of {} not delivered before the "
                            "flag",
                            me, round, round % 3, i, 2 * expected));
          }
        }
        symm::remote(ack, left).store(round);
      }
      world.barrier();
    }));
  }
}
