// NCCL's PAT allgather and reduce-scatter (one GPU a node, 2.23+) as the exact simulator runs
// them: each channel's share of every rank's data in ceil(log2 n) rounds, rank to rank
// (collectives/pat_rounds.h). A rank's round starts once its previous round's send and receive
// are done, as a share can travel on only after it has arrived.
#pragma once
#include "sim/sim_collective.h"

namespace redsim {

class PatCollective final : public SimCollective {
 public:
  void add_pairs(const PlanOp& op, const ClusterSpec& cluster, RankPairs& pairs) const override;
  TransferTally run(const PlanOp& op, int rank, SimContext& ctx) const override;
};

}  // namespace redsim
