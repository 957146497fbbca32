// expect-error: deleted function.*kernels_and_copies_take_the_view<symm::(\w+::)?array_ref<
// symm::array owns a collective allocation and cannot be copied; the error must name the view to copy instead.
#include <symm/symm.hpp>

void f(const symm::array<int>& a) {
  symm::array<int> b = a;
  (void) b;
}
