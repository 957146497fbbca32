// A 1-D Jacobi stencil on the host backend. Each PE owns points_per_pe points plus one halo cell on each side; every
// iteration it computes its new values, puts its two edge values into its neighbours' halo cells, and a barrier
// makes them visible. PE 0 then gets every PE's piece and compares with a serial run of the same iterations.
// Run it with `symmrun -n 4 ./halo_1d`.
#include "halo_1d.hpp"

#include <symm/symm.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

int main() {
  using namespace halo_1d;
  symm::world world({.backend = symm::backend::host});
  const int me = world.my_pe(), n = world.n_pes();
  constexpr std::size_t m = points_per_pe; // local layout: [halo | m interior points | halo]

  // Two buffers: iteration t reads one and writes the other, so a neighbour's put into the buffer being written never
  // lands in cells someone is still reading. One barrier per iteration is then enough.
  symm::array<double> a(world, m + 2), b(world, m + 2);
  for (auto* buf : {&a, &b}) {
    auto u = buf->local();
    u[0] = me == 0 ? left_boundary : 0.0;
    u[m + 1] = me == n - 1 ? right_boundary : 0.0;
  }
  for (std::size_t i = 0; i < m; ++i)
    a.local()[i + 1] = initial(static_cast<std::size_t>(me) * m + i);
  world.barrier(); // every PE has set its own halos: the neighbours' puts below must not be overwritten by that

  // The first halo exchange, on `a`.
  if (me > 0) symm::remote(a, me - 1)[m + 1] = a.local()[1]; // p: my first point into the left's right halo
  if (me < n - 1) symm::remote(a, me + 1)[0] = a.local()[m]; // p: my last point into the right's left halo
  world.barrier();

  symm::array_ref<double> cur = a, next = b; // views: cheap to swap
  for (int it = 0; it < iterations; ++it) {
    auto u = cur.local();
    auto v = next.local();
    for (std::size_t i = 1; i <= m; ++i)
      v[i] = 0.5 * (u[i - 1] + u[i + 1]);
    if (me > 0) symm::remote(next, me - 1)[m + 1] = v[1];
    if (me < n - 1) symm::remote(next, me + 1)[0] = v[m];
    world.barrier(); // every PE's halos of `next` are filled
    std::swap(cur, next);
  }

  int status = 0;
  if (me == 0) {
    std::vector<double> all;
    for (int pe = 0; pe < n; ++pe) {
      std::vector<double> piece = symm::remote(cur, pe).subspan(1, m); // get: PE pe's interior
      all.insert(all.end(), piece.begin(), piece.end());
    }
    auto expected = serial(all.size());
    double max_diff = 0.0;
    for (std::size_t i = 0; i < all.size(); ++i)
      max_diff = std::max(max_diff, std::abs(all[i] - expected[i]));
    if (max_diff <= 1e-12) {
      fmt::print("halo_1d: {} PEs x {} points, {} iterations: matches the serial result (max |diff| = {:.1e})\n", n, m,
                 iterations, max_diff);
    } else {
      fmt::print("halo_1d: differs from the serial result by up to {}\n", max_diff);
      status = 1;
    }
  }
  world.barrier();
  return status;
}
