// expect-error: symm::put_signal: the signal must follow every thread's part of the copy.*a grid group can only do that
// under a cooperative launch A grid group cannot synchronise outside a cooperative launch, so it cannot order one
// signal after the whole grid's copy: device put_signal takes a block, a warp tile or symm::this_thread().
#include <symm/signal.hpp>

#include <cooperative_groups.h>

__global__ void send(symm::array_ref<int> data, symm::signal_ref ready, int pe) {
  symm::put_signal(cooperative_groups::this_grid(), symm::remote(data, pe), data.local(), symm::remote(ready, pe), 1,
                   symm::signal_op::set);
}
