// Put, get, p, g, non-blocking operations and the heap, on the host backend, as processes and as threads.
#include <symm/symm.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <complex>
#include <cstdint>
#include <memory>
#include <ranges>
#include <span>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "../pe_check.hpp"
#include "catch.hpp"

using symm_test::on_pes;
using symm_test::random_values;

namespace {
struct particle {
  particle() = default;
  explicit particle(std::uint64_t r)
      : x(static_cast<double>(r % 1000)), y(static_cast<double>(r >> 40)), z(-1.5), id(static_cast<std::int32_t>(r)) {}
  double x, y, z;
  std::int32_t id;
  bool operator==(const particle&) const = default;
};

//! Each PE puts fresh random data into its right neighbour, then gets its left neighbour's copy back and checks both.
template <class T>
void ring_put_get(symm::world& world, std::size_t count) {
  int me = world.my_pe(), n = world.n_pes();
  int right = (me + 1) % n, left = (me + n - 1) % n;
  symm::array<T> src(world, count), dst(world, count);
  auto mine = random_values<T>(count, static_cast<std::uint64_t>(me) * 7919 + count);
  std::copy(mine.begin(), mine.end(), src.local().begin());
  symm::remote(dst, right) = src.local(); // put
  world.barrier();
  auto expected = random_values<T>(count, static_cast<std::uint64_t>(left) * 7919 + count);
  PE_REQUIRE(std::equal(expected.begin(), expected.end(), dst.local().begin()));
  std::vector<T> back = symm::remote(dst, right); // get: what I put there
  PE_REQUIRE(back == mine);
  std::vector<T> out(count);
  symm::get(out, symm::remote(src, left)); // get into an existing range
  PE_REQUIRE(out == expected);
  world.barrier();
}
} // namespace

TEMPLATE_TEST_CASE("put and get move every element of several types", "[rma]", std::uint8_t, std::int32_t, double,
                   std::complex<float>, particle) {
  for (int n : {1, 2, 3, 4, 8}) {
    CAPTURE(n, symm_test::seed());
    REQUIRE_NOTHROW(on_pes(n, [](symm::world& world) {
      for (std::size_t count : {std::size_t{1}, std::size_t{3}, std::size_t{1000}, std::size_t{4097}}) {
        ring_put_get<TestType>(world, count);
      }
    }));
  }
}

TEST_CASE("put and get of 1 element to 64 MiB", "[rma][large]") {
  CAPTURE(symm_test::seed());
  REQUIRE_NOTHROW(symm::launch(
      2,
      [](symm::world& world) {
        for (std::size_t bytes = 4; bytes <= (std::size_t{64} << 20); bytes *= 8)
          ring_put_get<std::uint32_t>(world, bytes / 4);
        ring_put_get<std::uint32_t>(world, (std::size_t{64} << 20) / 4);
      },
      {.world = {.backend = symm::backend::host, .heap_size = std::size_t{160} << 20}}));
}

TEST_CASE("p and g: single elements, subspans, first and last", "[rma]") {
  REQUIRE_NOTHROW(on_pes(3, [](symm::world& world) {
    int me = world.my_pe(), n = world.n_pes();
    symm::array<std::int64_t> a(world, 100);
    for (std::size_t i = 0; i < 100; ++i)
      a.local()[i] = -1;
    world.barrier();
    int target = (me + 1) % n;
    symm::remote(a, target)[static_cast<std::size_t>(me)] = 1000 + me; // p
    std::array<std::int64_t, 5> five{1, 2, 3, 4, 5};
    symm::remote(a, target).subspan(10 + 5 * static_cast<std::size_t>(me), 5) = five;
    symm::remote(a, target).last(1) = std::array<std::int64_t, 1>{77};
    world.barrier();
    int source = (me + n - 1) % n;
    PE_REQUIRE_EQ(a.local()[static_cast<std::size_t>(source)], 1000 + source);
    std::int64_t g = symm::remote(a, target)[static_cast<std::size_t>(me)]; // g
    PE_REQUIRE_EQ(g, 1000 + me);
    std::vector<std::int64_t> got =
        symm::remote(a, source).subspan(10 + 5 * static_cast<std::size_t>(me == 0 ? n - 1 : me - 1), 5);
    (void) got;
    PE_REQUIRE_EQ(a.local()[10 + 5 * static_cast<std::size_t>(source) + 2], 3);
    PE_REQUIRE_EQ(a.local()[99], 77);
    std::vector<std::int64_t> head = symm::remote(a, me).first(2);
    PE_REQUIRE_EQ(head.size(), 2u);
    auto fixed = symm::remote(a, me).first<4>();
    static_assert(decltype(fixed)::extent == 4);
    PE_REQUIRE_EQ(fixed.size(), 4u);
    // Untouched elements stay untouched.
    PE_REQUIRE_EQ(a.local()[50], -1);
    world.barrier();
  }));
}

TEST_CASE("static extents and scalars", "[rma]") {
  REQUIRE_NOTHROW(on_pes(2, [](symm::world& world) {
    int other = 1 - world.my_pe();
    symm::array<float, 8> fixed(world);
    symm::scalar<std::uint64_t> counter(world);
    std::array<float, 8> values{};
    for (int i = 0; i < 8; ++i)
      values[static_cast<std::size_t>(i)] = static_cast<float>(world.my_pe() * 10 + i);
    symm::remote(fixed, other) = values;
    symm::remote(counter, other) = std::uint64_t{42} + static_cast<std::uint64_t>(world.my_pe());
    world.barrier();
    PE_REQUIRE_EQ(fixed.local()[7], static_cast<float>(other * 10 + 7));
    PE_REQUIRE_EQ(counter.local(), std::uint64_t{42} + static_cast<std::uint64_t>(other));
    std::uint64_t g = symm::remote(counter, other);
    PE_REQUIRE_EQ(g, std::uint64_t{42} + static_cast<std::uint64_t>(world.my_pe()));
    const auto& read_only = fixed;
    std::vector<float> got = symm::remote(read_only, other);
    PE_REQUIRE(std::equal(got.begin(), got.end(), values.begin()));
    world.barrier();
  }));
}

TEST_CASE("subarray and array_cast are symmetric views of part of an array", "[rma]") {
  REQUIRE_NOTHROW(on_pes(2, [](symm::world& world) {
    const int me = world.my_pe(), other = 1 - me;
    symm::array<std::uint32_t> words(world, 64);
    std::fill(words.local().begin(), words.local().end(), 0u);
    world.barrier();
    // Elements 10..13 of the peer's array, through a sub-array: the others stay untouched.
    std::array<std::uint32_t, 4> four{1u, 2u, 3u, 4u};
    symm::remote(words.ref().subarray(10, 4), other) = four;
    // The last 8 bytes as one 64-bit word.
    auto tail = symm::array_cast<std::uint64_t>(words.ref().subarray(62, 2));
    PE_REQUIRE_EQ(tail.size(), 1u);
    symm::remote(tail, other)[0] = std::uint64_t{0x0000000700000009u} + static_cast<std::uint64_t>(me);
    world.barrier();
    for (std::size_t i = 0; i < 62; ++i)
      PE_REQUIRE_EQ(words.local()[i], i >= 10 && i < 14 ? static_cast<std::uint32_t>(i - 9) : 0u);
    PE_REQUIRE_EQ(words.local()[62], 9u + static_cast<std::uint32_t>(other)); // little-endian halves
    PE_REQUIRE_EQ(words.local()[63], 7u);
    PE_REQUIRE_ERROR((void) words.ref().subarray(60, 5), symm::errc::invalid_argument, "subarray(60, 5)",
                     "elements 60 to 65", "64 elements");
    PE_REQUIRE_ERROR((void) symm::array_cast<std::uint64_t>(words.ref().subarray(1, 2)), symm::errc::invalid_argument,
                     "alignment 8");
    world.barrier();
  }));
}

TEST_CASE("put_nbi and get_nbi complete through their futures and through quiet", "[rma][nbi]") {
  CAPTURE(symm_test::seed());
  REQUIRE_NOTHROW(on_pes(4, [](symm::world& world) {
    int me = world.my_pe(), n = world.n_pes();
    const std::size_t count = 1 << 18;
    symm::array<std::uint32_t> dst(world, count * static_cast<std::size_t>(n));
    auto mine = random_values<std::uint32_t>(count, static_cast<std::uint64_t>(me));
    std::vector<symm::future<>> pending;
    for (int p = 0; p < n; ++p) {
      pending.push_back(symm::put_nbi(symm::remote(dst, p).subspan(count * static_cast<std::size_t>(me), count), mine));
    }
    for (auto& f : pending) {
      f.wait();
      PE_REQUIRE(!f.valid());
      PE_REQUIRE(f.ready());
    }
    world.barrier();
    for (int p = 0; p < n; ++p) {
      auto expected = random_values<std::uint32_t>(count, static_cast<std::uint64_t>(p));
      PE_REQUIRE(
          std::equal(expected.begin(), expected.end(), dst.local().begin() + static_cast<std::ptrdiff_t>(count) * p));
    }
    // get_nbi from every PE, completed by quiet() rather than by the futures.
    std::vector<std::vector<std::uint32_t>> got(static_cast<std::size_t>(n), std::vector<std::uint32_t>(count));
    {
      std::vector<symm::future<>> gets;
      for (int p = 0; p < n; ++p) {
        gets.push_back(symm::get_nbi(got[static_cast<std::size_t>(p)],
                                     symm::remote(dst, p).subspan(count * static_cast<std::size_t>(me), count)));
      }
      symm::quiet();
      for (auto& f : gets)
        PE_REQUIRE(f.ready());
    }
    for (int p = 0; p < n; ++p)
      PE_REQUIRE(got[static_cast<std::size_t>(p)] == mine);
    world.barrier(); // every PE's gets are done before anyone overwrites slot 0 below
    // Host backend: a small nbi copy (up to 256 KiB) is made before the call returns; its future is ready at once.
    {
      auto small = symm::put_nbi(symm::remote(dst, (me + 1) % n).first(64), std::span(mine).first(64));
      PE_REQUIRE(small.valid());
      PE_REQUIRE(small.ready());
      std::vector<std::uint32_t> back(64);
      auto got_back = symm::get_nbi(back, symm::remote(dst, (me + 1) % n).first(64));
      PE_REQUIRE(got_back.ready());
      PE_REQUIRE(std::equal(back.begin(), back.end(), mine.begin()));
      got_back.wait();
      PE_REQUIRE(!got_back.valid());
    }
    world.barrier();
    // A dropped future does not wait; the barrier (a quiet, then the meeting) completes its put.
    { auto f = symm::put_nbi(symm::remote(dst, (me + 1) % n).first(count), mine); }
    world.barrier();
    auto from_left = random_values<std::uint32_t>(count, static_cast<std::uint64_t>((me + n - 1) % n));
    PE_REQUIRE(std::equal(from_left.begin(), from_left.end(), dst.local().begin()));
    world.barrier();
  }));
}

namespace {
//! An operation that never completes by itself: whatever waits on it waits until `release`, and says it waited.
class held_completion final : public symm::detail::completion {
public:
  explicit held_completion(std::atomic<int>& waits) : waits_(waits) {}
  bool ready() override { return released_.load(); }
  void wait() override {
    ++waits_;
    released_.wait(false);
  }
  void release() {
    released_ = true;
    released_.notify_all();
  }

private:
  std::atomic<int>& waits_;
  std::atomic<bool> released_{false};
};
} // namespace

TEST_CASE("dropping a future never waits for its operation; wait() does", "[rma][future]") {
  std::atomic<int> waits{0};
  auto held = std::make_shared<held_completion>(waits);
  { symm::future<> dropped(held); } // would hang here if the destructor waited
  {
    symm::future<> assigned_over(held);
    assigned_over = symm::future<>(); // dropping by assignment: no wait either
    CHECK_FALSE(assigned_over.valid());
  }
  CHECK(waits.load() == 0);
  symm::future<> kept(held);
  CHECK_FALSE(kept.ready());
  std::thread releaser([&] {
    while (waits.load() == 0)
      std::this_thread::yield();
    held->release();
  });
  kept.wait(); // returns once released
  releaser.join();
  CHECK(waits.load() == 1);
  CHECK_FALSE(kept.valid());
}

TEST_CASE("when_all: ready when every part is, wait() waits for all and rethrows the first failure", "[rma][future]") {
  std::atomic<int> waits{0};
  auto first = std::make_shared<held_completion>(waits), second = std::make_shared<held_completion>(waits);
  auto both = symm::when_all(symm::future<>(first), symm::future<>(second));
  CHECK(both.valid());
  CHECK_FALSE(both.ready());
  first->release();
  CHECK_FALSE(both.ready()); // one of two
  second->release();
  CHECK(both.ready());
  both.wait();
  CHECK_FALSE(both.valid());
  CHECK(symm::when_all(std::vector<symm::future<>>{}).ready()); // nothing to wait for

  // A failed part: the others are still waited for, then the first failure is rethrown.
  auto failed = std::make_shared<symm::detail::flag_completion>();
  failed->set(std::make_exception_ptr(symm::error(symm::errc::invalid_argument, "the first part failed")));
  auto late = std::make_shared<held_completion>(waits);
  std::vector<symm::future<>> parts;
  parts.emplace_back(failed);
  parts.emplace_back(late);
  auto joined = symm::when_all(std::move(parts));
  std::thread releaser([&] {
    while (waits.load() < 1)
      std::this_thread::yield();
    late->release();
  });
  CHECK_THROWS_WITH(joined.wait(), symm_test::contains_substring("the first part failed"));
  releaser.join();
  CHECK(late->ready()); // it was waited for before the rethrow
}

TEST_CASE("when_all of put_nbi futures to every PE: every put in place after its wait()", "[rma][future]") {
  REQUIRE_NOTHROW(on_pes(3, [](symm::world& world) {
    const int me = world.my_pe(), n = world.n_pes();
    const std::size_t count = (std::size_t{512} << 10) / sizeof(std::uint32_t); // 512 KiB: the copy thread's
    symm::array<std::uint32_t> dst(world, count * static_cast<std::size_t>(n));
    const std::vector<std::uint32_t> mine(count, 1000u + static_cast<std::uint32_t>(me));
    world.barrier();
    std::vector<symm::future<>> puts;
    for (int p = 0; p < n; ++p)
      puts.push_back(symm::put_nbi(symm::remote(dst, p).subspan(count * static_cast<std::size_t>(me), count), mine));
    symm::when_all(std::move(puts)).wait();
    world.barrier(); // every PE's joined puts are done
    for (int p = 0; p < n; ++p) {
      const auto from = dst.local().subspan(count * static_cast<std::size_t>(p), count);
      PE_REQUIRE(
          std::ranges::all_of(from, [&](std::uint32_t v) { return v == 1000u + static_cast<std::uint32_t>(p); }));
    }
    world.barrier();
  }));
}

TEST_CASE("a dropped host put_nbi of a copy-thread size completes by quiet()", "[rma][future]") {
  REQUIRE_NOTHROW(on_pes(2, [](symm::world& world) {
    const int me = world.my_pe(), peer = 1 - me;
    const std::size_t count = (std::size_t{1} << 20) / sizeof(std::uint64_t); // 1 MiB: the PE's copy thread
    symm::array<std::uint64_t> dst(world, count);
    std::vector<std::uint64_t> mine(count);
    for (std::size_t i = 0; i < count; ++i)
      mine[i] = (static_cast<std::uint64_t>(me) << 32) + i;
    world.barrier();
    (void) symm::put_nbi(symm::remote(dst, peer), mine); // dropped at once
    symm::quiet();
    world.barrier();
    for (std::size_t i = 0; i < count; i += 4099)
      PE_REQUIRE_EQ(dst.local()[i], (static_cast<std::uint64_t>(peer) << 32) + i);
    PE_REQUIRE_EQ(dst.local()[count - 1], (static_cast<std::uint64_t>(peer) << 32) + count - 1);
    world.barrier();
  }));
}

TEST_CASE("allocation is symmetric, and freed blocks are reused", "[heap]") {
  REQUIRE_NOTHROW(on_pes(3, [](symm::world& world) {
    std::size_t before = world.heap_in_use();
    std::size_t first_offset = 0;
    {
      symm::array<char> a(world, 1000);
      symm::array<double> b(world, 3);
      first_offset = a.offset();
      // PE 0 collects everyone's offsets: they must all agree.
      symm::array<std::size_t> offsets(world, 2 * static_cast<std::size_t>(world.n_pes()));
      std::array<std::size_t, 2> mine{a.offset(), b.offset()};
      symm::remote(offsets, 0).subspan(2 * static_cast<std::size_t>(world.my_pe()), 2) = mine;
      world.barrier();
      if (world.my_pe() == 0) {
        for (int p = 0; p < world.n_pes(); ++p) {
          PE_REQUIRE_EQ(offsets.local()[2 * static_cast<std::size_t>(p)], a.offset());
          PE_REQUIRE_EQ(offsets.local()[2 * static_cast<std::size_t>(p) + 1], b.offset());
        }
      }
      PE_REQUIRE(b.offset() % 256 == 0);
      PE_REQUIRE(a.offset() != b.offset());
    }
    PE_REQUIRE_EQ(world.heap_in_use(), before);
    symm::array<char> again(world, 500);
    PE_REQUIRE_EQ(again.offset(), first_offset);
    again.reset();
    PE_REQUIRE_EQ(world.heap_in_use(), before);
    // A moved-from array owns nothing; the moved-to one frees once.
    symm::array<int> moved_from(world, 10);
    symm::array<int> moved_to(std::move(moved_from));
    PE_REQUIRE_EQ(moved_to.size(), 10u);
  }));
}

TEST_CASE("array_options: zeroed arrays read 0 over a block written before, and alignment holds on every PE",
          "[heap][options]") {
  REQUIRE_NOTHROW(on_pes(3, [](symm::world& world) {
    const int me = world.my_pe(), n = world.n_pes();
    const auto all_zero = [](auto span) {
      return std::all_of(span.begin(), span.end(), [](auto v) { return v == 0; });
    };
    std::size_t offset = 0;
    {
      symm::array<std::uint32_t> dirty(world, 1000);
      std::fill(dirty.local().begin(), dirty.local().end(), 0xdeadbeefu);
      offset = dirty.offset();
      world.barrier();
    }
    symm::array<std::uint32_t> clean(world, 1000, {.zeroed = true});
    PE_REQUIRE_EQ(clean.offset(), offset); // the block just written non-zero
    PE_REQUIRE(all_zero(clean.local()));
    std::fill(clean.local().begin(), clean.local().end(), 0xdeadbeefu);
    world.barrier();
    clean.reset();
    // No PE returns before every PE has zeroed its part: a put made at once is not overwritten by the target's zeroing.
    symm::array<std::uint32_t> raced(world, 1000, {.zeroed = true});
    PE_REQUIRE_EQ(raced.offset(), offset);
    symm::remote(raced, (me + 1) % n)[999] = static_cast<std::uint32_t>(me + 1);
    world.barrier();
    PE_REQUIRE_EQ(raced.local()[999], static_cast<std::uint32_t>((me + n - 1) % n + 1));
    PE_REQUIRE(all_zero(raced.local().first(999)));
    raced.reset();
    {
      symm::array<std::uint64_t, 64> dirty(world);
      std::fill(dirty.local().begin(), dirty.local().end(), ~std::uint64_t{0});
      world.barrier();
    }
    symm::array<std::uint64_t, 64> flags(world, {.zeroed = true}); // static extent
    PE_REQUIRE(all_zero(flags.local()));
    flags.reset();
    {
      symm::scalar<double> dirty(world);
      dirty.local() = 3.5;
      world.barrier();
    }
    symm::scalar<double> sum(world, {.zeroed = true});
    PE_REQUIRE_EQ(sum.local(), 0.0);

    // An odd-sized array first, so that an aligned one cannot land on the alignment by luck.
    symm::array<char> odd(world, 300);
    for (std::size_t alignment : {std::size_t{256}, std::size_t{512}, std::size_t{1024}, std::size_t{4096}}) {
      symm::array<char> a(world, 3, {.alignment = alignment});
      PE_REQUIRE_EQ(a.offset() % alignment, 0u);
      PE_REQUIRE_EQ(reinterpret_cast<std::uintptr_t>(a.local().data()) % alignment, 0u);
      for (int pe = 0; pe < n; ++pe)
        PE_REQUIRE_EQ(reinterpret_cast<std::uintptr_t>(symm::remote(a, pe).data()) % alignment, 0u);
    }
    // Below the heap's 256 bytes and the element's own alignment, those apply.
    symm::array<std::uint64_t> small(world, 5, {.zeroed = true, .alignment = 8});
    PE_REQUIRE_EQ(small.offset() % 256, 0u);
    PE_REQUIRE(all_zero(small.local()));
    world.barrier();
  }));
}

TEST_CASE("remote(x, pe).data(): the peer's elements as a plain pointer where this PE maps its heap", "[rma][ptr]") {
  REQUIRE_NOTHROW(on_pes(3, [](symm::world& world) {
    const int me = world.my_pe(), n = world.n_pes();
    symm::array<int> a(world, 8, {.zeroed = true});
    for (int pe = 0; pe < n; ++pe) {
      int* p = symm::remote(a, pe).data();
      PE_REQUIRE(p != nullptr); // the host backend maps every PE's heap
      PE_REQUIRE(p == symm::remote(a, pe).address());
      PE_REQUIRE(symm::remote(a, pe).subspan(3).data() == p + 3);
    }
    PE_REQUIRE(symm::remote(a, me).data() == a.local().data());
    static_assert(std::is_same_v<decltype(symm::remote(std::as_const(a), 0).data()), const int*>,
                  "constness goes through the element type");
    // Plain stores through it land in the peer's array.
    symm::remote(a, (me + 1) % n).data()[me] = me + 10;
    world.barrier();
    const int left = (me + n - 1) % n;
    PE_REQUIRE_EQ(a.local()[static_cast<std::size_t>(left)], left + 10);
    PE_REQUIRE_EQ(symm::remote(a, left).data()[me], 0); // PE left's element me: nobody wrote it (3 PEs)
    world.barrier();
  }));
}

TEST_CASE("local() converts to std::span, straight from the call", "[rma][std]") {
  // cuda::std::span is a borrowed range to std::ranges too (symm/concepts.hpp), so a std::span takes the temporary.
  STATIC_REQUIRE(std::ranges::borrowed_range<cuda::std::span<int>>);
  STATIC_REQUIRE(std::is_convertible_v<cuda::std::span<int>, std::span<int>>);
  STATIC_REQUIRE(std::is_convertible_v<cuda::std::span<int>, std::span<const int>>);
  STATIC_REQUIRE_FALSE(std::is_convertible_v<cuda::std::span<const int>, std::span<int>>);
  REQUIRE_NOTHROW(on_pes(2, [](symm::world& world) {
    const int me = world.my_pe(), right = (me + 1) % world.n_pes();
    symm::array<int> a(world, 8);
    std::span<int> mine = a.local();
    std::span<int> through_ref = a.ref().local();
    PE_REQUIRE(mine.data() == a.local().data() && mine.size() == 8 && through_ref.data() == mine.data());
    std::fill(mine.begin(), mine.end(), me + 10);
    world.barrier();
    std::vector<int> got = symm::remote(a, right);
    PE_REQUIRE(std::ranges::all_of(got, [&](int v) { return v == right + 10; }));
    world.barrier();
  }));
}
