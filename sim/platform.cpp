#include "sim/platform.h"

#include <string>

#include <simgrid/s4u.hpp>

#include "core/units.h"

namespace redsim {
namespace sg4 = simgrid::s4u;

namespace {
using Dir = sg4::LinkInRoute::Direction;

sg4::SplitDuplexLink* make_link(sg4::NetZone* zone, const std::string& name, double bandwidth_Bps, double latency_s) {
  auto* link = zone->create_split_duplex_link(name, bandwidth_Bps);
  link->set_latency(latency_s);
  link->seal();
  return link;
}
}  // namespace

SimPlatform build_platform(const ClusterSpec& c, const RankPairs& pairs) {
  auto* zone = sg4::create_full_zone("cluster");
  SimPlatform p;
  const int world = c.world_size();
  const int dpn = c.devices_per_node;
  for (int r = 0; r < world; ++r) p.hosts.push_back(zone->create_host("rank" + std::to_string(r), SimPlatform::kHostSpeedFlops));

  // Device ports into the intra-node switch (NVSwitch or PCIe switch).
  std::vector<sg4::SplitDuplexLink*> dev;
  std::vector<sg4::SplitDuplexLink*> pcie_up;  // [node * switches + switch]
  int per_switch = dpn;
  if (dpn > 1) {
    for (int r = 0; r < world; ++r)
      dev.push_back(make_link(zone, "dev" + std::to_string(r), GBps_to_Bps(c.intra.link_bandwidth_GBps),
                              us_to_s(c.intra.latency_us) / 2));
    if (c.intra.fabric == IntraFabric::pcie && c.intra.devices_per_pcie_switch > 0 && c.intra.pcie_uplink_GBps > 0) {
      per_switch = c.intra.devices_per_pcie_switch;
      for (int n = 0; n < c.nodes; ++n)
        for (int s = 0; s < dpn / per_switch; ++s)
          pcie_up.push_back(make_link(zone, "pcie" + std::to_string(n) + "_" + std::to_string(s),
                                      GBps_to_Bps(c.intra.pcie_uplink_GBps), 0.0));
    }
  }
  // NICs, and fat-tree leaf uplinks to the spine.
  std::vector<sg4::SplitDuplexLink*> nic;  // [node * nics + nic]
  std::vector<sg4::SplitDuplexLink*> leaf_up;
  const bool fat_tree = c.nodes > 1 && c.inter.topology == InterTopology::fat_tree;
  if (c.nodes > 1) {
    for (int n = 0; n < c.nodes; ++n)
      for (int k = 0; k < c.inter.nics_per_node; ++k)
        nic.push_back(make_link(zone, "nic" + std::to_string(n) + "_" + std::to_string(k),
                                gbps_to_Bps(c.inter.nic_bandwidth_gbps), us_to_s(c.inter.latency_us) / 2));
    if (fat_tree) {
      const int leaves = (c.nodes + c.inter.nodes_per_leaf - 1) / c.inter.nodes_per_leaf;
      const double up_Bps = c.inter.nodes_per_leaf * c.inter.nics_per_node * gbps_to_Bps(c.inter.nic_bandwidth_gbps) /
                            c.inter.oversubscription;
      for (int l = 0; l < leaves; ++l)
        leaf_up.push_back(make_link(zone, "leaf" + std::to_string(l), up_Bps, us_to_s(c.inter.spine_latency_us) / 2));
    }
  }

  for (const auto& [src, dst] : pairs) {
    std::vector<sg4::LinkInRoute> route;
    const int ns = c.node_of(src), nd = c.node_of(dst);
    if (ns == nd) {
      route.emplace_back(dev[static_cast<std::size_t>(src)], Dir::UP);
      const int ss = c.local_of(src) / per_switch, sd = c.local_of(dst) / per_switch;
      if (!pcie_up.empty() && ss != sd) {
        const int switches = dpn / per_switch;
        route.emplace_back(pcie_up[static_cast<std::size_t>(ns * switches + ss)], Dir::UP);
        route.emplace_back(pcie_up[static_cast<std::size_t>(nd * switches + sd)], Dir::DOWN);
      }
      route.emplace_back(dev[static_cast<std::size_t>(dst)], Dir::DOWN);
    } else {
      const int k = c.inter.nics_per_node;
      route.emplace_back(nic[static_cast<std::size_t>(ns * k + c.nic_of_local(c.local_of(src)))], Dir::UP);
      if (fat_tree) {
        const int ls = ns / c.inter.nodes_per_leaf, ld = nd / c.inter.nodes_per_leaf;
        if (ls != ld) {
          route.emplace_back(leaf_up[static_cast<std::size_t>(ls)], Dir::UP);
          route.emplace_back(leaf_up[static_cast<std::size_t>(ld)], Dir::DOWN);
        }
      }
      route.emplace_back(nic[static_cast<std::size_t>(nd * k + c.nic_of_local(c.local_of(dst)))], Dir::DOWN);
    }
    zone->add_route(p.hosts[static_cast<std::size_t>(src)]->get_netpoint(),
                    p.hosts[static_cast<std::size_t>(dst)]->get_netpoint(), nullptr, nullptr, route, false);
  }
  zone->seal();
  return p;
}

}  // namespace redsim
