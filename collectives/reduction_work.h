// The reductions a collective does on a CPU device, as device work. On a CPU rank (Gloo), a
// collective's reductions run on the same cores as the training's compute, so the simulator
// charges them to the device before the network part (a ring reduces in its first half), sharing
// it with compute (sim/interference.h), instead of inside the collective's steps as on a GPU
// (spare SMs).
// Both fidelities charge the same seconds per op.
#pragma once
#include <cstdint>
#include <vector>

#include "core/cluster.h"
#include "core/plan.h"

namespace redsim {

// True when the cluster's collectives reduce on the ranks' own CPUs (a device of no compute
// capability: only ideal collectives run there, core/cluster_json.cpp).
bool reductions_share_cpu(const ClusterSpec& cluster);

// Payload bytes the busiest rank reduces in `op` as the simulator runs it (with `op.algorithm` and
// `op.channels` chosen): a ring's reduce-scatter receives all but its own chunk, a chain toward the
// root receives everything, a tree node receives a copy from each child; 0 for ops that do not
// reduce or a single rank.
std::int64_t reduced_bytes_per_rank(const PlanOp& op, const ClusterSpec& cluster, int world);

// Seconds the busiest rank spends reducing `op` at the device's rate for its element type (0 when
// the rate is unknown).
double reduction_s_per_rank(const PlanOp& op, const ClusterSpec& cluster, int world);

// By op id: the seconds a CPU rank charges its device for each collective's reductions (0 for
// compute ops, grouped collectives, which are timed alone, and every op on a GPU cluster).
std::vector<double> reduction_s_by_op(const Plan& plan, const ClusterSpec& cluster);

}  // namespace redsim
