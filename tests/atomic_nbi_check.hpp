// tests/atomic_nbi_check.hpp: the checks of the nbi atomics and of future<T> (symm/atomic_nbi.hpp), shared by the host
// suite (host backend: each operation is done in its call) and the GPU suite (CUDA backend: each is a kernel, copy or
// stream write left in flight on the world's stream, its value in a pinned word the future owns). Only symm calls that
// work on every backend, so that one body checks both.
#pragma once

#include <symm/symm.hpp>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "pe_check.hpp"

namespace symm_test {

//! Every PE issues `per_pe` fetch_add_nbi on PE 0's counter before it takes any value, and beside each an add_nbi
//! whose future it drops (quiet() completes those; on the GPU backends their result words wait for the stream before
//! reuse). Each old value is taken exactly once, and both counters end exact. Two rounds, so that the second reuses the
//! words the first dropped.
inline void check_fetch_add_nbi(symm::world& world, int per_pe) {
  const int me = world.my_pe(), n_pes = world.n_pes();
  const auto share = static_cast<std::size_t>(per_pe);
  symm::scalar<std::uint64_t> counter(world);
  symm::scalar<std::uint32_t> dropped(world);
  symm::array<std::uint64_t> olds(world, share * static_cast<std::size_t>(n_pes));
  for (int round = 0; round < 2; ++round) {
    if (me == 0) symm::remote(counter, 0).store(0);
    if (me == n_pes - 1) symm::remote(dropped, me).store(0);
    world.barrier();
    std::vector<symm::future<std::uint64_t>> tickets;
    tickets.reserve(share);
    for (int i = 0; i < per_pe; ++i) {
      tickets.push_back(symm::fetch_add_nbi(symm::remote(counter, 0), std::uint64_t{1}));
      (void) symm::add_nbi(symm::remote(dropped, n_pes - 1), std::uint32_t{1}); // dropped at once
    }
    std::vector<std::uint64_t> seen;
    seen.reserve(share);
    for (auto& ticket : tickets) {
      PE_REQUIRE(ticket.valid());
      seen.push_back(ticket.get());
      PE_REQUIRE(!ticket.valid()); // get() takes the value
    }
    // One PE's atomics run in the order it issued them, so its old values increase.
    PE_REQUIRE(std::is_sorted(seen.begin(), seen.end()) && std::adjacent_find(seen.begin(), seen.end()) == seen.end());
    symm::remote(olds, 0).subspan(static_cast<std::size_t>(me) * share, share) = seen;
    symm::quiet(); // completes the dropped add_nbi
    world.barrier();
    const std::uint64_t total = share * static_cast<std::uint64_t>(n_pes);
    if (me == 0) {
      std::vector<std::uint64_t> all = symm::remote(olds, 0);
      std::sort(all.begin(), all.end());
      for (std::uint64_t i = 0; i < total; ++i) {
        if (all[i] != i) PE_REQUIRE_EQ(all[i], i); // every old value exactly once: none lost, none twice
      }
      PE_REQUIRE_EQ(symm::remote(counter, 0).load(), total);
    }
    if (me == n_pes - 1) PE_REQUIRE_EQ(symm::remote(dropped, me).load(), static_cast<std::uint32_t>(total));
    world.barrier();
  }
}

//! Every nbi form on one element of type T (this PE's own cell, on its right neighbour), in a sequence whose every
//! returned value a sequential model predicts.
template <class T>
void check_atomic_nbi_model(symm::world& world) {
  const int me = world.my_pe(), n_pes = world.n_pes();
  symm::array<T> cells(world, static_cast<std::size_t>(n_pes));
  const auto cell = symm::remote(cells, (me + 1) % n_pes)[static_cast<std::size_t>(me)];
  T model = T(3);
  symm::store_nbi(cell, model).wait();
  const auto expect_old = [&](symm::future<T> f, T next) {
    PE_REQUIRE(f.valid());
    PE_REQUIRE_EQ(f.get(), model);
    model = next;
  };
  expect_old(symm::exchange_nbi(cell, T(10)), T(10));
  expect_old(symm::compare_exchange_nbi(cell, T(10), T(12)), T(12)); // equal: stores
  expect_old(symm::compare_exchange_nbi(cell, T(99), T(7)), model);  // not equal: returns the value, stores nothing
  expect_old(symm::fetch_add_nbi(cell, T(5)), T(17));
  expect_old(symm::fetch_sub_nbi(cell, T(2)), T(15));
  if constexpr (std::is_integral_v<T>) {
    expect_old(symm::fetch_and_nbi(cell, T(0x0d)), T(0x0d)); // 15 & 13
    expect_old(symm::fetch_or_nbi(cell, T(0x30)), T(0x3d));  // 13 | 48
    expect_old(symm::fetch_xor_nbi(cell, T(0x05)), T(0x38)); // 61 ^ 5
    expect_old(symm::fetch_min_nbi(cell, T(40)), T(40));     // min(56, 40)
    expect_old(symm::fetch_max_nbi(cell, T(44)), T(44));     // max(40, 44)
    if constexpr (std::is_signed_v<T>) {                     // signed comparison: -7 < 44
      expect_old(symm::fetch_min_nbi(cell, T(-7)), T(-7));
      expect_old(symm::fetch_max_nbi(cell, T(44)), T(44));
    }
    symm::bit_or_nbi(cell, T(0x01)).wait(), model = T(model | T(0x01));  // 45
    symm::bit_and_nbi(cell, T(0x0f)).wait(), model = T(model & T(0x0f)); // 13
    symm::bit_xor_nbi(cell, T(0x02)).wait(), model = T(model ^ T(0x02)); // 15
  }
  symm::add_nbi(cell, T(6)).wait(), model = T(model + T(6));
  symm::sub_nbi(cell, T(1)).wait(), model = T(model - T(1));
  PE_REQUIRE_EQ(symm::load_nbi(cell).get(), model);
  PE_REQUIRE_EQ(symm::get_nbi(cell).get(), model); // the plain g, not an atomic
  PE_REQUIRE_EQ(cell.load(), model);               // the blocking twin agrees
  world.barrier();                                 // the neighbour's cells outlive every PE's use of them
}

//! future<T>'s own rules: get() takes the value once; an empty future's get() is an error; wait() keeps the value;
//! a moved-from future is empty.
inline void check_value_future_rules(symm::world& world) {
  const int me = world.my_pe();
  symm::scalar<long> x(world);
  symm::remote(x, me).store(41L + me);
  world.barrier();
  symm::future<long> empty;
  PE_REQUIRE(!empty.valid() && empty.ready());
  PE_REQUIRE_ERROR((void) empty.get(), symm::errc::invalid_argument, "empty future");
  symm::future<long> f = symm::get_nbi(symm::remote(x, me));
  f.wait();
  PE_REQUIRE(f.valid() && f.ready());
  symm::future<long> g = std::move(f);
  PE_REQUIRE(!f.valid() && g.valid()); // NOLINT(bugprone-use-after-move): what a move leaves is the point
  PE_REQUIRE_EQ(g.get(), 41L + me);
  PE_REQUIRE_ERROR((void) g.get(), symm::errc::invalid_argument, "taken already");
  world.barrier();
}

} // namespace symm_test
