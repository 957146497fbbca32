// An allreduce (sum) of a vector on the host backend, twice: by hand from puts and barriers — a reduce-scatter
// (every PE puts chunk q of its vector into PE q, which sums the n pieces it receives), then an all-gather (every PE
// puts its summed chunk into every PE's result); each PE sends and receives about 2 x count elements, whatever the
// number of PEs — and with one call, symm::allreduce over the world team. Both must give the exact sum.
// Run it with `symmrun -n 4 ./allreduce`.
#include "allreduce.hpp"

#include <symm/collectives.hpp>
#include <symm/symm.hpp>

#include <fmt/format.h>

#include <cstdio>
#include <vector>

int main() {
  using namespace allreduce;
  symm::world world({.backend = symm::backend::host});
  const int me = world.my_pe(), n = world.n_pes();
  const std::size_t c = chunk(n);

  symm::array<double> x(world, count);                                 // this PE's contribution
  symm::array<double> staging(world, static_cast<std::size_t>(n) * c); // slot p: PE p's piece of my chunk
  symm::array<double> result(world, count);                            // the sum, on every PE
  for (std::size_t i = 0; i < count; ++i)
    x.local()[i] = input(me, i);

  // Reduce-scatter, step 1: chunk q of my vector into slot `me` of PE q's staging. Non-blocking: the n puts proceed
  // together, and each future completes when its data is at the target.
  std::vector<symm::future<>> sent;
  for (int q = 0; q < n; ++q) {
    sent.push_back(symm::put_nbi(symm::remote(staging, q).subspan(static_cast<std::size_t>(me) * c, chunk_size(n, q)),
                                 x.local().subspan(chunk_begin(n, q), chunk_size(n, q))));
  }
  for (auto& f : sent)
    f.wait();
  world.barrier(); // every PE's pieces have arrived everywhere

  // Step 2: sum the n pieces of my chunk, in PE order (the same order on every PE and in every run).
  const std::size_t mine = chunk_size(n, me);
  std::vector<double> sum(mine, 0.0);
  for (int p = 0; p < n; ++p)
    for (std::size_t i = 0; i < mine; ++i)
      sum[i] += staging.local()[static_cast<std::size_t>(p) * c + i];

  // All-gather: my summed chunk into every PE's result.
  for (int q = 0; q < n; ++q)
    symm::remote(result, q).subspan(chunk_begin(n, me), mine) = sum;
  world.barrier();

  // The same with one call: collective over the team, complete on return (on every PE, dst holds the sum).
  symm::array<double> by_collective(world, count);
  symm::allreduce(world.team(), by_collective, x, symm::plus{});

  std::size_t wrong = 0;
  for (std::size_t i = 0; i < count; ++i) {
    wrong += result.local()[i] == expected(n, i) ? 0u : 1u;
    wrong += by_collective.local()[i] == expected(n, i) ? 0u : 1u;
  }
  if (wrong != 0) std::fprintf(stderr, "allreduce: PE %d: %zu elements of the sum are wrong\n", me, wrong);
  symm::array<int> ok(world, static_cast<std::size_t>(n));
  symm::remote(ok, 0)[static_cast<std::size_t>(me)] = wrong == 0 ? 1 : 0;
  world.barrier();
  int failures = 0;
  if (me == 0) {
    for (int v : ok.local())
      failures += v == 1 ? 0 : 1;
    if (failures == 0) {
      fmt::print("allreduce: {} PEs, {} doubles: every PE holds the correct sum (by hand and by symm::allreduce)\n", n,
                 count);
    } else {
      fmt::print("allreduce: {} of {} PEs hold a wrong sum\n", failures, n);
    }
  }
  world.barrier();
  return wrong == 0 && failures == 0 ? 0 : 1;
}
