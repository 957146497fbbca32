// expect-compile: ok
// The positive control of when_all_lvalue.cpp: futures moved in, or a vector of them.
#include <symm/future.hpp>

#include <utility>
#include <vector>

symm::future<> join(symm::future<>& first, symm::future<>& second, std::vector<symm::future<>>& rest) {
  auto both = symm::when_all(std::move(first), std::move(second));
  rest.push_back(std::move(both));
  return symm::when_all(std::move(rest));
}
