// A collective algorithm as the exact simulator runs it: which rank pairs it talks over (so the
// platform routes them) and one rank's part, run after every rank has reached the collective.
#pragma once
#include <cstdint>

#include "core/plan.h"
#include "sim/platform.h"
#include "sim/sim_context.h"

namespace redsim {

struct TransferTally {
  std::int64_t bytes_sent = 0;
  std::int64_t bytes_received = 0;
};

class SimCollective {
 public:
  virtual ~SimCollective() = default;
  virtual void add_pairs(const PlanOp& op, const ClusterSpec& cluster, RankPairs& pairs) const = 0;
  virtual TransferTally run(const PlanOp& op, int rank, SimContext& ctx) const = 0;
};

// The algorithm for an op; throws InputError if the simulator has none for its kind/algorithm.
const SimCollective& sim_collective_for(const PlanOp& op);

}  // namespace redsim
