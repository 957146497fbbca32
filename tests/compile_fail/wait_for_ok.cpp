// expect-compile: ok
// The positive control of wait_for_status_ignored.cpp: the bounded waits compile when their result is used, with
// std::chrono and cuda::std::chrono timeouts, on every word form and on a signal.
#pragma GCC diagnostic error "-Wunused-result"
#include <symm/signal.hpp>
#include <symm/wait.hpp>
#include <symm/wait_status.hpp>

#include <cuda/std/chrono>

#include <chrono>
#include <cstdint>

bool wait_for(symm::scalar<int>& flag, symm::scalar_ref<long long> wide, std::uint32_t& word, symm::signal& sig) {
  auto [status, seen] = symm::wait_until_for(flag, symm::cmp::eq, 1, std::chrono::milliseconds(1));
  symm::wait_result<long long> w = symm::wait_until_for(wide, symm::cmp::ge, 2, cuda::std::chrono::microseconds(5));
  const bool word_ok = symm::wait_until_for(&word, symm::cmp::ne, 0u, std::chrono::seconds(1)).ok();
  const auto s = symm::signal_wait_until_for(sig, symm::cmp::ge, 1, std::chrono::duration<double>(0.5));
  return status == symm::wait_status::ok && seen == 1 && w.ok() && word_ok && s.ok() &&
         symm::to_string(s.status)[0] != '\0';
}
