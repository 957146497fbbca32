// One step of an iterative program on the host backend, run `steps` times: a ring halo exchange (put into the right
// neighbour, barrier), an allreduce of a small vector, and a message to the right neighbour with put_signal, which
// the receiver waits for; every PE checks every value it received at every step.
// The GPU twin records this step once as a CUDA graph and replays it. The host backend has no CUDA graphs (its heap is
// host memory and its calls complete on return), so here the same step simply runs eagerly, call by call.
// Run it with `symmrun -n 4 ./graph_step`.
#include "graph_step.hpp"

#include <symm/collectives.hpp>
#include <symm/signal.hpp>
#include <symm/symm.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <cstdio>

int main() {
  using namespace graph_step;
  symm::world world({.backend = symm::backend::host});
  const int me = world.my_pe(), n = world.n_pes();
  const int right = right_of(me, n);

  symm::array<std::uint64_t> field(world, field_count);
  symm::array<std::uint64_t> halo(world, halo_width); // the left neighbour's right edge
  symm::array<std::uint64_t> partial_sums(world, reduce_count), sums(world, reduce_count);
  symm::array<std::uint64_t> inbox(world, message_count); // the left neighbour's message
  symm::signal arrived(world);                            // 1 once the message is in inbox (starts 0)

  std::uint64_t wrong = 0;
  for (std::uint64_t s = 1; s <= steps; ++s) {
    for (std::size_t i = 0; i < field_count; ++i)
      field.local()[i] = value(me, s, i);
    for (std::size_t j = 0; j < reduce_count; ++j)
      partial_sums.local()[j] = partial(me, s, j);

    symm::put(symm::remote(halo, right), field.local().last(halo_width));
    world.barrier(); // every halo has arrived
    symm::allreduce(world.team(), sums, partial_sums, symm::plus{});
    symm::put_signal(symm::remote(inbox, right), field.local().first(message_count), symm::remote(arrived, right), 1,
                     symm::signal_op::set);
    symm::signal_wait_until(arrived, symm::cmp::eq, 1);
    arrived.local() = 0; // as the GPU graph must: it stores the same 1 at every replay

    for (std::size_t i = 0; i < halo_width; ++i)
      wrong += halo.local()[i] == expected_halo(me, n, s, i) ? 0u : 1u;
    for (std::size_t j = 0; j < reduce_count; ++j)
      wrong += sums.local()[j] == expected_sum(n, s, j) ? 0u : 1u;
    for (std::size_t i = 0; i < message_count; ++i)
      wrong += inbox.local()[i] == expected_message(me, n, s, i) ? 0u : 1u;
    world.barrier(); // nobody sends the next step's halo or message before its receiver has checked this one
  }

  if (wrong != 0)
    std::fprintf(stderr, "graph_step: PE %d: %llu values were wrong\n", me, static_cast<unsigned long long>(wrong));
  symm::array<int> ok(world, static_cast<std::size_t>(n));
  symm::remote(ok, 0)[static_cast<std::size_t>(me)] = wrong == 0 ? 1 : 0;
  world.barrier();
  int failures = 0;
  if (me == 0) {
    for (int v : ok.local())
      failures += v == 1 ? 0 : 1;
    if (failures == 0) {
      fmt::print("graph_step: {} PEs, {} steps (halo + barrier + allreduce + put_signal): every step correct\n", n,
                 steps);
    } else {
      fmt::print("graph_step: {} of {} PEs received wrong values\n", failures, n);
    }
  }
  world.barrier();
  return wrong == 0 && failures == 0 ? 0 : 1;
}
