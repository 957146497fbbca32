// expect-error: no matching (function|constructor) for (call to|initialization of) .*error
// symm::error has no default constructor: every error says what went wrong.
#include <symm/error.hpp>

int main() {
  symm::error e;
  return 0;
}
