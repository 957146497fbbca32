// expect-first-error: static assertion failed.*symm::put between multi-dimensional views whose static extents
// A 4 x 4 tile of another PE's copy from a local 4 x 3 one: the static extents differ, which the first error says.
#include <symm/symm.hpp>

void send(symm::mdarray<int, cuda::std::extents<int, 4, 4>>& grid, int (&tile)[12]) {
  symm::put(symm::remote(grid, 1), cuda::std::mdspan<const int, cuda::std::extents<int, 4, 3>>(tile));
}
