// expect-first-error: static assertion failed.*symm: put/get: the element types differ
// A put of doubles into floats: the first error names the mismatch, not a concept failure.
#include <symm/symm.hpp>

#include <vector>

void send(const std::vector<double>& values, symm::array<float>& dst) {
  symm::remote(dst, 1) = values;
}
