// Ring shift on the host backend: every PE puts its block of values into its right neighbour, n_pes times; after
// a full turn every PE must hold its own values again. Run it with `symmrun -n 4 ./ring_shift`.
#include <symm/symm.hpp>

#include <fmt/format.h>

#include <cstdio>
#include <vector>

int main() {
  symm::world world({.backend = symm::backend::host});
  const int me = world.my_pe(), n = world.n_pes();
  const int right = (me + 1) % n;
  constexpr std::size_t count = 1024;

  // Two landing slots, used in turn: a put of step s goes into slot s % 2, so a PE never writes into the slot its
  // neighbour is still reading from step s - 1. That is what lets one barrier per step suffice.
  symm::array<int> slots(world, 2 * count); // collective: the same offset on every PE
  symm::array<int> ok(world, static_cast<std::size_t>(n));

  std::vector<int> mine(count), current(count);
  for (std::size_t i = 0; i < count; ++i)
    mine[i] = me * 100000 + static_cast<int>(i);
  current = mine;

  for (int step = 0; step < n; ++step) {
    std::size_t slot = static_cast<std::size_t>(step % 2) * count;
    symm::remote(slots, right).subspan(slot, count) = current; // put: complete on return
    world.barrier();                                           // ...and visible on `right` after this line
    auto landed = slots.local().subspan(slot, count);          // what the left neighbour put here
    current.assign(landed.begin(), landed.end());
  }

  const bool good = current == mine;
  if (!good)
    std::fprintf(stderr, "ring_shift: PE %d did not get its own values back (element 0 = %d)\n", me, current[0]);
  symm::remote(ok, 0)[static_cast<std::size_t>(me)] = good ? 1 : 0; // p: one element into PE 0's `ok`
  world.barrier();

  int failures = 0;
  if (me == 0) {
    for (int v : ok.local())
      failures += v == 1 ? 0 : 1;
    if (failures == 0) fmt::print("ring_shift: all {} PEs got their own {} values back after {} steps\n", n, count, n);
    else fmt::print("ring_shift: {} of {} PEs got wrong values\n", failures, n);
  }
  return good && failures == 0 ? 0 : 1;
}
