// Ring reduce-scatter and ring allgather over C channels: the two halves of ring allreduce,
// each (N-1) steps, costing (N-1)*alpha + (N-1)/N * S/B on an ideal platform. Shards may be
// uneven (op.shard_bytes), e.g. ZeRO buckets that span only some owners; every channel carries
// 1/C of each shard.
#pragma once
#include "sim/sim_collective.h"

namespace redsim {

class RingReduceScatter final : public SimCollective {
 public:
  void add_pairs(const PlanOp& op, const ClusterSpec& cluster, RankPairs& pairs) const override;
  TransferTally run(const PlanOp& op, int rank, SimContext& ctx) const override;
};

class RingAllgather final : public SimCollective {
 public:
  void add_pairs(const PlanOp& op, const ClusterSpec& cluster, RankPairs& pairs) const override;
  TransferTally run(const PlanOp& op, int rank, SimContext& ctx) const override;
};

}  // namespace redsim
