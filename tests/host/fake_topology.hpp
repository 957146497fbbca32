// tests/host/fake_topology.hpp: topologies of machines this test machine is not (several GPUs, NVLink islands, PCIe,
// MPS), written as the facts cuda_heap would gather there, for the tests of detail::make_topology (test_world.cpp) and
// of the collectives' plan (test_collectives.cpp).
#pragma once

#include <symm/detail/topology.hpp>

#include <fmt/core.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace symm_test {

using symm::detail::pair_facts;

//! What the driver says of a pair of GPUs: NVLink (access, native atomics, the best rank), PCIe peer-to-peer (access,
//! no native atomics, a worse rank), no peer access, and a GPU this process does not see (not asked).
inline constexpr pair_facts nvlink_pair{1, 1, 1, 0};
inline constexpr pair_facts pcie_pair{1, 1, 0, 1};
inline constexpr pair_facts no_access_pair{1, 0, 0, -1};
inline constexpr pair_facts hidden_pair{};

//! The PCI bus id of GPU `g`: 0000:18:00.0, 0000:19:00.0, ...
inline std::string bus_id_of(int g) {
  return fmt::format("0000:{:02x}:00.0", 0x18 + g);
}

//! A node "a" with `n_gpus` GPUs and `pes_per_gpu` PEs on each (PE p on GPU p / pes_per_gpu, each its own process,
//! under MPS); `pair(g, h)` is what the driver of GPU g's process says of GPU h (g != h).
template <class Pair>
symm::detail::topology fake_topology(int n_gpus, int pes_per_gpu, Pair pair) {
  const int n = n_gpus * pes_per_gpu;
  std::vector<symm::detail::gpu_user> users;
  for (int p = 0; p < n; ++p) {
    users.push_back({p, "a", bus_id_of(p / pes_per_gpu), static_cast<std::uint32_t>(100 + p), false, true});
  }
  std::vector<pair_facts> facts(static_cast<std::size_t>(n) * static_cast<std::size_t>(n));
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      const int g = a / pes_per_gpu, h = b / pes_per_gpu;
      // cuda_heap asks nothing of its own GPU: those facts stay empty.
      if (g != h) facts[static_cast<std::size_t>(a * n + b)] = pair(g, h);
    }
  }
  return symm::detail::make_topology(std::move(users), facts);
}

//! Every pair of GPUs NVLink peers (an NVSwitch machine).
inline symm::detail::topology all_nvlink(int n_gpus, int pes_per_gpu = 1) {
  return fake_topology(n_gpus, pes_per_gpu, [](int, int) { return nvlink_pair; });
}

//! 8 GPUs as two NVLink islands, GPUs 0-3 and 4-7, linked by PCIe peer-to-peer.
inline symm::detail::topology two_islands() {
  return fake_topology(8, 1, [](int g, int h) { return g / 4 == h / 4 ? nvlink_pair : pcie_pair; });
}

//! The PEs first, first + 1, ..., first + count - 1.
inline std::vector<int> pe_range(int first, int count) {
  std::vector<int> pes;
  for (int p = first; p < first + count; ++p)
    pes.push_back(p);
  return pes;
}

} // namespace symm_test
