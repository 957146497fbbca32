// expect-compile: ok
// The bounded waits in device code without nvcc's --expt-relaxed-constexpr, which symm does not require of its users
// (the installed CMake package does not pass it): a std::chrono timeout given to the kernel as an argument, and
// cuda::std::chrono timeouts made in device code (detail/wait_duration.hpp reads a std::chrono count from its bytes).
#include <symm/signal.hpp>
#include <symm/wait.hpp>

#include <cuda/std/chrono>

#include <chrono>
#include <cstdint>

__global__ void bounded(symm::scalar_ref<int> flag, symm::signal_ref sig, std::chrono::microseconds timeout,
                        unsigned* errors) {
  const auto a = symm::wait_until_for(flag, symm::cmp::eq, 1, timeout);
  const auto b = symm::signal_wait_until_for(sig, symm::cmp::ge, 1, cuda::std::chrono::milliseconds(2));
  const auto c = symm::wait_until_for(&flag.local(), symm::cmp::ne, 0, cuda::std::chrono::duration<double>(0.5));
  if (!a.ok() || !b.ok() || !c.ok()) atomicAdd(errors, 1u);
}

void launch(symm::scalar_ref<int> flag, symm::signal_ref sig, unsigned* errors) {
  bounded<<<1, 1>>>(flag, sig, std::chrono::microseconds(500), errors);
}
