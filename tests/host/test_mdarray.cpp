// Symmetric multi-dimensional arrays (symm::mdarray, pe_mdspan) and strided put/get of rows, columns, tiles and
// faces, on the host backend, as processes and as threads.
#include <symm/symm.hpp>

#include <cuda/std/mdspan>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "../pe_check.hpp"
#include "catch.hpp"

using symm_test::on_pes;

namespace {
namespace md = cuda::std;
using grid2 = symm::mdarray<int, md::dextents<int, 2>>;

//! A value that names its PE and position, so that a misplaced element says where it came from.
int tag(int pe, int i, int j, int k = 0) {
  return pe * 1000000 + i * 10000 + j * 100 + k;
}

void fill(const md::mdspan<int, md::dextents<int, 2>>& g, int pe) {
  for (int i = 0; i < g.extent(0); ++i)
    for (int j = 0; j < g.extent(1); ++j)
      g(i, j) = tag(pe, i, j);
}
} // namespace

TEST_CASE("mdarray: local() is an mdspan of the extents, remote(grid, pe)(i, j) a pe_ref", "[mdarray]") {
  for (int n : {1, 2, 3}) {
    REQUIRE_NOTHROW(on_pes(n, [](symm::world& world) {
      const int me = world.my_pe(), right = (me + 1) % world.n_pes(), left = (me + world.n_pes() - 1) % world.n_pes();
      grid2 grid(world, 5, 7);
      PE_REQUIRE(grid.extent(0) == 5 && grid.extent(1) == 7 && grid.size() == 35);
      auto mine = grid.local();
      PE_REQUIRE(mine.extent(0) == 5 && mine.extent(1) == 7 && mine.stride(0) == 7);
      fill(mine, me);
      world.barrier();
      auto peer = symm::remote(grid, right);
      static_assert(std::is_same_v<decltype(peer), symm::pe_mdspan<int, md::dextents<int, 2>>>);
      static_assert(std::is_same_v<decltype(peer(1, 2)), symm::pe_ref<int>>);
      PE_REQUIRE_EQ(int(peer(4, 6)), tag(right, 4, 6)); // a get of one element
      world.barrier();
      peer(2, 3) = -me; // a put of one element
      world.barrier();
      PE_REQUIRE_EQ(mine(2, 3), -left);
      PE_REQUIRE_EQ(mine(2, 4), tag(me, 2, 4));
      // The view kernels take has the same shape and reaches the same elements.
      symm::mdarray_ref<const int, md::dextents<int, 2>> view = grid;
      PE_REQUIRE_EQ(int(symm::remote(view, right)(0, 1)), tag(right, 0, 1));
      PE_REQUIRE(view.local().data_handle() == mine.data_handle());
      world.barrier();
    }));
  }
}

TEST_CASE("mdarray: strided put and get of a row, a column and a tile of another PE's copy", "[mdarray][rma]") {
  REQUIRE_NOTHROW(on_pes(3, [](symm::world& world) {
    const int me = world.my_pe(), n = world.n_pes(), right = (me + 1) % n, left = (me + n - 1) % n;
    grid2 grid(world, 6, 9);
    fill(grid.local(), me);
    world.barrier();

    // Column 0 of my right neighbour gets my column 7 (the halo of a Jacobi sweep): strided on both sides.
    auto their_first = md::submdspan(symm::remote(grid, right), md::full_extent, 0);
    symm::put(their_first, md::submdspan(grid.local(), md::full_extent, 7));
    world.barrier();
    for (int i = 0; i < 6; ++i)
      PE_REQUIRE_EQ(grid.local()(i, 0), tag(left, i, 7));
    PE_REQUIRE_EQ(grid.local()(0, 1), tag(me, 0, 1));
    world.barrier(); // read before the next put lands

    // A row, contiguous on both sides, from a std::vector viewed as an mdspan.
    std::vector<int> row(9);
    for (int j = 0; j < 9; ++j)
      row[static_cast<std::size_t>(j)] = -(me * 100 + j);
    symm::put(md::submdspan(symm::remote(grid, right), 5, md::full_extent),
              md::mdspan<const int, md::dextents<int, 1>>(row.data(), 9));
    world.barrier();
    for (int j = 0; j < 9; ++j)
      PE_REQUIRE_EQ(grid.local()(5, j), -(left * 100 + j));

    // A 3 x 4 tile of the left neighbour, got into a column-major buffer (a transposing layout on the local side).
    std::vector<int> tile(12);
    md::mdspan<int, md::dextents<int, 2>, md::layout_left> tile_view(tile.data(), 3, 4);
    symm::get(tile_view, md::submdspan(symm::remote(grid, left), md::pair{1, 4}, md::pair{2, 6}));
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 4; ++j)
        PE_REQUIRE_EQ(tile[static_cast<std::size_t>(i + 3 * j)], tag(left, 1 + i, 2 + j));

    // A column got into a contiguous vector.
    std::vector<int> column(6);
    symm::get(md::mdspan<int, md::dextents<int, 1>>(column.data(), 6),
              md::submdspan(symm::remote(grid, left), md::full_extent, 8));
    for (int i = 0; i < 6; ++i)
      PE_REQUIRE_EQ(column[static_cast<std::size_t>(i)], i == 5 ? -(((left + n - 1) % n) * 100 + 8) : tag(left, i, 8));
    world.barrier();
  }));
}

TEST_CASE("mdarray: layout_left, three dimensions, static extents and rank 0", "[mdarray][rma]") {
  REQUIRE_NOTHROW(on_pes(2, [](symm::world& world) {
    const int me = world.my_pe(), other = 1 - me;
    // Column-major: column j of the remote copy is contiguous.
    symm::mdarray<double, md::dextents<long, 2>, md::layout_left> cm(world, 4L, 3L);
    PE_REQUIRE(cm.local().stride(0) == 1 && cm.local().stride(1) == 4);
    std::vector<double> col{1.5, 2.5, 3.5, 4.5 + me};
    symm::put(md::submdspan(symm::remote(cm, other), md::full_extent, 2),
              md::mdspan<const double, md::dextents<long, 1>>(col.data(), 4L));
    world.barrier();
    PE_REQUIRE(cm.local()(3, 2) == 4.5 + other && cm.local()(0, 2) == 1.5);

    // A face of a cube: the plane k = 1 of 4 x 5 x 3, strided in its last dimension on the remote side.
    symm::mdarray<int, md::dextents<int, 3>> cube(world, md::dextents<int, 3>(4, 5, 3), {.zeroed = true});
    std::vector<int> face(20);
    for (std::size_t v = 0; v < face.size(); ++v)
      face[v] = me * 100 + static_cast<int>(v);
    symm::put(md::submdspan(symm::remote(cube, other), md::full_extent, md::full_extent, 1),
              md::mdspan<const int, md::dextents<int, 2>>(face.data(), 4, 5));
    world.barrier();
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 5; ++j) {
        PE_REQUIRE_EQ(cube.local()(i, j, 1), other * 100 + i * 5 + j);
        PE_REQUIRE_EQ(cube.local()(i, j, 0), 0);
        PE_REQUIRE_EQ(cube.local()(i, j, 2), 0);
      }

    // Static extents, and a tile of them.
    symm::mdarray<int, md::extents<int, 4, 4>> fixed(world);
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j)
        fixed.local()(i, j) = tag(me, i, j);
    world.barrier();
    int corner[4];
    symm::get(md::mdspan<int, md::extents<int, 2, 2>>(corner),
              md::submdspan(symm::remote(fixed, other), md::pair{2, 4}, md::pair{2, 4}));
    PE_REQUIRE(corner[0] == tag(other, 2, 2) && corner[3] == tag(other, 3, 3));

    // Rank 0: one element.
    symm::mdarray<int, md::extents<int>> one(world);
    int seven = 7 + me;
    symm::put(symm::remote(one, other), md::mdspan<const int, md::extents<int>>(&seven));
    world.barrier();
    PE_REQUIRE_EQ(one.local()(), 7 + other);
    world.barrier();
  }));
}

TEST_CASE("mdarray: bad extents, shapes that differ between PEs or between the sides of a put", "[mdarray][errors]") {
  REQUIRE_NOTHROW(on_pes(3, [](symm::world& world) {
    const int me = world.my_pe();
    const std::string pe = fmt::format("PE {}:", me);
    PE_REQUIRE_ERROR(grid2(world, 4, -2), symm::errc::invalid_argument, pe, "dynamic extent #1 is -2");
    PE_REQUIRE_ERROR((symm::mdarray<int, md::dextents<int, 2>>(world, 5000000000LL, 3)), symm::errc::invalid_argument,
                     pe, "dynamic extent #0 is 5000000000, but an extent is at least 0 and at most 2147483647");
    PE_REQUIRE_ERROR(grid2(world, 70000, 70000), symm::errc::invalid_argument, pe,
                     "symm::mdarray of extents (70000, 70000) of 4-byte elements", "more than the extents' index type");
    // Refused before any agreement; then a transposed shape of the same size: every PE's extents are named.
    PE_REQUIRE_ERROR(grid2(world, me == 1 ? 6 : 4, me == 1 ? 4 : 6), symm::errc::allocation_mismatch,
                     "PE 0: collective operation #1: a symm::mdarray of rank 2 (layout_right) with extent 0 = 4, "
                     "extent 1 = 6\n",
                     "PE 1: collective operation #1: a symm::mdarray of rank 2 (layout_right) with extent 0 = 6, "
                     "extent 1 = 4\n");
    // The heap and the agreement are still in step on every PE.
    grid2 grid(world, 4, 6);
    std::vector<int> five(5);
    const auto right = (me + 1) % world.n_pes();
    PE_REQUIRE_ERROR(
        symm::put(md::submdspan(symm::remote(grid, right), 1, md::full_extent),
                  md::mdspan<const int, md::dextents<int, 1>>(five.data(), 5)),
        symm::errc::extent_mismatch,
        fmt::format("symm::put of a multi-dimensional view: the remote side on PE {} has extents (6) but "
                    "the local side has (5)",
                    right));
    PE_REQUIRE_ERROR(symm::get(md::mdspan<int, md::dextents<int, 2>>(five.data(), 1, 5),
                               md::submdspan(symm::remote(grid, right), md::pair{0, 2}, md::pair{0, 2})),
                     symm::errc::extent_mismatch, "has extents (2, 2) but the local side has (1, 5)");
    PE_REQUIRE_ERROR((void) symm::remote(grid, 3), symm::errc::invalid_pe, "3");
    world.barrier();
  }));
}

TEST_CASE("strided copies split into 2-D copies whose pitches cudaMemcpy2D accepts", "[mdarray][rma]") {
  struct call {
    std::size_t dst_pitch, src_pitch, width, rows;
  };
  std::vector<call> calls;
  const auto copy_2d =
      [&](void* d, std::size_t dp, const void* s, std::size_t sp, std::size_t width, std::size_t rows) {
        calls.push_back({dp, sp, width, rows});
        for (std::size_t r = 0; r < rows; ++r)
          std::memmove(static_cast<std::byte*>(d) + r * dp, static_cast<const std::byte*>(s) + r * sp, width);
      };
  std::vector<int> grid(6 * 9), out(6 * 9, -1);
  for (std::size_t v = 0; v < grid.size(); ++v)
    grid[v] = static_cast<int>(v);
  md::mdspan<int, md::dextents<int, 2>> g(grid.data(), 6, 9);

  // A row as a 1 x 9 view into a column-major 1 x 9 buffer (strides (9, 1) against (1, 1)): one row, pitches = width.
  md::mdspan<int, md::dextents<int, 2>, md::layout_left> row_cm(out.data(), 1, 9);
  auto row = md::submdspan(g, md::pair{2, 3}, md::full_extent);
  CHECK(symm::detail::host_copy_md(out.data(), row_cm.mapping(), grid.data() + 18, row.mapping(), copy_2d) == 1);
  CHECK((calls.back().width == 36 && calls.back().rows == 1 && calls.back().dst_pitch == 36 &&
         calls.back().src_pitch == 36));
  CHECK(out[0] == 18);
  CHECK(out[8] == 26);

  // Whole arrays in the same layout, column-major included: one flat copy.
  calls.clear();
  md::mdspan<int, md::dextents<int, 2>, md::layout_left> a(grid.data(), 9, 6), b(out.data(), 9, 6);
  CHECK(symm::detail::host_copy_md(out.data(), b.mapping(), grid.data(), a.mapping(), copy_2d) == 1);
  CHECK((calls.size() == 1 && calls[0].width == grid.size() * sizeof(int) && calls[0].rows == 1));
  CHECK(out == grid);

  // A column: rows of one element, the source's pitch a row of the grid.
  calls.clear();
  std::fill(out.begin(), out.end(), -1);
  auto column = md::submdspan(g, md::full_extent, 4);
  md::mdspan<int, md::dextents<int, 1>> dense(out.data(), 6);
  CHECK(symm::detail::host_copy_md(out.data(), dense.mapping(), grid.data() + 4, column.mapping(), copy_2d) == 1);
  CHECK((calls[0].width == 4 && calls[0].rows == 6 && calls[0].src_pitch == 36 && calls[0].dst_pitch == 4));
  CHECK((out[0] == 4 && out[5] == 49));

  // Rows that overlap in the destination (a layout_stride whose row stride is shorter than a row): element copies.
  calls.clear();
  md::layout_stride::mapping<md::dextents<int, 2>> overlapping(md::dextents<int, 2>(2, 4), md::array<int, 2>{2, 1});
  auto tile = md::submdspan(g, md::pair{0, 2}, md::pair{0, 4});
  (void) symm::detail::host_copy_md(out.data(), overlapping, grid.data(), tile.mapping(), copy_2d);
  for (const call& c : calls)
    CHECK((c.dst_pitch >= c.width && c.src_pitch >= c.width));
}
