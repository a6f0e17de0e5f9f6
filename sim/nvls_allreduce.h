// NVLS allreduce (NVLink SHARP, one node): the NVSwitch reduces and multicasts. Each loop's
// reduce-scatter (every device's slice up, its reduced piece down) overlaps the previous loop's
// allgather (the piece up, every piece down), as NCCL pipelines them; the byte movement is
// collectives' nvls_* arithmetic, shared with the scalable fidelity.
#pragma once
#include "sim/sim_collective.h"

namespace redsim {

class NvlsAllreduce final : public SimCollective {
 public:
  void add_pairs(const PlanOp& op, const ClusterSpec& cluster, RankPairs& pairs) const override;
  TransferTally run(const PlanOp& op, int rank, SimContext& ctx) const override;
};

}  // namespace redsim
