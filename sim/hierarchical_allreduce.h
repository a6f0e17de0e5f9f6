// Hierarchical allreduce (Horovod's HOROVOD_HIERARCHICAL_ALLREDUCE, NCCL's intra/inter split):
// reduce-scatter inside each node over its devices, allreduce across nodes among the devices
// that hold the same shard (each through its own NIC), then allgather inside the node. On an
// ideal platform it costs the sum of its three phases:
//   2 (d-1) (a_intra + S/(d B_intra)) + 2 (m-1) (a_inter + S/(d m B_inter))
// for d devices per node and m nodes.
#pragma once
#include "sim/sim_collective.h"

namespace redsim {

class HierarchicalAllreduce final : public SimCollective {
 public:
  void add_pairs(const PlanOp& op, const ClusterSpec& cluster, RankPairs& pairs) const override;
  TransferTally run(const PlanOp& op, int rank, SimContext& ctx) const override;
};

}  // namespace redsim
