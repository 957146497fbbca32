// expect-first-error: static assertion failed.*put/get between two remote views
// A put from one PE's copy straight into another's: symm moves data between this PE and one other, and says so.
#include <symm/symm.hpp>

void relay(symm::mdarray<float, cuda::std::dextents<int, 2>>& grid) {
  symm::put(symm::remote(grid, 1), symm::remote(grid, 2));
}
