// A distributed histogram on the host backend. The bins are spread over the PEs; every PE counts its own values by
// an atomic fetch_add on the PE that owns the value's bin. PE 0 then gets every PE's bins and compares with a serial
// count. Run it with `symmrun -n 4 ./histogram`.
#include "histogram.hpp"

#include <symm/atomic.hpp>
#include <symm/symm.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

int main() {
  using namespace histogram;
  symm::world world({.backend = symm::backend::host});
  const int me = world.my_pe(), n = world.n_pes();
  const std::size_t per_pe = bins_per_pe(n);

  symm::array<std::uint64_t> hist(world, per_pe); // this PE's share of the bins
  std::fill(hist.local().begin(), hist.local().end(), 0);
  world.barrier(); // every PE has zeroed its bins before anyone adds to them

  std::uint64_t first_hits = 0;
  for (std::size_t i = 0; i < values_per_pe; ++i) {
    const std::size_t bin = bin_of(me, i);
    const int owner = static_cast<int>(bin / per_pe);
    // An atomic read-modify-write on PE `owner`. `symm::remote(hist, owner)[k] += 1` would not compile: it would be a
    // get and a put, and two PEs doing it at once would lose counts. Relaxed order: only the counts matter, and the
    // barrier below orders them before the check.
    const std::uint64_t before = symm::remote(hist, owner)[bin % per_pe].fetch_add(1, cuda::memory_order_relaxed);
    if (before == 0) ++first_hits; // this PE was the first, of all PEs, to hit that bin
  }
  world.barrier();

  symm::array<std::uint64_t> firsts(world, static_cast<std::size_t>(n));
  symm::remote(firsts, 0)[static_cast<std::size_t>(me)] = first_hits;
  world.barrier();

  int status = 0;
  if (me == 0) {
    std::vector<std::uint64_t> all;
    for (int pe = 0; pe < n; ++pe) {
      std::vector<std::uint64_t> mine = symm::remote(hist, pe); // get: PE pe's bins
      all.insert(all.end(), mine.begin(), mine.end());
    }
    all.resize(bins); // the last PE's share may extend past the last bin
    const auto expected = serial(n);
    std::uint64_t total = 0, used = 0, firsts_total = 0;
    for (std::uint64_t c : all)
      total += c, used += c != 0 ? 1 : 0;
    for (std::uint64_t f : firsts.local())
      firsts_total += f;
    // Each used bin was hit first by exactly one fetch_add, which saw 0.
    if (all == expected && firsts_total == used) {
      fmt::print("histogram: {} PEs, {} values into {} bins: matches the serial count ({} bins used)\n", n, total, bins,
                 used);
    } else {
      fmt::print("histogram: differs from the serial count\n");
      status = 1;
    }
  }
  world.barrier();
  return status;
}
