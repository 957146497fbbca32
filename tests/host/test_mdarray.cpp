// Symmetric multi-dimensional arrays (symm::mdarray, pe_mdspan) and strided put/get of rows, columns, tiles and
// faces, on the host backend, as processes and as threads.
#include <symm/symm.hpp>

#include <cuda/std/mdspan>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
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
    auto their_first = symm::submdspan(symm::remote(grid, right), md::full_extent, 0);
    symm::put(their_first, symm::submdspan(grid.local(), md::full_extent, 7));
    world.barrier();
    for (int i = 0; i < 6; ++i)
      PE_REQUIRE_EQ(grid.local()(i, 0), tag(left, i, 7));
    PE_REQUIRE_EQ(grid.local()(0, 1), tag(me, 0, 1));
    world.barrier(); // read before the next put lands

    // A row, contiguous on both sides, from a std::vector viewed as an mdspan.
    std::vector<int> row(9);
    for (int j = 0; j < 9; ++j)
      row[static_cast<std::size_t>(j)] = -(me * 100 + j);
    symm::put(symm::submdspan(symm::remote(grid, right), 5, md::full_extent),
              md::mdspan<const int, md::dextents<int, 1>>(row.data(), 9));
    world.barrier();
    for (int j = 0; j < 9; ++j)
      PE_REQUIRE_EQ(grid.local()(5, j), -(left * 100 + j));

    // A 3 x 4 tile of the left neighbour, got into a column-major buffer (a transposing layout on the local side).
    std::vector<int> tile(12);
    md::mdspan<int, md::dextents<int, 2>, md::layout_left> tile_view(tile.data(), 3, 4);
    symm::get(tile_view, symm::submdspan(symm::remote(grid, left), md::pair{1, 4}, md::pair{2, 6}));
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 4; ++j)
        PE_REQUIRE_EQ(tile[static_cast<std::size_t>(i + 3 * j)], tag(left, 1 + i, 2 + j));

    // A column got into a contiguous vector.
    std::vector<int> column(6);
    symm::get(md::mdspan<int, md::dextents<int, 1>>(column.data(), 6),
              symm::submdspan(symm::remote(grid, left), md::full_extent, 8));
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
    symm::put(symm::submdspan(symm::remote(cm, other), md::full_extent, 2),
              md::mdspan<const double, md::dextents<long, 1>>(col.data(), 4L));
    world.barrier();
    PE_REQUIRE(cm.local()(3, 2) == 4.5 + other && cm.local()(0, 2) == 1.5);

    // A face of a cube: the plane k = 1 of 4 x 5 x 3, strided in its last dimension on the remote side.
    symm::mdarray<int, md::dextents<int, 3>> cube(world, md::dextents<int, 3>(4, 5, 3), {.zeroed = true});
    std::vector<int> face(20);
    for (std::size_t v = 0; v < face.size(); ++v)
      face[v] = me * 100 + static_cast<int>(v);
    symm::put(symm::submdspan(symm::remote(cube, other), md::full_extent, md::full_extent, 1),
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
              symm::submdspan(symm::remote(fixed, other), md::pair{2, 4}, md::pair{2, 4}));
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

TEST_CASE("mdarray: put_nbi and get_nbi of strided views, small and large", "[mdarray][rma][nbi]") {
  REQUIRE_NOTHROW(on_pes(2, [](symm::world& world) {
    const int me = world.my_pe(), other = 1 - me;
    // 8 x 256 x 64 ints; a put of its 8 x 256 x 48 block (384 KiB, above the size the host backend copies at once) is
    // 8 2-D copies of 256 rows of 48 ints, done by the world's copy thread or by wait().
    using cube3 = symm::mdarray<int, md::dextents<int, 3>>;
    cube3 cube(world, md::dextents<int, 3>(8, 256, 64), {.zeroed = true});
    const auto value = [](int pe, int i, int j, int k) { return pe * 10000000 + i * 100000 + j * 100 + k; };
    std::vector<int> block(8 * 256 * 48);
    md::mdspan<int, md::dextents<int, 3>> block_view(block.data(), 8, 256, 48);
    for (int i = 0; i < 8; ++i)
      for (int j = 0; j < 256; ++j)
        for (int k = 0; k < 48; ++k)
          block_view(i, j, k) = value(me, i, j, k);
    const auto their_block = [&](int pe) {
      return symm::submdspan(symm::remote(cube, pe), md::full_extent, md::full_extent, md::pair{0, 48});
    };
    symm::future<> put = symm::put_nbi(their_block(other), md::mdspan<const int, md::dextents<int, 3>>(block_view));
    put.wait();
    PE_REQUIRE(put.ready());
    world.barrier();
    for (int i = 0; i < 8; ++i)
      for (int j = 0; j < 256; j += 51)
        for (int k = 0; k < 64; k += 7)
          PE_REQUIRE_EQ(cube.local()(i, j, k), k < 48 ? value(other, i, j, k) : 0);

    // The same block got back into a column-major buffer: no dimension is contiguous on both sides, so 384 copies of
    // single elements, one job.
    std::vector<int> back(block.size(), -1);
    md::mdspan<int, md::dextents<int, 3>, md::layout_left> back_view(back.data(), 8, 256, 48);
    symm::future<> get = symm::get_nbi(back_view, their_block(other));
    get.wait();
    for (int i = 0; i < 8; ++i)
      for (int j = 0; j < 256; j += 17)
        for (int k = 0; k < 48; k += 5)
          PE_REQUIRE_EQ(back_view(i, j, k), value(me, i, j, k)); // my block, which the other PE holds

    // Small (copied at once): a column each way, and an empty tile.
    world.barrier();
    std::vector<int> column(8);
    for (int i = 0; i < 8; ++i)
      column[static_cast<std::size_t>(i)] = -(me * 10 + i);
    symm::put_nbi(symm::submdspan(symm::remote(cube, other), md::full_extent, 5, 60),
                  md::mdspan<const int, md::dextents<int, 1>>(column.data(), 8))
        .wait();
    world.barrier();
    std::vector<int> got(8);
    symm::get_nbi(md::mdspan<int, md::dextents<int, 1>>(got.data(), 8),
                  symm::submdspan(symm::remote(cube, me), md::full_extent, 5, 60))
        .wait();
    for (int i = 0; i < 8; ++i)
      PE_REQUIRE_EQ(got[static_cast<std::size_t>(i)], -(other * 10 + i));
    symm::future<> empty = symm::put_nbi(symm::submdspan(symm::remote(cube, other), md::pair{0, 0}, 1, md::full_extent),
                                         md::mdspan<const int, md::dextents<int, 2>>(column.data(), 0, 64));
    PE_REQUIRE(empty.ready());
    PE_REQUIRE_ERROR(
        (void) symm::put_nbi(symm::submdspan(symm::remote(cube, other), 1, 1, md::full_extent),
                             md::mdspan<const int, md::dextents<int, 1>>(column.data(), 8)),
        symm::errc::extent_mismatch,
        fmt::format("symm::put_nbi of a multi-dimensional view: the remote side on PE {} has extents (64) "
                    "but the local side has (8)",
                    other));
    world.barrier();
  }));
}

TEST_CASE("device strided copies: rows of 16-byte vectors when every row is aligned, else elements", "[mdarray]") {
  alignas(16) static float cells[8 * 64];
  static_assert(2 * 256 <= 8 * 64);
  md::mdspan<float, md::dextents<int, 2>> g(cells, 8, 16);
  md::mdspan<float, md::dextents<int, 2>> g64(cells, 8, 64);
  const auto plan = [](const auto& dst, const auto& src, unsigned threads) {
    return symm::detail::plan_md_rows(
        dst.extents(), dst.mapping(), dst.data_handle(), src.mapping(), src.data_handle(), threads);
  };
  // A 4 x 8 tile at column 4 into one at column 8: rows of 32 bytes, a team of 2 threads a row (2 vectors).
  auto a = symm::submdspan(g, md::pair{0, 4}, md::pair{4, 12}), b = symm::submdspan(g, md::pair{4, 8}, md::pair{8, 16});
  symm::detail::md_row_plan p = plan(a, b, 128);
  CHECK((p.rows == 4 && p.row_bytes == 32 && p.team == 2));
  // Wider rows take wider teams, up to a warp, never more threads than the group has.
  CHECK(plan(symm::submdspan(g64, md::pair{0, 2}, md::pair{0, 64}),
             symm::submdspan(g64, md::pair{2, 4}, md::pair{0, 64}), 128)
            .team == 16);
  CHECK(plan(symm::submdspan(g64, md::pair{0, 2}, md::pair{0, 64}),
             symm::submdspan(g64, md::pair{2, 4}, md::pair{0, 64}), 1)
            .team == 1);
  CHECK(plan(symm::submdspan(g64, md::pair{0, 2}, md::pair{0, 60}),
             symm::submdspan(g64, md::pair{2, 4}, md::pair{0, 60}), 8)
            .team == 8);
  // A power of two whatever the counts: 3 vectors a row take a team of 4, a group of 12 threads teams of at most 8.
  CHECK(plan(symm::submdspan(g64, md::pair{0, 2}, md::pair{0, 12}),
             symm::submdspan(g64, md::pair{2, 4}, md::pair{0, 12}), 128)
            .team == 4);
  CHECK(plan(symm::submdspan(g64, md::pair{0, 2}, md::pair{0, 64}),
             symm::submdspan(g64, md::pair{2, 4}, md::pair{0, 64}), 12)
            .team == 8);
  // Element by element: a row start 8 bytes off on one side, a row pitch of 36 bytes, an inner stride that is not 1,
  // one dimension.
  CHECK(plan(a, symm::submdspan(g, md::pair{4, 8}, md::pair{2, 10}), 128).rows == 0);
  md::mdspan<float, md::dextents<int, 2>> g9(cells, 8, 9);
  CHECK(
      plan(symm::submdspan(g9, md::pair{0, 4}, md::pair{0, 4}), symm::submdspan(g, md::pair{0, 4}, md::pair{0, 4}), 32)
          .rows == 0);
  md::mdspan<float, md::dextents<int, 2>, md::layout_left> cm(cells, 16, 8);
  CHECK(
      plan(symm::submdspan(cm, md::pair{0, 4}, md::pair{0, 4}), symm::submdspan(cm, md::pair{4, 8}, md::pair{0, 4}), 32)
          .rows == 0);
  md::mdspan<float, md::dextents<int, 1>> line(cells, 16);
  CHECK(plan(line, line, 32).rows == 0);
  CHECK(plan(symm::submdspan(g, md::pair{0, 4}, md::pair{0, 2}), symm::submdspan(g, md::pair{4, 8}, md::pair{0, 2}), 32)
            .rows == 0); // rows of 8 bytes: no vector to copy
  // A few wide rows: teams as wide as a row's vectors, beyond a warp (a 2 x 256 tile of a 256-wide grid, 64 vectors a
  // row).
  md::mdspan<float, md::dextents<int, 2>> g256(cells, 2, 256);
  CHECK(plan(symm::submdspan(g256, md::pair{0, 1}, md::full_extent),
             symm::submdspan(g256, md::pair{1, 2}, md::full_extent), 1024)
            .team == 64);
  // One row of a tile is no reason for alignment of the row pitch: a single row of a 9-wide grid.
  CHECK(
      plan(symm::submdspan(g9, md::pair{0, 1}, md::pair{0, 8}), symm::submdspan(g, md::pair{1, 2}, md::pair{0, 8}), 32)
          .rows == 1);

  // Where row r (and element k) of a view lies on each side: row-major over the outer dimensions.
  md::mdspan<float, md::dextents<int, 3>> cube(cells, 2, 3, 8);
  md::mdspan<float, md::dextents<int, 3>, md::layout_left> cube_cm(cells, 2, 3, 8);
  const auto rows = symm::detail::linear_offsets<2>(cube.extents(), cube.mapping(), cube_cm.mapping(), 4); // (1, 1)
  CHECK((rows.dst == 8 * 3 + 8 && rows.src == 1 + 2));
  for (std::size_t k = 0; k < 48; ++k) {
    const auto at = symm::detail::linear_offsets<3>(cube.extents(), cube.mapping(), cube_cm.mapping(), k);
    const int i = static_cast<int>(k / 24), j = static_cast<int>(k / 8 % 3), l = static_cast<int>(k % 8);
    CHECK((at.dst == static_cast<std::size_t>(&cube(i, j, l) - cells) &&
           at.src == static_cast<std::size_t>(&cube_cm(i, j, l) - cells)));
  }
  // Column-major order (a layout_left remote side): index k steps through dimension 0 first.
  for (std::size_t k = 0; k < 48; ++k) {
    const auto at = symm::detail::linear_offsets<3, true>(cube.extents(), cube.mapping(), cube_cm.mapping(), k);
    const int i = static_cast<int>(k % 2), j = static_cast<int>(k / 2 % 3), l = static_cast<int>(k / 6);
    CHECK((at.dst == static_cast<std::size_t>(&cube(i, j, l) - cells) &&
           at.src == static_cast<std::size_t>(&cube_cm(i, j, l) - cells) && at.src == k));
  }
  STATIC_REQUIRE(symm::detail::column_major_order<decltype(cube_cm)::mapping_type>);
  STATIC_REQUIRE(!symm::detail::column_major_order<decltype(symm::submdspan(
                     cube_cm, 1, md::full_extent, md::full_extent))::mapping_type>);
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
        symm::put(symm::submdspan(symm::remote(grid, right), 1, md::full_extent),
                  md::mdspan<const int, md::dextents<int, 1>>(five.data(), 5)),
        symm::errc::extent_mismatch,
        fmt::format("symm::put of a multi-dimensional view: the remote side on PE {} has extents (6) but "
                    "the local side has (5)",
                    right));
    PE_REQUIRE_ERROR(symm::get(md::mdspan<int, md::dextents<int, 2>>(five.data(), 1, 5),
                               symm::submdspan(symm::remote(grid, right), md::pair{0, 2}, md::pair{0, 2})),
                     symm::errc::extent_mismatch, "has extents (2, 2) but the local side has (1, 5)");
    PE_REQUIRE_ERROR((void) symm::remote(grid, 3), symm::errc::invalid_pe, "3");
    world.barrier();
  }));
}

TEST_CASE("symm::submdspan: a row-major grid's first columns keep the grid's strides", "[mdarray]") {
  std::vector<int> cells(6 * 9 * 4);
  for (std::size_t v = 0; v < cells.size(); ++v)
    cells[v] = static_cast<int>(v);
  md::mdspan<int, md::dextents<int, 2>> g(cells.data(), 6, 9);
  // The slicing CCCL 3.0's cuda::std::submdspan returns as layout_right with strides (4, 1).
  auto first = symm::submdspan(g, md::full_extent, md::pair{0, 4});
  STATIC_REQUIRE(decltype(first)::rank() == 2);
  CHECK((first.extent(0) == 6 && first.extent(1) == 4 && first.stride(0) == 9 && first.stride(1) == 1));
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 4; ++j)
      CHECK(&first(i, j) == &g(i, j));
  auto last = symm::submdspan(g, md::full_extent, md::pair{5, 9});
  CHECK((&last(0, 0) == &g(0, 5) && &last(5, 3) == &g(5, 8)));
  md::mdspan<int, md::dextents<int, 3>> cube(cells.data(), 4, 6, 9);
  auto block = symm::submdspan(cube, md::full_extent, md::full_extent, md::pair{2, 5});
  CHECK((&block(3, 5, 2) == &cube(3, 5, 4) && block.stride(0) == 54 && block.stride(1) == 9));
  // Every other slicing is cuda::std::submdspan's, type and all.
  STATIC_REQUIRE(std::is_same_v<decltype(symm::submdspan(g, md::pair{1, 3}, md::full_extent)),
                                decltype(md::submdspan(g, md::pair{1, 3}, md::full_extent))>);
  STATIC_REQUIRE(
      std::is_same_v<decltype(symm::submdspan(g, md::full_extent, 2)), decltype(md::submdspan(g, md::full_extent, 2))>);
  STATIC_REQUIRE(
      std::is_same_v<decltype(symm::submdspan(g, md::full_extent, md::full_extent))::layout_type, md::layout_right>);
  md::mdspan<int, md::dextents<int, 2>, md::layout_left> cm(cells.data(), 9, 6);
  STATIC_REQUIRE(std::is_same_v<decltype(symm::submdspan(cm, md::full_extent, md::pair{0, 4})),
                                decltype(md::submdspan(cm, md::full_extent, md::pair{0, 4}))>);
  // Another PE's copy: an unqualified call finds symm's overload.
  REQUIRE_NOTHROW(on_pes(2, [](symm::world& world) {
    grid2 grid(world, 6, 9);
    fill(grid.local(), world.my_pe());
    world.barrier();
    const int other = 1 - world.my_pe();
    auto theirs = submdspan(symm::remote(grid, other), md::full_extent, md::pair{0, 4});
    static_assert(std::is_same_v<decltype(theirs)::layout_type, md::layout_stride>);
    std::vector<int> got(6 * 4);
    symm::get(md::mdspan<int, md::dextents<int, 2>>(got.data(), 6, 4), theirs);
    for (int i = 0; i < 6; ++i)
      for (int j = 0; j < 4; ++j)
        PE_REQUIRE_EQ(got[static_cast<std::size_t>(i * 4 + j)], tag(other, i, j));
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
  auto row = symm::submdspan(g, md::pair{2, 3}, md::full_extent);
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
  auto column = symm::submdspan(g, md::full_extent, 4);
  md::mdspan<int, md::dextents<int, 1>> dense(out.data(), 6);
  CHECK(symm::detail::host_copy_md(out.data(), dense.mapping(), grid.data() + 4, column.mapping(), copy_2d) == 1);
  CHECK((calls[0].width == 4 && calls[0].rows == 6 && calls[0].src_pitch == 36 && calls[0].dst_pitch == 4));
  CHECK((out[0] == 4 && out[5] == 49));

  // Rows that overlap in the destination (a layout_stride whose row stride is shorter than a row): element copies.
  calls.clear();
  md::layout_stride::mapping<md::dextents<int, 2>> overlapping(md::dextents<int, 2>(2, 4), md::array<int, 2>{2, 1});
  auto tile = symm::submdspan(g, md::pair{0, 2}, md::pair{0, 4});
  (void) symm::detail::host_copy_md(out.data(), overlapping, grid.data(), tile.mapping(), copy_2d);
  for (const call& c : calls)
    CHECK((c.dst_pitch >= c.width && c.src_pitch >= c.width));

  // A tile of a column-major grid into a dense column-major buffer: its columns are the contiguous runs, so one 2-D
  // copy of 3 runs of 5 elements, not an element a row (strides (1, 9) against (1, 5)).
  calls.clear();
  std::fill(out.begin(), out.end(), -1);
  md::mdspan<int, md::dextents<int, 2>, md::layout_left> cm(grid.data(), 9, 6);
  auto cm_tile = symm::submdspan(cm, md::pair{2, 7}, md::pair{1, 4});
  md::mdspan<int, md::dextents<int, 2>, md::layout_left> cm_out(out.data(), 5, 3);
  CHECK(symm::detail::host_copy_md(out.data(), cm_out.mapping(), cm_tile.data_handle(), cm_tile.mapping(), copy_2d) ==
        1);
  CHECK((calls[0].width == 20 && calls[0].rows == 3 && calls[0].src_pitch == 36 && calls[0].dst_pitch == 20));
  for (int j = 0; j < 3; ++j)
    for (int i = 0; i < 5; ++i)
      CHECK(cm_out(i, j) == cm(i + 2, j + 1));

  // A 3-D block of a column-major 4 x 5 x 3 array into a row-major buffer: no dimension has stride 1 on both sides,
  // so single elements; the rows go along the longest dimension (5) and one call per index of the other two.
  calls.clear();
  std::vector<int> cube(4 * 5 * 3), cube_out(cube.size(), -1);
  for (std::size_t v = 0; v < cube.size(); ++v)
    cube[v] = static_cast<int>(v);
  md::mdspan<int, md::dextents<int, 3>, md::layout_left> c_in(cube.data(), 4, 5, 3);
  md::mdspan<int, md::dextents<int, 3>> c_out(cube_out.data(), 4, 5, 3);
  CHECK(symm::detail::host_copy_md(cube_out.data(), c_out.mapping(), cube.data(), c_in.mapping(), copy_2d) == 4 * 3);
  CHECK((calls[0].width == 4 && calls[0].rows == 5 && calls[0].src_pitch == 16 && calls[0].dst_pitch == 12));
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 5; ++j)
      for (int k = 0; k < 3; ++k)
        CHECK(c_out(i, j, k) == c_in(i, j, k));
}
