// Gloo's broadcast (gloo/broadcast.cc), what PyTorch's ProcessGroupGloo runs for dist.broadcast:
// a binomial tree over virtual ranks (rank - root) mod N. In round i a rank whose low i bits
// are clear sends the whole buffer to the rank i bits up, asynchronously (it does not wait
// before its next round's send), and a rank with bit i set and lower bits clear receives from
// the rank i bits down, waiting for it. So the root's sends share its link, and a rank forwards
// only after it has received everything: no pipelining.
#pragma once
#include "sim/sim_collective.h"

namespace redsim {

class BinomialBroadcast final : public SimCollective {
 public:
  void add_pairs(const PlanOp& op, const ClusterSpec& cluster, RankPairs& pairs) const override;
  TransferTally run(const PlanOp& op, int rank, SimContext& ctx) const override;
};

}  // namespace redsim
