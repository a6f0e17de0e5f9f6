#include "sim/sim_collective.h"

#include <string>

#include "core/error.h"
#include "sim/ring_allreduce.h"

namespace redsim {

const SimCollective& sim_collective_for(const PlanOp& op) {
  static const RingAllreduce ring_allreduce;
  if (op.kind == OpKind::allreduce && op.algorithm == Algorithm::ring) return ring_allreduce;
  throw InputError("", "", "the simulator has no " + std::string(algorithm_name(op.algorithm)) + " algorithm for " +
                               std::string(op_kind_name(op.kind)) + " (op \"" + op.name + "\"); use --algorithm ring");
}

}  // namespace redsim
