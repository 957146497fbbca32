// expect-error: static assertion failed: symm::wait_until / test: the word must be an integer of 4 or 8 bytes
// Point-to-point waits compare integer words (OpenSHMEM's rule); a float flag does not compile.
#include <symm/wait.hpp>

float wait_for(float& flag) {
  return symm::wait_until(flag, symm::cmp::ge, 1.0f);
}
