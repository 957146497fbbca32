// expect-compile: ok
// The positive control of md_put_static_extents_differ.cpp: the same put with extents that match, one of them dynamic.
#include <symm/symm.hpp>

void send(symm::mdarray<int, cuda::std::extents<int, 4, 4>>& grid, int (&tile)[16]) {
  symm::put(symm::remote(grid, 1), cuda::std::mdspan<const int, cuda::std::extents<int, 4, 4>>(tile));
  symm::get(cuda::std::mdspan<int, cuda::std::dextents<int, 2>>(tile, 4, 4), symm::remote(grid, 1));
}
