// expect-error: symm::synced: a grid group can synchronise only under a cooperative launch
// symm::synced(group) makes the group synchronise before and after each copy; a grid can do that only under a
// cooperative launch, so synced(grid) is refused where it is written.
#include <symm/remote.hpp>
#include <symm/rma.hpp>
#include <symm/symmetric.hpp>

#include <cooperative_groups.h>

__global__ void put_from_grid(symm::array_ref<int> data, int pe) {
  symm::put(symm::synced(cooperative_groups::this_grid()), symm::remote(data, pe), data.local());
}
