// The vector both versions of the allreduce sum, and how the work is split into chunks.
#pragma once

#include <cstddef>

#if defined(__CUDACC__)
#  define ALLREDUCE_HOST_DEVICE __host__ __device__
#else
#  define ALLREDUCE_HOST_DEVICE
#endif

namespace allreduce {

inline constexpr std::size_t count = 100000; // elements of the vector every PE contributes

//! Element i of PE pe's vector: small integers, so that the double sums are exact whatever the order.
ALLREDUCE_HOST_DEVICE constexpr double input(int pe, std::size_t i) {
  return static_cast<double>((pe + 1) * static_cast<int>(i % 100));
}

//! Element i of the sum over n PEs.
constexpr double expected(int n, std::size_t i) {
  return static_cast<double>(n * (n + 1) / 2 * static_cast<int>(i % 100));
}

//! PE q owns chunk q: [q * chunk, q * chunk + chunk_size(q)) of the vector.
ALLREDUCE_HOST_DEVICE constexpr std::size_t chunk(int n) {
  return (count + static_cast<std::size_t>(n) - 1) / static_cast<std::size_t>(n);
}
ALLREDUCE_HOST_DEVICE constexpr std::size_t chunk_begin(int n, int q) {
  const std::size_t b = static_cast<std::size_t>(q) * chunk(n);
  return b < count ? b : count;
}
ALLREDUCE_HOST_DEVICE constexpr std::size_t chunk_size(int n, int q) {
  const std::size_t e = chunk_begin(n, q) + chunk(n);
  return (e < count ? e : count) - chunk_begin(n, q);
}

} // namespace allreduce
