// symm/detail/job_layout.hpp: which node each PE runs on, learnt at start-up through the bootstrap, and what follows
// from it: whether the PEs coordinate (barriers, agreement, liveness) through shared memory pages of one node, or over
// the network (detail/net_coordination.hpp) because they span several nodes or met over TCP.
#pragma once

#include <symm/detail/bootstrap/bootstrap.hpp>
#include <symm/detail/env.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

SYMM_BEGIN_NAMESPACE
namespace detail {

enum class coordination : std::uint8_t { automatic = 0, shared = 1, network = 2 };

constexpr std::string_view to_string(coordination c) noexcept {
  switch (c) {
    case coordination::automatic: return "auto";
    case coordination::shared: return "shared";
    case coordination::network: return "network";
  }
  return "?";
}

//! SYMM_COORDINATION: unset or "auto" (shared memory on one node, the network across nodes), "shared" or "network"
//! (forced; "network" on one node is how the tests run the network path).
inline coordination requested_coordination() {
  auto text = get_env("SYMM_COORDINATION");
  if (!text || text->empty() || *text == "auto") return coordination::automatic;
  if (*text == "shared") return coordination::shared;
  if (*text == "network") return coordination::network;
  SYMM_THROW(errc::environment, "SYMM_COORDINATION='{}' is not a coordination mode; use 'auto', 'shared' or 'network'",
             *text);
}

inline constexpr std::size_t max_node_name = 255;

//! This PE's node: SYMM_NODE_NAME when set (a "%d" in it becomes the PE number, so that `SYMM_NODE_NAME=pe%d` makes
//! every PE a node of its own, for tests of the multi-node path on one machine), else the host name.
inline std::string node_name(int pe) {
  if (auto name = get_env("SYMM_NODE_NAME"); name && !name->empty()) {
    if (auto at = name->find("%d"); at != std::string::npos) name->replace(at, 2, std::to_string(pe));
    if (name->size() > max_node_name) {
      SYMM_THROW(errc::environment, "PE {}: SYMM_NODE_NAME='{}' has {} characters; at most {} are allowed", pe, *name,
                 name->size(), max_node_name);
    }
    return *name;
  }
  char host[max_node_name + 1] = {};
  SYMM_TRY_SYS(::gethostname(host, sizeof(host) - 1));
  return host;
}

//! Where the PEs of a job run.
struct job_layout {
  std::vector<std::string> nodes;  //!< node of each PE
  std::vector<std::uint32_t> pids; //!< process id of each PE (on its node)
  int n_nodes = 1;
  coordination mode = coordination::shared; //!< shared or network
};

//! "2 nodes: a (PEs 0, 1), b (PEs 2, 3)"; long lists are cut.
inline std::string describe_nodes(const job_layout& layout) {
  std::vector<std::string> seen;
  std::vector<std::string> members;
  for (std::size_t pe = 0; pe < layout.nodes.size(); ++pe) {
    auto it = std::find(seen.begin(), seen.end(), layout.nodes[pe]);
    std::size_t index = static_cast<std::size_t>(it - seen.begin());
    if (it == seen.end()) {
      seen.push_back(layout.nodes[pe]);
      members.emplace_back();
    }
    members[index] += fmt::format("{}{}", members[index].empty() ? "" : ", ", pe);
  }
  std::string out = fmt::format("{} node{}:", seen.size(), seen.size() == 1 ? "" : "s");
  for (std::size_t i = 0; i < seen.size() && i < 8; ++i)
    out += fmt::format("{} {} (PEs {})", i == 0 ? "" : ",", seen[i], members[i]);
  if (seen.size() > 8) out += ", ...";
  return out;
}

//! How many PEs share PE `pe`'s node.
inline int pes_on_node(const job_layout& layout, int pe) {
  const std::string& node = layout.nodes.at(static_cast<std::size_t>(pe));
  return static_cast<int>(std::count(layout.nodes.begin(), layout.nodes.end(), node));
}

//! PE `pe`'s number among the PEs of its node, in PE order: the local rank when the launcher gives none.
inline int index_on_node(const job_layout& layout, int pe) {
  const std::string& node = layout.nodes.at(static_cast<std::size_t>(pe));
  return static_cast<int>(std::count(layout.nodes.begin(), layout.nodes.begin() + pe, node));
}

//! Collective at start-up: every PE contributes its node name, pid and SYMM_COORDINATION; every PE computes the same
//! layout. Throws, on every PE alike, when the PEs asked for different coordination modes or for shared memory across
//! nodes.
inline job_layout detect_layout(bootstrap& boot) {
  struct identity {
    char node[max_node_name + 1];
    std::uint32_t pid;
    coordination requested;
  } mine{};
  const std::string node = node_name(boot.pe());
  std::memcpy(mine.node, node.data(), node.size());
  mine.pid = static_cast<std::uint32_t>(::getpid());
  mine.requested = requested_coordination();
  auto all = boot.allgather_value(mine);

  job_layout layout;
  bool any_shared = false, any_network = false;
  std::string requests;
  for (std::size_t pe = 0; pe < all.size(); ++pe) {
    layout.nodes.emplace_back(all[pe].node, strnlen(all[pe].node, sizeof(all[pe].node)));
    layout.pids.push_back(all[pe].pid);
    any_shared = any_shared || all[pe].requested == coordination::shared;
    any_network = any_network || all[pe].requested == coordination::network;
    if (all[pe].requested != coordination::automatic) {
      requests += fmt::format("\n  PE {}: SYMM_COORDINATION={}", pe, to_string(all[pe].requested));
    }
  }
  std::vector<std::string> distinct = layout.nodes;
  std::sort(distinct.begin(), distinct.end());
  layout.n_nodes = static_cast<int>(std::unique(distinct.begin(), distinct.end()) - distinct.begin());
  if (any_shared && any_network) {
    SYMM_THROW(errc::environment,
               "PE {}: the PEs asked for different coordination modes; set SYMM_COORDINATION alike "
               "on every PE (or leave it unset):{}",
               boot.pe(), requests);
  }
  const bool needs_network = layout.n_nodes > 1 || boot.over_tcp();
  if (needs_network && any_shared) {
    SYMM_THROW(errc::unsupported,
               "PE {}: SYMM_COORDINATION=shared, but the PEs cannot share memory pages: {}{}; unset "
               "SYMM_COORDINATION (the network is then used)",
               boot.pe(), describe_nodes(layout),
               boot.over_tcp() ? fmt::format(", met over TCP ({})", boot.where()) : std::string{});
  }
  layout.mode = needs_network || any_network ? coordination::network : coordination::shared;
  return layout;
}

} // namespace detail
SYMM_END_NAMESPACE
