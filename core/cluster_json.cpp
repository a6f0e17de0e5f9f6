#include "core/cluster_json.h"

#include <limits>

#include "core/error.h"
#include "core/json_in.h"

namespace redsim {
namespace {

int small_positive_int(const JsonIn& v, std::int64_t max) {
  auto n = v.positive_integer();
  if (n > max) v.fail("a positive integer at most " + std::to_string(max));
  return static_cast<int>(n);
}

}  // namespace

ClusterSpec cluster_from_json(const json& root, const std::string& file) {
  JsonIn j(root, "$", file);
  j.allow_only({"$schema", "format", "version", "name", "source", "nodes", "devices_per_node", "device", "intra_node",
                "inter_node", "collective_launch_us", "collective_launch_us_by_kind"});
  if (j.at("format").string() != "redsim-cluster") j.at("format").fail("\"redsim-cluster\"");
  if (j.at("version").integer() != 1) j.at("version").fail("1");

  ClusterSpec c;
  c.name = j.at("name").nonempty_string();
  c.source = j.string_or("source", "");
  c.nodes = small_positive_int(j.at("nodes"), 1 << 20);
  c.devices_per_node = small_positive_int(j.at("devices_per_node"), 1024);
  if (static_cast<std::int64_t>(c.nodes) * c.devices_per_node > (1 << 22))
    j.at("nodes").fail("at most 4,194,304 devices in all");
  c.collective_launch_us = j.nonnegative_number_or("collective_launch_us", 0.0);
  if (auto by = j.find("collective_launch_us_by_kind")) {
    by->expect_object();
    by->allow_only({"allreduce", "reduce", "reduce_scatter", "allgather", "broadcast"});
    for (OpKind k : {OpKind::allreduce, OpKind::reduce, OpKind::reduce_scatter, OpKind::allgather, OpKind::broadcast})
      if (auto v = by->find(op_kind_name(k))) c.collective_launch_us_by_kind[k] = v->nonnegative_number();
  }

  auto d = j.at("device");
  d.allow_only({"name", "compute_speedup", "memory_GB", "reduce_GBps"});
  c.device.name = d.at("name").nonempty_string();
  c.device.compute_speedup = d.positive_number_or("compute_speedup", 1.0);
  c.device.memory_GB = d.nonnegative_number_or("memory_GB", 0.0);
  c.device.reduce_GBps = d.nonnegative_number_or("reduce_GBps", 0.0);

  if (c.devices_per_node > 1 || j.find("intra_node")) {
    auto in = j.at("intra_node");
    in.allow_only({"fabric", "link_bandwidth_GBps", "latency_us", "devices_per_pcie_switch", "pcie_uplink_GBps"});
    c.intra.fabric = in.at("fabric").one_of({"nvswitch", "pcie"}) == "pcie" ? IntraFabric::pcie : IntraFabric::nvswitch;
    c.intra.link_bandwidth_GBps = in.at("link_bandwidth_GBps").positive_number();
    c.intra.latency_us = in.at("latency_us").nonnegative_number();
    if (c.intra.fabric == IntraFabric::pcie) {
      if (auto dps = in.find("devices_per_pcie_switch")) {
        c.intra.devices_per_pcie_switch = small_positive_int(*dps, c.devices_per_node);
        if (c.devices_per_node % c.intra.devices_per_pcie_switch != 0)
          dps->fail("a divisor of devices_per_node (" + std::to_string(c.devices_per_node) + ")");
      }
      c.intra.pcie_uplink_GBps = in.nonnegative_number_or("pcie_uplink_GBps", 0.0);
    } else {
      for (auto key : {"devices_per_pcie_switch", "pcie_uplink_GBps"})
        if (auto m = in.find(key)) m->fail("no such member for an nvswitch fabric");
    }
  }

  if (c.nodes > 1 || j.find("inter_node")) {
    auto ex = j.at("inter_node");
    ex.allow_only({"topology", "nics_per_node", "nic_bandwidth_gbps", "latency_us", "nodes_per_leaf",
                   "oversubscription", "spine_latency_us"});
    c.inter.topology = ex.at("topology").one_of({"star", "fat-tree"}) == "fat-tree" ? InterTopology::fat_tree
                                                                                      : InterTopology::star;
    c.inter.nics_per_node = small_positive_int(ex.at("nics_per_node"), c.devices_per_node);
    if (c.devices_per_node % c.inter.nics_per_node != 0)
      ex.at("nics_per_node").fail("a divisor of devices_per_node (" + std::to_string(c.devices_per_node) + ")");
    c.inter.nic_bandwidth_gbps = ex.at("nic_bandwidth_gbps").positive_number();
    c.inter.latency_us = ex.at("latency_us").nonnegative_number();
    if (c.inter.topology == InterTopology::fat_tree) {
      c.inter.nodes_per_leaf = small_positive_int(ex.at("nodes_per_leaf"), c.nodes);
      c.inter.oversubscription = ex.positive_number_or("oversubscription", 1.0);
      if (c.inter.oversubscription < 1.0) ex.at("oversubscription").fail("a ratio of at least 1 (downlink:uplink)");
      c.inter.spine_latency_us = ex.nonnegative_number_or("spine_latency_us", 0.0);
    } else {
      for (auto key : {"nodes_per_leaf", "oversubscription", "spine_latency_us"})
        if (auto m = ex.find(key)) m->fail("no such member for a star topology (use \"fat-tree\")");
    }
  }
  return c;
}

ClusterSpec load_cluster(const std::string& file) { return cluster_from_json(JsonIn::parse_file(file), file); }

json cluster_to_json(const ClusterSpec& c) {
  json j;
  j["format"] = "redsim-cluster";
  j["version"] = 1;
  j["name"] = c.name;
  j["source"] = c.source;
  j["nodes"] = c.nodes;
  j["devices_per_node"] = c.devices_per_node;
  j["collective_launch_us"] = c.collective_launch_us;
  if (!c.collective_launch_us_by_kind.empty()) {
    json by = json::object();
    for (const auto& [k, us] : c.collective_launch_us_by_kind) by[std::string(op_kind_name(k))] = us;
    j["collective_launch_us_by_kind"] = by;
  }
  j["device"] = {{"name", c.device.name}, {"compute_speedup", c.device.compute_speedup}, {"memory_GB", c.device.memory_GB},
               {"reduce_GBps", c.device.reduce_GBps}};
  if (c.devices_per_node > 1) {
    json in = {{"fabric", c.intra.fabric == IntraFabric::pcie ? "pcie" : "nvswitch"},
               {"link_bandwidth_GBps", c.intra.link_bandwidth_GBps},
               {"latency_us", c.intra.latency_us}};
    if (c.intra.fabric == IntraFabric::pcie) {
      if (c.intra.devices_per_pcie_switch > 0) in["devices_per_pcie_switch"] = c.intra.devices_per_pcie_switch;
      in["pcie_uplink_GBps"] = c.intra.pcie_uplink_GBps;
    }
    j["intra_node"] = std::move(in);
  }
  if (c.nodes > 1) {
    json ex = {{"topology", c.inter.topology == InterTopology::fat_tree ? "fat-tree" : "star"},
               {"nics_per_node", c.inter.nics_per_node},
               {"nic_bandwidth_gbps", c.inter.nic_bandwidth_gbps},
               {"latency_us", c.inter.latency_us}};
    if (c.inter.topology == InterTopology::fat_tree) {
      ex["nodes_per_leaf"] = c.inter.nodes_per_leaf;
      ex["oversubscription"] = c.inter.oversubscription;
      ex["spine_latency_us"] = c.inter.spine_latency_us;
    }
    j["inter_node"] = std::move(ex);
  }
  return j;
}

}  // namespace redsim
