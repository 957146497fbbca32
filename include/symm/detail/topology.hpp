// symm/detail/topology.hpp: how the PEs of a world reach each other's GPUs — which PEs share a GPU, which GPUs are
// NVLink or PCIe peers — as one value built once at start-up from what the PEs tell each other (cuda_heap gathers it:
// each PE's GPU, and what the driver says of each pair), read by the collectives' plan (detail/collective_plan.hpp)
// and printed under SYMM_DEBUG. Pure logic, no CUDA call: tested on machines without a GPU (tests/host/test_world.cpp).
//
// The classes of a link from PE a to PE b, weakest first (the order `weakest_link` uses):
//   none     no peer access between the two GPUs, or the PEs are on different nodes;
//   pcie     peer access without native atomics: PCIe peer-to-peer as most platforms give it;
//   unknown  the driver could not be asked on either side (the other GPU is hidden by CUDA_VISIBLE_DEVICES, common
//            when a launcher gives each rank one GPU, or the query failed); the heap mapped, so some path exists,
//            and symm plans as it does for NVLink, which is what it assumed before it knew topologies;
//   nvlink   peer access with native atomics: NVLink-class (NVLink, or a PCIe platform with peer atomics, which the
//            driver's answers do not tell apart; symm then plans as it always did);
//   same_gpu both PEs on one GPU (several PEs per GPU under MPS, or threads of one process), and a PE to itself;
//   host     the host backend: every heap is a shared memory mapping of one node, no GPU is involved. A distinct class
//            rather than `none` (which says "no path"): on the host backend every PE reaches every heap. A topology
//            is either all `host` or has no `host` link, so where `host` sits in the order never matters.
// The driver's P2P performance rank is kept for the description only: it is a relative value (0 the best link the
// driver knows) whose scale is not documented, so the class comes from access and native atomics.
#pragma once

#include <symm/detail/config.hpp>
#include <symm/detail/device_choice.hpp>
#include <symm/error.hpp>

#include <fmt/core.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

SYMM_BEGIN_NAMESPACE
namespace detail {

//! How PE a reaches PE b's GPU; ordered weakest first (see the file's comment).
enum class link_class : std::uint8_t { none = 0, pcie = 1, unknown = 2, nvlink = 3, same_gpu = 4, host = 5 };

constexpr std::string_view to_string(link_class c) noexcept {
  switch (c) {
    case link_class::none: return "none";
    case link_class::pcie: return "PCIe";
    case link_class::unknown: return "unknown";
    case link_class::nvlink: return "NVLink";
    case link_class::same_gpu: return "same GPU";
    case link_class::host: return "host memory";
  }
  return "?";
}

//! What one PE's process learned from the driver about another PE's GPU (cudaDeviceCanAccessPeer and
//! cudaDeviceGetP2PAttribute), as it tells the others: trivially copyable, it travels through the bootstrap.
struct pair_facts {
  std::uint8_t asked = 0;             //!< the driver answered: same node, another GPU, visible to this process
  std::uint8_t access = 0;            //!< cudaDeviceCanAccessPeer
  std::uint8_t native_atomics = 0;    //!< cudaDevP2PAttrNativeAtomicSupported
  std::int32_t performance_rank = -1; //!< cudaDevP2PAttrPerformanceRank (lower is better); -1: not known
};

//! The class of a pair of PEs on different GPUs of one node from what the driver said (`asked` false: unknown).
constexpr link_class classify_link(const pair_facts& f) noexcept {
  if (f.asked == 0) return link_class::unknown;
  if (f.access == 0) return link_class::none;
  return f.native_atomics != 0 ? link_class::nvlink : link_class::pcie;
}

//! What a collective's plan needs of its team's PEs: the weakest link between any two of them (same_gpu: all on one
//! GPU, or a team of one PE).
struct team_links {
  link_class weakest = link_class::same_gpu;

  [[nodiscard]] constexpr bool one_gpu() const noexcept { return weakest == link_class::same_gpu; }
  friend constexpr bool operator==(const team_links&, const team_links&) = default;
};

//! The world's topology: for each PE its GPU (node and PCI bus id) and for each ordered pair of PEs its link_class.
//! Built once at start-up, the same on every PE (it is made from facts every PE gathered), then read-only.
class topology {
public:
  topology() = default;

  //! The host backend's: `n` PEs whose heaps are shared memory of one node, every link `host`.
  static topology host(int n) {
    topology t;
    t.n_ = n < 0 ? 0 : static_cast<std::size_t>(n);
    t.host_ = true;
    return t;
  }

  [[nodiscard]] int n_pes() const noexcept { return static_cast<int>(n_); }
  [[nodiscard]] bool is_host() const noexcept { return host_; }
  //! The GPU of PE `pe` and who uses it (GPU backends; empty on the host backend).
  [[nodiscard]] const std::vector<gpu_user>& users() const noexcept { return users_; }

  //! How PE `a` reaches PE `b`'s GPU; `same_gpu` for a == b (host: `host`).
  [[nodiscard]] link_class link(int a, int b) const noexcept {
    if (host_) return link_class::host;
    return links_[index(a, b)];
  }
  //! The driver's P2P performance rank from `a`'s GPU to `b`'s, or -1 (not asked, or the same GPU).
  [[nodiscard]] std::int32_t performance_rank(int a, int b) const noexcept { return host_ ? -1 : ranks_[index(a, b)]; }
  //! Whether PEs `a` and `b` use one GPU (false on the host backend).
  [[nodiscard]] bool shares_gpu(int a, int b) const noexcept { return link(a, b) == link_class::same_gpu; }

  //! The weakest link from any PE of `pes` (world numbers) to another; same_gpu for fewer than two PEs (host: host).
  [[nodiscard]] link_class weakest_link(std::span<const int> pes) const noexcept {
    if (host_) return link_class::host;
    link_class weakest = link_class::same_gpu;
    for (const int a : pes) {
      for (const int b : pes)
        weakest = std::min(weakest, link(a, b));
    }
    return weakest;
  }
  //! Over every PE of the world.
  [[nodiscard]] link_class weakest_link() const { return weakest_link(all_pes()); }

  //! Whether every pair of PEs of `pes` has a link of class `at_least` or stronger.
  [[nodiscard]] bool all_pairs_at_least(link_class at_least, std::span<const int> pes) const noexcept {
    return weakest_link(pes) >= at_least;
  }

  //! What a collective's plan needs of the team of `pes`.
  [[nodiscard]] team_links links_of(std::span<const int> pes) const noexcept {
    // The host backend's collectives have no stream plan; say what its links are anyway.
    return team_links{weakest_link(pes)};
  }

  //! How many GPUs the PEs of `pes` use (0 on the host backend).
  [[nodiscard]] int gpu_count(std::span<const int> pes) const noexcept {
    if (host_) return 0;
    int count = 0;
    for (std::size_t i = 0; i < pes.size(); ++i) {
      bool seen = false;
      for (std::size_t j = 0; j < i && !seen; ++j)
        seen = shares_gpu(pes[j], pes[i]);
      count += seen ? 0 : 1;
    }
    return count;
  }
  [[nodiscard]] int gpu_count() const { return gpu_count(all_pes()); }

  //! One line for SYMM_DEBUG: PE `pe`'s GPU and the class of its link to every other PE, e.g.
  //! "PE 0: GPU 0000:18:00.0 of node a; same GPU: 1; NVLink: 2-3 (rank 0); PCIe: 4-7 (rank 1)".
  [[nodiscard]] std::string describe(int pe) const {
    if (host_) {
      return fmt::format("PE {}: host backend, every PE's heap is shared memory of this node ({} PEs)", pe, n_);
    }
    const gpu_user& me = users_[static_cast<std::size_t>(pe)];
    std::string out = fmt::format("PE {}: GPU {} of node {}", pe, me.bus_id, me.node);
    for (const link_class c :
         {link_class::same_gpu, link_class::nvlink, link_class::unknown, link_class::pcie, link_class::none}) {
      std::string pes;
      std::int32_t best = -1, worst = -1;
      int run_start = -1, run_end = -1;
      const auto flush = [&] {
        if (run_start < 0) return;
        pes += fmt::format("{}{}", pes.empty() ? "" : ", ", run_start);
        if (run_end > run_start) pes += fmt::format("{}{}", run_end == run_start + 1 ? ", " : "-", run_end);
        run_start = run_end = -1;
      };
      for (int other = 0; other < n_pes(); ++other) {
        if (other == pe || link(pe, other) != c) continue;
        if (const std::int32_t r = performance_rank(pe, other); r >= 0) {
          best = best < 0 ? r : std::min(best, r);
          worst = std::max(worst, r);
        }
        if (run_start >= 0 && other == run_end + 1) {
          run_end = other;
          continue;
        }
        flush();
        run_start = run_end = other;
      }
      flush();
      if (pes.empty()) continue;
      out += fmt::format("; {}: {}", to_string(c), pes);
      if (best >= 0)
        out += best == worst ? fmt::format(" (rank {})", best) : fmt::format(" (ranks {}-{})", best, worst);
    }
    return out;
  }

  friend topology make_topology(std::vector<gpu_user> users, std::span<const pair_facts> facts);

private:
  [[nodiscard]] std::size_t index(int a, int b) const noexcept {
    return static_cast<std::size_t>(a) * n_ + static_cast<std::size_t>(b);
  }
  [[nodiscard]] std::vector<int> all_pes() const {
    std::vector<int> pes(n_);
    for (std::size_t i = 0; i < n_; ++i)
      pes[i] = static_cast<int>(i);
    return pes;
  }

  std::size_t n_ = 0;
  bool host_ = false;
  std::vector<gpu_user> users_;
  std::vector<link_class> links_;   // n x n, row a: how PE a reaches each PE
  std::vector<std::int32_t> ranks_; // n x n, the performance ranks
};

//! The topology of the PEs `users` (in PE order, as cuda_heap gathers them for judge_gpu_sharing) from `facts`, n x n
//! in PE-major order: facts[a * n + b] is what PE a's process learned of PE b's GPU. Same node and bus id: same_gpu;
//! another node: none; else classify_link of a's facts, or of b's facts on a when a could not ask (peer access and
//! native atomics are properties of the pair of GPUs, so either side's answer holds for both). Throws
//! errc::invalid_argument when `facts` has not n x n entries.
inline topology make_topology(std::vector<gpu_user> users, std::span<const pair_facts> facts) {
  const std::size_t n = users.size();
  if (facts.size() != n * n) {
    SYMM_THROW(errc::invalid_argument, "make_topology: {} PEs need {} pair facts (n x n), but {} were given", n, n * n,
               facts.size());
  }
  topology t;
  t.n_ = n;
  t.links_.assign(n * n, link_class::same_gpu);
  t.ranks_.assign(n * n, -1);
  for (std::size_t a = 0; a < n; ++a) {
    for (std::size_t b = 0; b < n; ++b) {
      const gpu_user& ua = users[a];
      const gpu_user& ub = users[b];
      link_class& c = t.links_[a * n + b];
      if (ua.node != ub.node) {
        c = link_class::none;
      } else if (ua.bus_id != ub.bus_id) {
        const pair_facts& mine = facts[a * n + b];
        const pair_facts& theirs = facts[b * n + a];
        const pair_facts& told = mine.asked != 0 ? mine : theirs;
        c = classify_link(told);
        t.ranks_[a * n + b] = told.asked != 0 ? told.performance_rank : -1;
      }
    }
  }
  t.users_ = std::move(users);
  return t;
}

//! The PEs of each PE's node, in PE order: nodes[pe] lists the PEs whose node is PE pe's (pe among them).
inline std::vector<std::vector<int>> pes_by_node(const std::vector<gpu_user>& users) {
  std::map<std::string_view, std::vector<int>> on;
  for (const gpu_user& u : users)
    on[u.node].push_back(u.pe);
  std::vector<std::vector<int>> nodes;
  nodes.reserve(users.size());
  for (const gpu_user& u : users)
    nodes.push_back(on[u.node]);
  return nodes;
}

//! How many pair_facts each PE tells at start-up: one per PE of the largest node (only a PE's own node can have peer
//! access, so the PEs tell n x that instead of n x n, which matters to the nvshmem backend's many nodes).
inline std::size_t node_row_width(const std::vector<std::vector<int>>& nodes) {
  std::size_t width = 0;
  for (const auto& node : nodes)
    width = std::max(width, node.size());
  return width;
}

//! The n x n facts make_topology takes from every PE's row over the PEs of its node: rows[a * width + i] is what PE a
//! learned of the i-th PE of its node (nodes as pes_by_node gives them); every other pair is not asked.
inline std::vector<pair_facts>
facts_from_node_rows(const std::vector<std::vector<int>>& nodes, std::span<const pair_facts> rows, std::size_t width) {
  const std::size_t n = nodes.size();
  std::vector<pair_facts> facts(n * n);
  for (std::size_t a = 0; a < n && (a + 1) * width <= rows.size(); ++a) {
    for (std::size_t i = 0; i < nodes[a].size() && i < width; ++i)
      facts[a * n + static_cast<std::size_t>(nodes[a][i])] = rows[a * width + i];
  }
  return facts;
}

} // namespace detail
SYMM_END_NAMESPACE
