// A pipeline round a ring of PEs on the host backend: every PE produces chunks for its right neighbour and consumes
// the chunks of its left neighbour. put_signal delivers a chunk into one of the consumer's landing slots and then
// sets the consumer's `ready` signal to the chunk's number; the consumer waits on that signal, checks the chunk, and
// tells the producer the slot is free again by storing its count into the producer's `consumed` word.
// Run it with `symmrun -n 4 ./pipeline`.
#include "pipeline.hpp"

#include <symm/signal.hpp>
#include <symm/symm.hpp>
#include <symm/wait.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <cstdio>
#include <vector>

int main() {
  using namespace pipeline;
  symm::world world({.backend = symm::backend::host});
  const int me = world.my_pe(), n = world.n_pes();
  const int right = (me + 1) % n, left = (me + n - 1) % n;

  symm::array<std::int64_t> box(world, slots * chunk); // landing slots, written by the left neighbour
  symm::signal ready(world);                           // how many chunks the left neighbour has delivered (starts 0)
  symm::scalar<std::uint64_t> consumed(world);         // how many of my chunks the right neighbour has used
  symm::remote(consumed, me) = 0;
  world.barrier();

  std::vector<std::int64_t> out(chunk);
  std::uint64_t bad = 0;
  // One loop does both roles, one chunk each per turn: producing everything first would stall once the right
  // neighbour's slots are full, since it would be producing too and nobody would consume.
  for (std::uint64_t k = 0; k < chunks; ++k) {
    // Produce chunk k. Slot k % slots is free once the consumer has used chunk k - slots.
    if (k >= slots) symm::wait_until(consumed, symm::cmp::ge, k - slots + 1);
    for (std::size_t i = 0; i < chunk; ++i)
      out[i] = value(me, k, i);
    symm::put_signal(symm::remote(box, right).subspan((k % slots) * chunk, chunk), out, symm::remote(ready, right),
                     k + 1, symm::signal_op::set); // data first, then the signal: seeing k + 1 means the data is there

    // Consume chunk k from the left.
    symm::signal_wait_until(ready, symm::cmp::ge, k + 1);
    auto in = box.local().subspan((k % slots) * chunk, chunk);
    for (std::size_t i = 0; i < chunk; ++i)
      bad += in[i] == value(left, k, i) ? 0u : 1u;
    symm::remote(consumed, left).store(k + 1, cuda::memory_order_release); // the slot may be overwritten now
  }

  if (bad != 0)
    std::fprintf(stderr, "pipeline: PE %d: %llu values arrived wrong\n", me, static_cast<unsigned long long>(bad));
  symm::array<int> ok(world, static_cast<std::size_t>(n));
  symm::remote(ok, 0)[static_cast<std::size_t>(me)] = bad == 0 ? 1 : 0;
  world.barrier();
  int failures = 0;
  if (me == 0) {
    for (int v : ok.local())
      failures += v == 1 ? 0 : 1;
    if (failures == 0) {
      fmt::print("pipeline: {} PEs, {} chunks of {} values through {} slots per link: every chunk arrived intact\n", n,
                 chunks, chunk, slots);
    } else {
      fmt::print("pipeline: {} of {} PEs received wrong data\n", failures, n);
    }
  }
  world.barrier();
  return bad == 0 && failures == 0 ? 0 : 1;
}
