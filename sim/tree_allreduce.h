// Tree allreduce as NCCL runs it: channel c reduces its 1/C of the buffer up the channel's tree
// (collectives/shapes.h: a chain through each node, a binary tree of the nodes, mirrored on odd
// channels) and broadcasts it back down, in pipelined chunks, the way down starting as soon as
// the root has a chunk (NCCL's TreeUpDown), so up and down overlap. A small message costs
// 2 x depth latency terms; on a full binary tree with one chunk each level costs alpha + 2S/B
// each way (two children share their parent's link).
#pragma once
#include "sim/sim_collective.h"

namespace redsim {

class TreeAllreduce final : public SimCollective {
 public:
  void add_pairs(const PlanOp& op, const ClusterSpec& cluster, RankPairs& pairs) const override;
  TransferTally run(const PlanOp& op, int rank, SimContext& ctx) const override;
};

}  // namespace redsim
