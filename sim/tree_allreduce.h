// Tree allreduce, after NCCL's double binary tree: channel c reduces its 1/C of the buffer up a
// binary tree and broadcasts it back down, pipelined in chunks; even channels use a heap-ordered
// tree over the channel's ring order and odd channels the mirrored one, so a rank that is a
// leaf in one tree is an inner node in the other. Depth is floor(log2 N), so a small message
// costs 2*floor(log2 N) latency terms. On a full binary tree with one chunk, each level costs
// alpha + 2S/B (two children share a parent's link).
#pragma once
#include <vector>

#include "sim/sim_collective.h"

namespace redsim {

class TreeAllreduce final : public SimCollective {
 public:
  void add_pairs(const PlanOp& op, const ClusterSpec& cluster, RankPairs& pairs) const override;
  TransferTally run(const PlanOp& op, int rank, SimContext& ctx) const override;
};

// The tree of channel c: ranks in heap order (parent of position p is (p-1)/2).
std::vector<int> tree_order(const ClusterSpec& cluster, int channel, int channels);

}  // namespace redsim
