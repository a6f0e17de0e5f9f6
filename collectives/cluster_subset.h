// A cluster restricted to its first N ranks, as `redsim collective --ranks N` (and nccl-tests
// run on part of a machine) uses it: N devices of one node, or N / devices_per_node whole nodes.
#pragma once
#include <string>

#include "core/cluster.h"

namespace redsim {

// Throws InputError, naming `option`, when N is neither at most one node's devices nor a whole
// number of nodes the cluster has.
ClusterSpec cluster_subset(const ClusterSpec& cluster, int ranks, const std::string& option = "--ranks");

// The first `devices_per_node` devices of each of the first `nodes` nodes (a job placed as an
// nccl-tests log says it ran). Throws InputError when the cluster has fewer of either.
ClusterSpec cluster_layout(const ClusterSpec& cluster, int nodes, int devices_per_node);

// `--layout` of simulate, tune, run and validate: "" (the whole cluster), "N" (its first N ranks, as
// cluster_subset) or "NODESxDEVICES" (as cluster_layout), e.g. "1x2" for two devices of one node:
// the part of a cluster file a profiled or measured run used. Throws InputError naming --layout.
ClusterSpec cluster_part(const ClusterSpec& cluster, const std::string& layout);

// The part of the cluster one group of a grouped collective runs on (hsdp: PlanOp::group_size
// ranks spaced group_stride apart): the devices the group has in each node, times the nodes it
// spans. Groups are alike, so each runs as this cluster does. Throws InputError when the group
// does not lie on the cluster regularly (the same number of members in each node it touches).
ClusterSpec group_cluster(const ClusterSpec& cluster, int group_size, int group_stride);

}  // namespace redsim
