// expect-error: ignoring return value of .*wait_until_for.*nodiscard
// A bounded wait says how it ended; a caller that drops the status takes a timeout for success, so the result is
// [[nodiscard]]. Compilers warn; this file makes the warning an error to check that it is there.
#pragma GCC diagnostic error "-Wunused-result"
#include <symm/wait.hpp>

#include <chrono>

void wait_for(symm::scalar<int>& flag) {
  symm::wait_until_for(flag, symm::cmp::eq, 1, std::chrono::milliseconds(1));
}
