// expect-error: static assertion failed: symm collective: dst must be writable
// A const array, or an array_ref of const elements, cannot receive a collective's result.
#include <symm/collectives.hpp>

void f(const symm::team& t, symm::array_ref<const int> dst, symm::array<int>& src) {
  symm::fcollect(t, dst, src);
}

int main() {
  return 0;
}
