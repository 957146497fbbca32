// expect-error: kernels_and_copies_take_the_view<symm::(\w+::)?array_ref<T, Extent>>.*deleted function
// An NVSHMEM kernel takes its symmetric buffer as a pointer; a symm kernel takes the view symm::array_ref<T> (alias
// symm::device_array<T>), never the owning symm::array, which cannot be copied. The error must name array_ref.
#include <symm/symm.hpp>

__global__ void scale(symm::array<float> a) {
  (void) a;
}

void launch(const symm::array<float>& arr) {
  scale<<<1, 32>>>(arr);
}
