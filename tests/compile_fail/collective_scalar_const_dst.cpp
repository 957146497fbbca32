// expect-error: static assertion failed: symm collective: dst must be writable: a non-const symm::array or symm::scalar
// A const symm::scalar, like a const symm::array, cannot receive a collective's result.
#include <symm/collectives.hpp>

void f(const symm::team& t, const symm::scalar<int>& dst, symm::scalar<int>& src) {
  symm::allreduce(t, dst, src, symm::plus{});
}

int main() {
  return 0;
}
