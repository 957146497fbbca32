// expect-first-error: static assertion failed.*symm: get: the destination is const
// A get into a const vector: the first error says the destination is const.
#include <symm/symm.hpp>

#include <vector>

void fetch(const std::vector<float>& out, symm::array<float>& src) {
  symm::get(out, symm::remote(src, 1));
}
