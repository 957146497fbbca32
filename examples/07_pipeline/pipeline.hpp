// The stream of chunks both versions of the pipeline send round the ring, and how the consumer checks them.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#  define PIPELINE_HOST_DEVICE __host__ __device__
#else
#  define PIPELINE_HOST_DEVICE
#endif

namespace pipeline {

inline constexpr std::size_t chunk = 1024;  // values per chunk
inline constexpr std::size_t slots = 4;     // chunks in flight per link: the consumer's landing ring
inline constexpr std::uint64_t chunks = 64; // chunks each PE sends

//! Value i of chunk k produced by PE pe.
PIPELINE_HOST_DEVICE constexpr std::int64_t value(int pe, std::uint64_t k, std::size_t i) {
  return static_cast<std::int64_t>(pe) * 1000003 + static_cast<std::int64_t>(k) * 1009 + static_cast<std::int64_t>(i);
}

} // namespace pipeline
