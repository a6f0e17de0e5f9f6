// The cluster's network as both fidelities see it, without SimGrid: the links (device ports,
// PCIe switch uplinks, socket links, NVLink pairs, devices' own PCIe links, NICs, fat-tree leaf
// uplinks; all split-duplex) named by value, and the route between two endpoints. The exact
// fidelity builds one SimGrid link per link named here (platform.cpp); the scalable one folds
// them onto one period of a symmetric cluster (scalable_topology.cpp). One routing rule for both.
//
// Endpoints are ranks [0, world) and, for NVLink SHARP (NVLS), each node's NVSwitch at
// world + node: a device reaches its switch through its own port.
#pragma once
#include <cstdint>
#include <vector>

#include "core/cluster.h"

namespace redsim {

enum class LinkKind : std::uint8_t {
  device = 0,       // a device's port into its node's fabric (NVSwitch port, or PCIe link on a pcie fabric)
  pcie_uplink = 1,  // a PCIe switch's uplink to its CPU
  nic = 2,          // a NIC (a device's NICs bonded into one when it has several)
  leaf_uplink = 3,  // a fat-tree leaf's uplink to the spine
  socket = 4,       // a CPU socket's port into the socket interconnect (UPI, xGMI)
  nvlink = 5,       // the NVLinks between two devices of an nvlink fabric
  gpu_pcie = 6,     // a device's own PCIe link where the fabric is not PCIe (to NICs, host, peers without NVLink)
};

// One direction of one split-duplex link. `up` is SimGrid's Direction::UP (towards the switch,
// or from the lower to the higher device of an NVLink pair).
struct LinkRef {
  LinkKind kind = LinkKind::device;
  std::int32_t index = 0;
  bool up = true;
  std::uint64_t key() const {
    return (static_cast<std::uint64_t>(kind) << 40) | (static_cast<std::uint64_t>(up ? 1 : 0) << 32) |
           static_cast<std::uint32_t>(index);
  }
  static LinkRef from_key(std::uint64_t k) {
    return {static_cast<LinkKind>(k >> 40), static_cast<std::int32_t>(k & 0xffffffffu), ((k >> 32) & 1) != 0};
  }
};
using Route = std::vector<LinkRef>;

// Translation symmetry used to fold the cluster (scalable fidelity). Shifting every rank by
// `period_nodes` nodes maps each link onto a link of the same kind and capacity and each ring
// edge onto a ring edge; the fold keeps the links of nodes [0, period_nodes) only, and an edge
// that leaves the period wraps around to its start.
struct Fold {
  int period_nodes = 1;
  int period_ranks = 1;
  int nodes = 1;
  bool folds() const { return period_nodes < nodes; }
};

// The period: one node on a star, one leaf on a fat-tree whose leaves are all full, otherwise
// the whole cluster. `allow` = false never folds.
Fold choose_fold(const ClusterSpec& cluster, bool allow = true);
Fold unfolded(const ClusterSpec& cluster);

// The endpoint of node m's NVSwitch (NVLS).
inline int switch_endpoint(const ClusterSpec& c, int node) { return c.world_size() + node; }

// The links of the route src -> dst, each mapped into the period of `fold`. A device with
// several NICs sends through all of them as one bonded link (NCCL spreads its channels evenly
// over them).
Route route_between(const ClusterSpec& cluster, int src, int dst, const Fold& fold);

// Capacity (bytes/s per direction) and latency (s) of a link.
double link_bandwidth_Bps(const ClusterSpec& cluster, const LinkRef& link);
double link_latency_s(const ClusterSpec& cluster, const LinkRef& link);
double route_latency_s(const ClusterSpec& cluster, const Route& route);

// The hardware class NCCL's latencies key on for a route: network if it crosses a NIC, PCI if
// it crosses PCIe, a CPU or host memory, else NVLink. 0 NVLink, 1 PCI, 2 network (nccl::Hw).
int route_hw(const ClusterSpec& cluster, const Route& route);

}  // namespace redsim
