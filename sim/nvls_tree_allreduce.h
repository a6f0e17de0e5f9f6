// NVLSTree allreduce (several nodes with NVLink SHARP): inside each node the NVSwitch reduces
// (as NVLS) so that each device holds the node's sum of its piece; the pieces of devices with
// the same local index are allreduced across nodes over a binary tree of the nodes (NCCL's tree,
// up and down); the switch multicasts the results back. Loops pipeline the three: a loop's
// piece climbs the tree while the next loop is reduced in the switch.
#pragma once
#include "sim/sim_collective.h"

namespace redsim {

class NvlsTreeAllreduce final : public SimCollective {
 public:
  void add_pairs(const PlanOp& op, const ClusterSpec& cluster, RankPairs& pairs) const override;
  TransferTally run(const PlanOp& op, int rank, SimContext& ctx) const override;
};

}  // namespace redsim
