// Compile-time benchmark (benchmarks/compile_time.py): a translation unit with one symm kernel and nothing else, no
// host code, no world: what a user's kernel file costs to compile. Compared with put_get_cuda.cu, a whole program.
#include <symm/remote.hpp>
#include <symm/rma.hpp>

#include <cooperative_groups.h>

__global__ void put_block(symm::array_ref<float> src, symm::array_ref<float> dst, int pe) {
  symm::put(cooperative_groups::this_thread_block(), symm::remote(dst, pe), src.local());
}
