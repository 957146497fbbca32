// The data both versions of the histogram count, and the serial count PE 0 checks them against.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#if defined(__CUDACC__)
#  define HISTOGRAM_HOST_DEVICE __host__ __device__
#else
#  define HISTOGRAM_HOST_DEVICE
#endif

namespace histogram {

inline constexpr std::size_t bins = 64; // in total, spread over the PEs
inline constexpr std::size_t values_per_pe = 100000;

//! Bin of value i of PE pe: a hash, so every PE hits every bin (and so every other PE).
HISTOGRAM_HOST_DEVICE constexpr std::size_t bin_of(int pe, std::size_t i) {
  std::uint64_t x = static_cast<std::uint64_t>(pe) * std::uint64_t{0x9E3779B97F4A7C15} + i;
  x ^= x >> 31;
  x *= std::uint64_t{0xBF58476D1CE4E5B9};
  x ^= x >> 29;
  const std::uint64_t r = x % 4096;
  return static_cast<std::size_t>(r * r / (4096 * 4096 / bins)); // skewed: low bins fill faster
}

//! The bins are split in blocks: PE p owns bins [p * per_pe, (p + 1) * per_pe).
HISTOGRAM_HOST_DEVICE constexpr std::size_t bins_per_pe(int n_pes) {
  return (bins + static_cast<std::size_t>(n_pes) - 1) / static_cast<std::size_t>(n_pes);
}

//! Every PE's values counted by one loop.
inline std::vector<std::uint64_t> serial(int n_pes) {
  std::vector<std::uint64_t> count(bins, 0);
  for (int pe = 0; pe < n_pes; ++pe)
    for (std::size_t i = 0; i < values_per_pe; ++i)
      ++count[bin_of(pe, i)];
  return count;
}

} // namespace histogram
