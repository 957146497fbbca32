// The step both versions run: what each PE holds at step s, and what it must receive. Every value is a function of
// (PE, step, index), so any PE can check what its neighbours and the allreduce delivered, at any step.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#  define GRAPH_STEP_HOST_DEVICE __host__ __device__
#else
#  define GRAPH_STEP_HOST_DEVICE
#endif

namespace graph_step {

inline constexpr int steps = 200;                 // steps run (host) / replays of the recorded step (GPU)
inline constexpr std::size_t field_count = 4096;  // values each PE owns
inline constexpr std::size_t halo_width = 128;    // the field's right edge, put into the right neighbour's halo
inline constexpr std::size_t reduce_count = 16;   // the small vector summed over all PEs (residuals, norms, ...)
inline constexpr std::size_t message_count = 128; // the field's first values, sent to the right neighbour with a signal

GRAPH_STEP_HOST_DEVICE constexpr int left_of(int pe, int n) {
  return (pe + n - 1) % n;
}
GRAPH_STEP_HOST_DEVICE constexpr int right_of(int pe, int n) {
  return (pe + 1) % n;
}

//! Value i of PE pe's field at step s.
GRAPH_STEP_HOST_DEVICE constexpr std::uint64_t value(int pe, std::uint64_t s, std::size_t i) {
  return s * 1000003u + static_cast<std::uint64_t>(pe) * 7919u + i;
}

//! Element j of PE pe's contribution to the allreduce at step s: integers, so the sum is exact.
GRAPH_STEP_HOST_DEVICE constexpr std::uint64_t partial(int pe, std::uint64_t s, std::size_t j) {
  return (s + j) * static_cast<std::uint64_t>(pe + 1);
}

//! Element j of the allreduce over n PEs at step s: (s + j) * (1 + 2 + ... + n).
GRAPH_STEP_HOST_DEVICE constexpr std::uint64_t expected_sum(int n, std::uint64_t s, std::size_t j) {
  return (s + j) * static_cast<std::uint64_t>(n) * static_cast<std::uint64_t>(n + 1) / 2;
}

//! Halo value i of PE pe at step s: the left neighbour's right edge.
GRAPH_STEP_HOST_DEVICE constexpr std::uint64_t expected_halo(int pe, int n, std::uint64_t s, std::size_t i) {
  return value(left_of(pe, n), s, field_count - halo_width + i);
}

//! Message value i of PE pe at step s: the left neighbour's first values.
GRAPH_STEP_HOST_DEVICE constexpr std::uint64_t expected_message(int pe, int n, std::uint64_t s, std::size_t i) {
  return value(left_of(pe, n), s, i);
}

} // namespace graph_step
