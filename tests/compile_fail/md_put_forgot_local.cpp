// expect-first-error: static assertion failed.*a symmetric object \(symm::mdarray\) as the local side
// The whole mdarray as the source of a put: the first error says to pass grid.local().
#include <symm/symm.hpp>

void send(symm::mdarray<float, cuda::std::dextents<int, 2>>& grid) {
  symm::put(symm::remote(grid, 1), grid);
}
