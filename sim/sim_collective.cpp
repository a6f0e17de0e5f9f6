#include "sim/sim_collective.h"

#include <string>

#include "core/error.h"
#include "sim/binomial_broadcast.h"
#include "sim/chain_collectives.h"
#include "sim/hierarchical_allreduce.h"
#include "sim/nvls_allreduce.h"
#include "sim/nvls_tree_allreduce.h"
#include "sim/pat_collectives.h"
#include "sim/ring_allreduce.h"
#include "sim/ring_scatter_gather.h"
#include "sim/tree_allreduce.h"

namespace redsim {

const SimCollective& sim_collective_for(const PlanOp& op) {
  static const RingAllreduce ring_allreduce;
  static const TreeAllreduce tree_allreduce;
  static const HierarchicalAllreduce hierarchical_allreduce;
  static const NvlsAllreduce nvls_allreduce;
  static const NvlsTreeAllreduce nvls_tree_allreduce;
  static const RingReduceScatter reduce_scatter;
  static const RingAllgather allgather;
  static const RingReduce reduce;
  static const RingBroadcast broadcast;
  static const BinomialBroadcast binomial_broadcast;
  static const PatCollective pat;
  switch (op.kind) {
    case OpKind::allreduce:
      switch (op.algorithm) {
        case Algorithm::ring:
          return ring_allreduce;
        case Algorithm::tree:
          return tree_allreduce;
        case Algorithm::hierarchical:
          return hierarchical_allreduce;
        case Algorithm::nvls:
          return nvls_allreduce;
        case Algorithm::nvls_tree:
          return nvls_tree_allreduce;
        default:
          break;
      }
      break;
    // NCCL runs these with rings or PAT (one GPU a node, 2.23+); redsim models no other.
    case OpKind::reduce_scatter:
      return op.algorithm == Algorithm::pat ? static_cast<const SimCollective&>(pat) : reduce_scatter;
    case OpKind::allgather:
      return op.algorithm == Algorithm::pat ? static_cast<const SimCollective&>(pat) : allgather;
    case OpKind::reduce:
      return reduce;
    case OpKind::broadcast:
      return op.algorithm == Algorithm::binomial ? static_cast<const SimCollective&>(binomial_broadcast) : broadcast;
    default:
      break;
  }
  throw InputError("", "", "the simulator has no " + std::string(algorithm_name(op.algorithm)) + " algorithm for " +
                               std::string(op_kind_name(op.kind)) + " (op \"" + op.name + "\")");
}

}  // namespace redsim
