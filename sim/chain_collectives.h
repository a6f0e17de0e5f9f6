// Ring reduce and ring broadcast as NCCL runs them: a pipelined chain along the channel's ring,
// ending at the root (reduce) or starting from it (broadcast). With P chunks each round costs
// alpha + S/(P*B), and the chain of N ranks takes N+P-2 rounds.
#pragma once
#include "sim/sim_collective.h"

namespace redsim {

class RingReduce final : public SimCollective {
 public:
  void add_pairs(const PlanOp& op, const ClusterSpec& cluster, RankPairs& pairs) const override;
  TransferTally run(const PlanOp& op, int rank, SimContext& ctx) const override;
};

class RingBroadcast final : public SimCollective {
 public:
  void add_pairs(const PlanOp& op, const ClusterSpec& cluster, RankPairs& pairs) const override;
  TransferTally run(const PlanOp& op, int rank, SimContext& ctx) const override;
};

}  // namespace redsim
