#include "sim/network.h"

#include <algorithm>

#include "core/units.h"

namespace redsim {

Fold choose_fold(const ClusterSpec& c, bool allow) {
  Fold f;
  f.nodes = c.nodes;
  f.period_nodes = c.nodes;
  if (allow && c.nodes > 1) {
    if (c.inter.topology == InterTopology::star) {
      f.period_nodes = 1;
    } else {
      const int npl = c.inter.nodes_per_leaf;
      const int leaves = (c.nodes + npl - 1) / npl;
      if (leaves == 1)
        f.period_nodes = 1;  // no path crosses the spine: alike a star
      else if (c.nodes % npl == 0)
        f.period_nodes = npl;
    }
  }
  f.period_ranks = f.period_nodes * c.devices_per_node;
  return f;
}

Fold unfolded(const ClusterSpec& c) { return choose_fold(c, false); }

namespace {

// NIC links per node: a device with several NICs has them bonded into one link.
int nic_links(const ClusterSpec& c) { return std::min(c.inter.nics_per_node, c.devices_per_node); }
int nic_link_of_local(const ClusterSpec& c, int local) {
  return c.inter.nics_per_node >= c.devices_per_node ? local : c.nic_of_local(local);
}
// The PCIe switch a NIC link sits on (NICs are spread evenly over the switches).
int switch_of_nic_link(const ClusterSpec& c, int link) {
  if (c.inter.nics_per_node >= c.devices_per_node) return c.pcie_switch_of_local(link);
  return link * c.pcie_switches_per_node() / c.inter.nics_per_node;
}

// Up from switch sa to the CPU and down to switch sb, crossing sockets if they differ. `via_host`
// goes up and down even inside one switch (no peer-to-peer: through host memory).
void add_pcie_hops(const ClusterSpec& c, int node, int sa, int sb, bool via_host, Route& r) {
  if (sa == sb && !via_host) return;
  const int switches = c.pcie_switches_per_node(), sockets = c.intra.sockets;
  const bool uplinks = c.intra.pcie_uplink_GBps > 0;
  if (uplinks) r.push_back({LinkKind::pcie_uplink, node * switches + sa, true});
  const int ka = c.socket_of_switch(sa), kb = c.socket_of_switch(sb);
  if (ka != kb && c.intra.socket_link_GBps > 0) {
    r.push_back({LinkKind::socket, node * sockets + ka, true});
    r.push_back({LinkKind::socket, node * sockets + kb, false});
  }
  if (uplinks) r.push_back({LinkKind::pcie_uplink, node * switches + sb, false});
}

void add_intra(const ClusterSpec& c, int node, int la, int lb, Route& r) {
  const int d = c.devices_per_node;
  if (c.intra.fabric == IntraFabric::nvswitch) {
    r.push_back({LinkKind::device, node * d + la, true});
    r.push_back({LinkKind::device, node * d + lb, false});
    return;
  }
  if (c.intra.fabric == IntraFabric::nvlink && c.intra.nvlinks[static_cast<std::size_t>(la)][static_cast<std::size_t>(lb)] > 0) {
    r.push_back({LinkKind::nvlink, node * d * d + std::min(la, lb) * d + std::max(la, lb), la < lb});
    return;
  }
  // PCIe: the device's own link (the fabric's link on a pcie fabric), switches, sockets.
  const bool pcie_fabric = c.intra.fabric == IntraFabric::pcie;
  const bool own = pcie_fabric || c.device.pcie_GBps > 0;
  const LinkKind first = pcie_fabric ? LinkKind::device : LinkKind::gpu_pcie;
  if (own) r.push_back({first, node * d + la, true});
  add_pcie_hops(c, node, c.pcie_switch_of_local(la), c.pcie_switch_of_local(lb), pcie_fabric && !c.intra.p2p, r);
  if (own) r.push_back({first, node * d + lb, false});
}

}  // namespace

Route route_between(const ClusterSpec& c, int src, int dst, const Fold& f) {
  Route route;
  const int d = c.devices_per_node, world = c.world_size();
  if (src >= world || dst >= world) {  // a device to its NVSwitch, or back
    const int rank = src < world ? src : dst;
    route.push_back({LinkKind::device, (c.node_of(rank) % f.period_nodes) * d + c.local_of(rank), src < world});
    return route;
  }
  const int ns = c.node_of(src), nd = c.node_of(dst);
  const int fs = ns % f.period_nodes, fd = nd % f.period_nodes;
  const int la = c.local_of(src), lb = c.local_of(dst);
  if (ns == nd) {
    add_intra(c, fs, la, lb, route);
    return route;
  }
  const int k = nic_links(c);
  const int nic_a = nic_link_of_local(c, la), nic_b = nic_link_of_local(c, lb);
  if (c.device.pcie_GBps > 0 && c.intra.fabric != IntraFabric::pcie) route.push_back({LinkKind::gpu_pcie, fs * d + la, true});
  add_pcie_hops(c, fs, c.pcie_switch_of_local(la), switch_of_nic_link(c, nic_a), false, route);
  route.push_back({LinkKind::nic, fs * k + nic_a, true});
  if (c.inter.topology == InterTopology::fat_tree) {
    const int npl = c.inter.nodes_per_leaf;
    if (ns / npl != nd / npl) {
      route.push_back({LinkKind::leaf_uplink, fs / npl, true});
      route.push_back({LinkKind::leaf_uplink, fd / npl, false});
    }
  }
  route.push_back({LinkKind::nic, fd * k + nic_b, false});
  add_pcie_hops(c, fd, switch_of_nic_link(c, nic_b), c.pcie_switch_of_local(lb), false, route);
  if (c.device.pcie_GBps > 0 && c.intra.fabric != IntraFabric::pcie) route.push_back({LinkKind::gpu_pcie, fd * d + lb, false});
  return route;
}

double link_bandwidth_Bps(const ClusterSpec& c, const LinkRef& l) {
  switch (l.kind) {
    case LinkKind::device:
      return GBps_to_Bps(c.intra.link_bandwidth_GBps);
    case LinkKind::pcie_uplink:
      return GBps_to_Bps(c.intra.pcie_uplink_GBps);
    case LinkKind::socket:
      return GBps_to_Bps(c.intra.socket_link_GBps);
    case LinkKind::nvlink: {
      const int d = c.devices_per_node;
      const int in_node = l.index % (d * d);
      return c.intra.nvlinks[static_cast<std::size_t>(in_node / d)][static_cast<std::size_t>(in_node % d)] *
             GBps_to_Bps(c.intra.link_bandwidth_GBps);
    }
    case LinkKind::gpu_pcie:
      return GBps_to_Bps(c.device.pcie_GBps);
    case LinkKind::nic: {
      const int bonded = c.inter.nics_per_node >= c.devices_per_node ? c.inter.nics_per_node / c.devices_per_node : 1;
      return bonded * gbps_to_Bps(c.inter.nic_bandwidth_gbps);
    }
    case LinkKind::leaf_uplink:
      return c.inter.nodes_per_leaf * c.inter.nics_per_node * gbps_to_Bps(c.inter.nic_bandwidth_gbps) /
             c.inter.oversubscription;
  }
  return 0;
}

double link_latency_s(const ClusterSpec& c, const LinkRef& l) {
  switch (l.kind) {
    case LinkKind::device:
      return us_to_s(c.intra.latency_us) / 2;
    case LinkKind::nvlink:
      return us_to_s(c.intra.latency_us);
    case LinkKind::nic:
      return us_to_s(c.inter.latency_us) / 2;
    case LinkKind::leaf_uplink:
      return us_to_s(c.inter.spine_latency_us) / 2;
    default:
      return 0.0;
  }
}

int route_hw(const ClusterSpec& c, const Route& route) {
  int hw = 0;
  for (const auto& l : route) {
    if (l.kind == LinkKind::nic) return 2;
    if (l.kind == LinkKind::pcie_uplink || l.kind == LinkKind::socket || l.kind == LinkKind::gpu_pcie ||
        (l.kind == LinkKind::device && c.intra.fabric == IntraFabric::pcie))
      hw = 1;
  }
  return hw;
}

double route_latency_s(const ClusterSpec& c, const Route& route) {
  double s = 0;
  for (const auto& l : route) s += link_latency_s(c, l);
  return s;
}

}  // namespace redsim
