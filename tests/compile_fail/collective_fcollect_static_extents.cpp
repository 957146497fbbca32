// expect-error: static assertion failed: symm::fcollect: dst needs team.n_pes\(\) \* src.size\(\) elements
// fcollect's dst must hold n_pes copies of src: 10 elements can never hold whole copies of 4.
#include <symm/collectives.hpp>

void f(const symm::team& t, symm::array<int, 10>& dst, symm::array<int, 4>& src) {
  symm::fcollect(t, dst, src);
}

int main() {
  return 0;
}
