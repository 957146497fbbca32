// expect-first-error: static assertion failed.*a symmetric object \(symm::array, symm::scalar\) as the local side
// A symm::array as the local side of a put (its .local() forgotten): the first error says to pass a.local().
#include <symm/symm.hpp>

void send(symm::array<float>& src, symm::array<float>& dst) {
  symm::remote(dst, 1) = src;
  symm::put(symm::remote(dst, 1), src);
}
