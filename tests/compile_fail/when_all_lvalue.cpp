// expect-first-error: static assertion failed.*symm::when_all takes its futures by value: std::move them in
// An lvalue future given to when_all (a future is move-only): the first error says to move it in.
#include <symm/future.hpp>

symm::future<> join(symm::future<>& first, symm::future<>& second) {
  return symm::when_all(first, std::move(second));
}
