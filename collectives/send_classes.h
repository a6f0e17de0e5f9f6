// Which link classes carry what a rank sends in a collective: NCCL's NVLink, PCI and NET hops
// (nccl::hop_hw), weighted by the bytes each of the rank's next hops takes in the algorithm the
// Plan recorded, channel by channel (collectives/shapes.h, the shapes both fidelities run). For
// the Perfetto trace's bytes-in-flight counters per link class.
#pragma once
#include <array>
#include <map>
#include <utility>
#include <vector>

#include "collectives/shapes.h"
#include "core/plan.h"

namespace redsim {

// Shares by nccl::Hw (nvlink, pci, net), summing to 1 for a rank that sends, else all 0.
using HwShares = std::array<double, 3>;

class SendClasses {
 public:
  explicit SendClasses(const ClusterSpec& cluster) : cluster_(cluster) {}
  // `op` as the Plan has it, in a world of the cluster's ranks. Exact for rings, chains, trees,
  // groups and hierarchical; NVLSTree counts a device's switch traffic as its slice and its
  // tree traffic as its piece to each tree neighbour.
  HwShares shares(const PlanOp& op, int rank);

 private:
  const ClusterSpec& cluster_;
  std::map<std::pair<int, int>, std::pair<std::vector<int>, std::vector<int>>> rings_;  // order, position
  std::map<std::pair<int, int>, TreeShape> trees_;
  std::map<int, TreeShape> node_trees_;
  // The next rank of channel c's ring, or (in_node) the next device of the rank's node in it.
  int ring_next(int rank, int channel, int channels, bool in_node);
  void add(HwShares& s, int src, int dst, double weight) const;
};

}  // namespace redsim
