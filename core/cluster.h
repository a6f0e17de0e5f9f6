// The modelled cluster: nodes of devices, an intra-node fabric, NICs and an inter-node
// topology (see configs/README.md). Ranks are numbered node-major: rank = node * devices_per_node + local.
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "core/plan.h"

namespace redsim {

enum class IntraFabric { nvswitch, pcie };
enum class InterTopology { star, fat_tree };

struct DeviceSpec {
  std::string name;
  double compute_speedup = 1.0;  // traced compute durations are divided by this
  double memory_GB = 0;          // device memory, decimal GB (0 = unknown)
  // Bytes per second a device reduces (reads two operands, writes one) inside a collective;
  // 0 = not modelled (reduction is free).
  double reduce_GBps = 0;
};

struct IntraNodeSpec {
  IntraFabric fabric = IntraFabric::nvswitch;
  double link_bandwidth_GBps = 0;  // per device, per direction
  double latency_us = 0;           // one-way, device to device
  // PCIe only: devices share a switch whose uplink to the CPU root complex is the
  // bottleneck for traffic between switches.
  int devices_per_pcie_switch = 0;  // 0 = all devices on one switch
  double pcie_uplink_GBps = 0;      // per direction; 0 = not a bottleneck
};

struct InterNodeSpec {
  InterTopology topology = InterTopology::star;
  int nics_per_node = 0;
  double nic_bandwidth_gbps = 0;  // per NIC, per direction, as marketed (Gb/s)
  double latency_us = 0;          // one-way, NIC to NIC through one switch
  // fat-tree only: nodes under one leaf switch, and the leaf's downlink:uplink ratio.
  int nodes_per_leaf = 0;
  double oversubscription = 1.0;
  double spine_latency_us = 0;  // extra one-way latency for crossing the spine
};

struct ClusterSpec {
  std::string name;
  std::string source;  // where the figures come from
  int nodes = 1;
  int devices_per_node = 1;
  DeviceSpec device;
  IntraNodeSpec intra;
  InterNodeSpec inter;
  double collective_launch_us = 0;  // per-collective software overhead (launch, setup)
  // Per-kind overrides of collective_launch_us (calibrate fits one per collective: a library's
  // allreduce and its reduce need not cost the same to set up).
  std::map<OpKind, double> collective_launch_us_by_kind;
  double launch_us(OpKind kind) const {
    const auto it = collective_launch_us_by_kind.find(kind);
    return it != collective_launch_us_by_kind.end() ? it->second : collective_launch_us;
  }

  int world_size() const { return nodes * devices_per_node; }
  int node_of(int rank) const { return rank / devices_per_node; }
  int local_of(int rank) const { return rank % devices_per_node; }
  // The NIC a device sends through: devices are split evenly over NICs (rail-style).
  int nic_of_local(int local) const { return local * inter.nics_per_node / devices_per_node; }
};

}  // namespace redsim
