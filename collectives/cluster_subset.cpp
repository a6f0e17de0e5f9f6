#include "collectives/cluster_subset.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include "core/error.h"

namespace redsim {
namespace {

// Part of one node: the first `d` devices, with the PCIe switches, sockets and NICs that serve them.
ClusterSpec part_of_node(const ClusterSpec& c, int d) {
  ClusterSpec s = c;
  s.nodes = 1;
  s.devices_per_node = d;
  auto& in = s.intra;
  if (in.devices_per_pcie_switch >= d) in.devices_per_pcie_switch = 0;
  if (in.devices_per_pcie_switch > 0 && d % in.devices_per_pcie_switch != 0) in.devices_per_pcie_switch = 0;
  const int switches = s.pcie_switches_per_node();
  in.sockets = switches % c.intra.sockets == 0 ? std::min(c.intra.sockets, switches) : 1;
  if (in.fabric == IntraFabric::nvlink) {
    in.nvlinks.resize(static_cast<std::size_t>(d));
    for (auto& row : in.nvlinks) row.resize(static_cast<std::size_t>(d));
  }
  if (d <= 2) in.nvls = false;  // NCCL turns NVLS off with 2 devices or fewer
  s.inter.nics_per_node = std::max(1, c.inter.nics_per_node * d / c.devices_per_node);
  s.name = c.name + " (" + std::to_string(d) + " of " + std::to_string(c.devices_per_node) + " devices)";
  return s;
}

}  // namespace

ClusterSpec cluster_subset(const ClusterSpec& c, int ranks, const std::string& option) {
  const int d = c.devices_per_node, world = c.world_size();
  if (ranks == world) return c;
  if (ranks < 1 || ranks > world)
    throw InputError("", "", option + ": expected 1 to " + std::to_string(world) + " (the cluster's ranks), got " + std::to_string(ranks));
  if (ranks < d) return part_of_node(c, ranks);
  if (ranks % d != 0)
    throw InputError("", "", option + ": expected at most one node's " + std::to_string(d) + " devices or a multiple of " +
                                 std::to_string(d) + " (whole nodes), got " + std::to_string(ranks));
  ClusterSpec s = c;
  s.nodes = ranks / d;
  if (s.inter.topology == InterTopology::fat_tree) s.inter.nodes_per_leaf = std::min(s.inter.nodes_per_leaf, s.nodes);
  s.name = c.name + " (" + std::to_string(s.nodes) + " of " + std::to_string(c.nodes) + " nodes)";
  return s;
}

ClusterSpec cluster_layout(const ClusterSpec& c, int nodes, int devices_per_node) {
  if (nodes < 1 || nodes > c.nodes || devices_per_node < 1 || devices_per_node > c.devices_per_node)
    throw InputError("", "", "a layout within the cluster's " + std::to_string(c.nodes) + " node(s) x " +
                                 std::to_string(c.devices_per_node) + " device(s), got " + std::to_string(nodes) + " x " +
                                 std::to_string(devices_per_node));
  if (devices_per_node == c.devices_per_node) return cluster_subset(c, nodes * devices_per_node);
  ClusterSpec s = part_of_node(c, devices_per_node);
  s.nodes = nodes;
  if (s.inter.topology == InterTopology::fat_tree) s.inter.nodes_per_leaf = std::min(c.inter.nodes_per_leaf, nodes);
  s.name = c.name + " (" + std::to_string(nodes) + " x " + std::to_string(devices_per_node) + ")";
  return s;
}

namespace {

// A whole number from 1 to 1e6 written in plain digits, or nothing.
std::optional<int> small_count(const std::string& s) {
  if (s.empty() || s.size() > 7 || s.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  const int v = std::stoi(s);
  if (v < 1) return std::nullopt;
  return v;
}

}  // namespace

ClusterSpec cluster_part(const ClusterSpec& c, const std::string& layout) {
  if (layout.empty()) return c;
  const auto x = layout.find('x');
  if (x == std::string::npos) {
    if (const auto n = small_count(layout)) return cluster_subset(c, *n, "--layout");
  } else if (const auto nodes = small_count(layout.substr(0, x)), devices = small_count(layout.substr(x + 1));
             nodes && devices) {
    try {
      return cluster_layout(c, *nodes, *devices);
    } catch (const InputError& e) {
      throw InputError("", "", std::string("--layout: expected ") + e.what());
    }
  }
  throw InputError("", "", "--layout: expected N (the cluster's first N ranks) or NODESxDEVICES (e.g. 1x2: two devices of "
                           "one node), got \"" + layout + "\"");
}

ClusterSpec group_cluster(const ClusterSpec& c, int group_size, int group_stride) {
  const int d = c.devices_per_node;
  if (group_size < 1 || group_stride < 1 || static_cast<std::int64_t>(group_size) * group_stride > c.world_size())
    throw InputError("", "", "a group of ranks within the cluster's " + std::to_string(c.world_size()) + ", got " +
                                 std::to_string(group_size) + " ranks " + std::to_string(group_stride) + " apart");
  // Members in the first node the group touches; a regular group has as many in every node.
  const int per_node = group_stride >= d ? 1 : std::min(group_size, (d + group_stride - 1) / group_stride);
  if (group_size % per_node != 0 || (group_stride < d && group_size > per_node && d % group_stride != 0))
    throw InputError("", "", "a group of " + std::to_string(group_size) + " ranks " + std::to_string(group_stride) +
                                 " apart that covers its nodes alike (nodes of " + std::to_string(d) + " devices)");
  ClusterSpec s = cluster_layout(c, group_size / per_node, per_node);
  s.name = c.name + " (a group of " + std::to_string(group_size) + " ranks " + std::to_string(group_stride) + " apart)";
  return s;
}

}  // namespace redsim
