// expect-first-error: static assertion failed.*a symmetric object \(symm::array, symm::scalar\) as the local side
// In a kernel: an array_ref as the local side of a one-thread put (its .local() forgotten).
#include <symm/remote.hpp>

__global__ void send(symm::array_ref<float> src, symm::array_ref<float> dst) {
  symm::remote(dst, 1) = src;
}
