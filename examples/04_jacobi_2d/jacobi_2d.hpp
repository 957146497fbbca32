// The problem both versions of the 2-D stencil solve: the PE grid, the local layout, and the serial reference.
#pragma once

#include <cuda/std/mdspan>
#include <cuda/std/utility>

#include <cstddef>
#include <vector>

namespace jacobi_2d {

inline constexpr std::size_t rows = 48, cols = 64; // interior points of each PE's block
inline constexpr int iterations = 300;             // even: the result ends in the first buffer
inline constexpr double top_boundary = 1.0;        // fixed value above the global domain; the other edges are 0

//! Where a PE sits in a pr x pc grid of PEs, and who its neighbours are (-1 at the domain's edge).
struct placement {
  int pr = 1, pc = 1; // PE grid: pr rows of pc PEs
  int r = 0, c = 0;   // this PE's row and column in it
  int north = -1, south = -1, west = -1, east = -1;

  placement(int pe, int n_pes) {
    for (int d = 1; d * d <= n_pes; ++d)
      if (n_pes % d == 0) pr = d; // pr <= pc: with 2 PEs, a 1 x 2 grid
    pc = n_pes / pr;
    r = pe / pc;
    c = pe % pc;
    if (r > 0) north = pe - pc;
    if (r < pr - 1) south = pe + pc;
    if (c > 0) west = pe - 1;
    if (c < pc - 1) east = pe + 1;
  }
};

//! Each PE's block: (rows + 2) x (cols + 2) points, its interior and a one-point halo frame, row-major.
using block_extents = cuda::std::extents<int, static_cast<int>(rows) + 2, static_cast<int>(cols) + 2>;
inline constexpr std::size_t block_size = (rows + 2) * (cols + 2);
//! The interior's rows and columns, as symm::submdspan (cuda::std::submdspan) slices them.
inline constexpr cuda::std::pair<int, int> inner_rows{1, static_cast<int>(rows) + 1},
    inner_cols{1, static_cast<int>(cols) + 1};

//! Initial value of global interior point (gi, gj).
constexpr double initial(std::size_t gi, std::size_t gj) {
  return static_cast<double>((gi * 7 + gj * 3) % 11) * 0.1;
}

//! One point's update; the same expression everywhere, so every version rounds alike.
constexpr double update(double n, double s, double w, double e) {
  return 0.25 * (n + s + w + e);
}

//! The same iterations on the whole R x C domain in one array: what the PEs together must reproduce.
inline std::vector<double> serial(std::size_t R, std::size_t C) {
  const std::size_t W = C + 2;
  std::vector<double> u((R + 2) * W, 0.0), v;
  for (std::size_t j = 0; j < W; ++j)
    u[j] = top_boundary;
  for (std::size_t i = 0; i < R; ++i)
    for (std::size_t j = 0; j < C; ++j)
      u[(i + 1) * W + j + 1] = initial(i, j);
  v = u;
  for (int it = 0; it < iterations; ++it) {
    for (std::size_t i = 1; i <= R; ++i)
      for (std::size_t j = 1; j <= C; ++j)
        v[i * W + j] = update(u[(i - 1) * W + j], u[(i + 1) * W + j], u[i * W + j - 1], u[i * W + j + 1]);
    u.swap(v);
  }
  std::vector<double> interior;
  for (std::size_t i = 1; i <= R; ++i) {
    const auto row = u.begin() + static_cast<std::ptrdiff_t>(i * W + 1);
    interior.insert(interior.end(), row, row + static_cast<std::ptrdiff_t>(C));
  }
  return interior;
}

} // namespace jacobi_2d
