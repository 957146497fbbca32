// Mixture-of-experts dispatch and combine on the host backend. Every PE routes each of its tokens to two of the eight
// experts, which are spread over the PEs; symm::alltoallv sends every (token, expert) row to the PE of its expert
// (with a side row saying which token and which expert), each PE applies its experts to what it received, a second
// alltoallv sends the results back the way they came, and each PE sums them with the router's weights into its
// output tokens, which must match a serial reference exactly. Run it with `symmrun -n 4 ./moe_dispatch`.
#include "moe_dispatch.hpp"

#include <symm/alltoallv.hpp>
#include <symm/symm.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <cstdio>
#include <vector>

int main() {
  using namespace moe_dispatch;
  symm::world world({.backend = symm::backend::host});
  const int me = world.my_pe(), n = world.n_pes();
  if (!pes_fit(n)) {
    if (me == 0) fmt::print(stderr, "moe_dispatch: run it on 1, 2, 4 or 8 PEs ({} experts spread evenly)\n", experts);
    return 2;
  }
  const auto n_pes = static_cast<std::size_t>(n);
  // Capacities for the worst case: every PE routes all its pairs to this PE's experts.
  const std::size_t capacity = n_pes * pairs;

  // Dispatch: this PE's rows sorted by target PE, their (token, expert), and how many go to each PE.
  symm::array<float> send_rows(world, pairs * hidden);
  symm::array<std::uint32_t> send_meta(world, pairs * meta_length);
  symm::array<std::uint64_t> send_counts(world, n_pes);
  // What arrives: rows from every PE, contiguous by source PE.
  symm::array<float> recv_rows(world, capacity * hidden);
  symm::array<std::uint32_t> recv_meta(world, capacity * meta_length);
  std::vector<std::uint64_t> recv_counts(n_pes), recv_meta_counts(n_pes);
  // Combine: the experts' results, sent back with the received counts; they return in the order they left.
  symm::array<float> expert_rows(world, capacity * hidden);
  symm::array<std::uint64_t> back_counts(world, n_pes);
  symm::array<float> returned_rows(world, pairs * hidden);
  std::vector<std::uint64_t> returned_counts(n_pes);

  // 1. Route: the pairs (token t, slot s), pair t * top_k + s, counted by target PE and placed by a stable counting
  // sort; position[pair] is the pair's row in send_rows, where its result comes back after the combine.
  std::vector<std::size_t> position(pairs), next(n_pes, 0);
  for (std::size_t k = 0; k < n_pes; ++k)
    send_counts.local()[k] = 0;
  for (std::size_t t = 0; t < tokens; ++t)
    for (int s = 0; s < top_k; ++s)
      ++send_counts.local()[static_cast<std::size_t>(pe_of_expert(expert_of(me, t, s), n))];
  for (std::size_t k = 1; k < n_pes; ++k)
    next[k] = next[k - 1] + send_counts.local()[k - 1];
  for (std::size_t t = 0; t < tokens; ++t) {
    for (int s = 0; s < top_k; ++s) {
      const int e = expert_of(me, t, s);
      const std::size_t row = next[static_cast<std::size_t>(pe_of_expert(e, n))]++;
      position[t * top_k + static_cast<std::size_t>(s)] = row;
      for (std::size_t h = 0; h < hidden; ++h)
        send_rows.local()[row * hidden + h] = input(me, t, h);
      send_meta.local()[row * meta_length] = static_cast<std::uint32_t>(t);
      send_meta.local()[row * meta_length + 1] = static_cast<std::uint32_t>(e);
    }
  }

  // 2. Dispatch: the rows, then their (token, expert) with the same counts. Complete on return.
  const std::size_t received = symm::alltoallv(world.team(), recv_rows, recv_counts, send_rows, send_counts, hidden);
  (void) symm::alltoallv(world.team(), recv_meta, recv_meta_counts, send_meta, send_counts, meta_length);

  // 3. The experts: row i came from the PE whose block of rows holds it, and names its token and expert; check that
  // it is that token and that the expert lives here, then apply the expert.
  std::size_t wrong = 0;
  std::size_t row = 0;
  for (std::size_t from = 0; from < n_pes; ++from) {
    for (std::uint64_t j = 0; j < recv_counts[from]; ++j, ++row) {
      const std::size_t t = recv_meta.local()[row * meta_length];
      const int e = static_cast<int>(recv_meta.local()[row * meta_length + 1]);
      if (pe_of_expert(e, n) != me || t >= tokens) ++wrong;
      for (std::size_t h = 0; h < hidden; ++h) {
        const float x = recv_rows.local()[row * hidden + h];
        if (t < tokens && x != input(static_cast<int>(from), t, h)) ++wrong;
        expert_rows.local()[row * hidden + h] = expert_compute(e, x);
      }
    }
  }
  if (row != received) ++wrong;

  // 4. Combine: back to PE k go exactly the recv_counts[k] rows that came from it, in the order they came.
  for (std::size_t k = 0; k < n_pes; ++k)
    back_counts.local()[k] = recv_counts[k];
  (void) symm::alltoallv(world.team(), returned_rows, returned_counts, expert_rows, back_counts, hidden);
  for (std::size_t k = 0; k < n_pes; ++k)
    wrong += returned_counts[k] == send_counts.local()[k] ? 0u : 1u;

  // 5. Each token's output: its experts' results weighted by the router, checked against the serial reference.
  for (std::size_t t = 0; t < tokens; ++t) {
    for (std::size_t h = 0; h < hidden; ++h) {
      float out = 0.0f;
      for (int s = 0; s < top_k; ++s)
        out += weight_of(s) * returned_rows.local()[position[t * top_k + static_cast<std::size_t>(s)] * hidden + h];
      wrong += out == reference(me, t, h) ? 0u : 1u;
    }
  }

  if (wrong != 0) std::fprintf(stderr, "moe_dispatch: PE %d: %zu values or counts were wrong\n", me, wrong);
  symm::array<int> ok(world, n_pes);
  symm::remote(ok, 0)[static_cast<std::size_t>(me)] = wrong == 0 ? 1 : 0;
  world.barrier();
  int failures = 0;
  if (me == 0) {
    for (int v : ok.local())
      failures += v == 1 ? 0 : 1;
    if (failures == 0) {
      fmt::print("moe_dispatch: {} PEs, {} tokens each, top-{} of {} experts: dispatch and combine match the serial "
                 "reference\n",
                 n, tokens, top_k, experts);
    } else {
      fmt::print("moe_dispatch: {} of {} PEs got wrong values\n", failures, n);
    }
  }
  world.barrier();
  return wrong == 0 && failures == 0 ? 0 : 1;
}
