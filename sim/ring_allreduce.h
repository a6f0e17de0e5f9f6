// Ring allreduce over C channels: each channel is a ring carrying 1/C of the buffer, split into
// N chunks (on an NCCL cluster as NCCL lays them out: collectives' ring_allreduce_chunks), and runs N-1 reduce-scatter steps then N-1 allgather steps; in each step every rank
// sends one chunk to its successor and receives one from its predecessor. On an ideal platform
// this costs 2(N-1)*alpha + 2(N-1)/N * S/B.
#pragma once
#include "sim/sim_collective.h"

namespace redsim {

class RingAllreduce final : public SimCollective {
 public:
  void add_pairs(const PlanOp& op, const ClusterSpec& cluster, RankPairs& pairs) const override;
  TransferTally run(const PlanOp& op, int rank, SimContext& ctx) const override;
};

// Routes every channel's ring (each channel rotates the order inside a node).
void add_channel_ring_pairs(const ClusterSpec& cluster, int channels, RankPairs& pairs);

}  // namespace redsim
