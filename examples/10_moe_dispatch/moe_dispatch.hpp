// The model both versions route: every PE's tokens, which experts each token goes to and with what weight, where the
// experts live and what they compute. Every value is a pure function of (PE, token, element), so every PE computes
// the serial reference for its own tokens without asking anyone.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#  define MOE_HOST_DEVICE __host__ __device__
#else
#  define MOE_HOST_DEVICE
#endif

namespace moe_dispatch {

inline constexpr std::size_t tokens = 64;            // tokens per PE
inline constexpr std::size_t hidden = 32;            // elements (floats) per token: the row length of every alltoallv
inline constexpr int experts = 8;                    // experts in all, spread evenly over the PEs
inline constexpr int top_k = 2;                      // experts per token
inline constexpr std::size_t pairs = tokens * top_k; // (token, expert) pairs per PE: the rows it dispatches
inline constexpr std::size_t meta_length = 2;        // the side rows: (token index, expert id)

//! Element h of token t of PE pe: a small integer, so that every product and sum below is exact in float.
MOE_HOST_DEVICE constexpr float input(int pe, std::size_t t, std::size_t h) {
  return static_cast<float>(static_cast<int>((static_cast<std::size_t>(pe) * 7 + t * 3 + h) % 17) - 8);
}

//! The router: the expert of slot `slot` (0 or 1) of token t of PE pe; the two slots name different experts.
MOE_HOST_DEVICE constexpr int expert_of(int pe, std::size_t t, int slot) {
  const int first = static_cast<int>((static_cast<std::size_t>(pe) * 5 + t * 3) % experts);
  if (slot == 0) return first;
  return (first + 1 + static_cast<int>(t % (experts - 1))) % experts;
}

//! The router's weight for slot `slot`: 0.75 and 0.25, exact in float.
MOE_HOST_DEVICE constexpr float weight_of(int slot) {
  return slot == 0 ? 0.75f : 0.25f;
}

//! The PE that holds expert e: experts / n_pes consecutive experts per PE (n_pes divides experts).
MOE_HOST_DEVICE constexpr int pe_of_expert(int e, int n_pes) {
  return e / (experts / n_pes);
}

//! What expert e computes from one element of a row: exact in float for the inputs above.
MOE_HOST_DEVICE constexpr float expert_compute(int e, float x) {
  return x * static_cast<float>(e + 1) + static_cast<float>(e);
}

//! The serial reference: element h of PE pe's output token t, the weighted sum of its experts' results.
constexpr float reference(int pe, std::size_t t, std::size_t h) {
  float sum = 0.0f;
  for (int slot = 0; slot < top_k; ++slot)
    sum += weight_of(slot) * expert_compute(expert_of(pe, t, slot), input(pe, t, h));
  return sum;
}

//! Whether this example can spread its experts over n PEs.
constexpr bool pes_fit(int n) {
  return n >= 1 && n <= experts && experts % n == 0;
}

} // namespace moe_dispatch
