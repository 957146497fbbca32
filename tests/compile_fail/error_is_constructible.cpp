// expect-compile: ok
// Positive control for error_needs_code.cpp: the same program, with the constructor's required arguments.
#include <symm/error.hpp>

int main() {
  symm::error e(symm::errc::invalid_argument, "a message");
  return e.code() == symm::errc::invalid_argument ? 0 : 1;
}
