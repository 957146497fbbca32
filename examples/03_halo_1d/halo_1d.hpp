// The problem both versions of the 1-D stencil solve, and the serial reference PE 0 checks them against.
#pragma once

#include <cstddef>
#include <vector>

namespace halo_1d {

inline constexpr std::size_t points_per_pe = 256; // interior points of each PE
inline constexpr int iterations = 400;            // even: the result ends in the first buffer
inline constexpr double left_boundary = 1.0;      // fixed values just outside the global domain
inline constexpr double right_boundary = -1.0;

//! Initial value of global point g.
inline double initial(std::size_t g) {
  return static_cast<double>(g % 17) * 0.125;
}

//! The same Jacobi iteration on one array holding the whole domain: what the PEs together must reproduce.
inline std::vector<double> serial(std::size_t points) {
  std::vector<double> u(points + 2), v(points + 2);
  for (std::size_t g = 0; g < points; ++g)
    u[g + 1] = initial(g);
  u[0] = v[0] = left_boundary;
  u[points + 1] = v[points + 1] = right_boundary;
  for (int it = 0; it < iterations; ++it) {
    for (std::size_t i = 1; i <= points; ++i)
      v[i] = 0.5 * (u[i - 1] + u[i + 1]);
    u.swap(v);
  }
  return {u.begin() + 1, u.end() - 1};
}

} // namespace halo_1d
