// The scalable fidelity's SimGrid engine: runs a Plan with every collective aggregated into
// long-lived flows (scalable_model.h) over the links of one period of the cluster
// (scalable_topology.h), and replicates the result to every rank of the Timeline.
#pragma once
#include "core/cluster.h"
#include "core/plan.h"
#include "core/timeline.h"
#include "sim/grouped_collectives.h"

namespace redsim {

// Callable once per process (SimGrid 3.32 allows one Engine per process); simulate() forks.
// allow_fold = false simulates the links of the whole cluster (for checking the fold).
// `grouped`: the plan's grouped collectives, simulated per group (sim/grouped_collectives.h).
// Chains (reduce, broadcast) in a world of more than chain_rank_ends_max_ranks ranks record every
// rank ending with the chain (SimOptions::chain_rank_ends_max_ranks).
Timeline simulate_scalable_in_process(const Plan& plan, const ClusterSpec& cluster, bool sim_log, bool allow_fold,
                                      const GroupedTimings& grouped, int chain_rank_ends_max_ranks);

}  // namespace redsim
