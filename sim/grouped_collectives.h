// Grouped collectives (hsdp's reduce-scatters and all-gathers inside a shard group, allreduces
// across groups): each op's groups are alike, so the op is simulated once, on the part of the
// cluster one group runs on (collectives/cluster_subset.h, group_cluster), at the fidelity of
// the whole simulation; both engines then hold each member of every group for the time its
// place in the group took. What this leaves out: traffic of other collectives that shares a
// link with a group's (e.g. two groups' rings on one oversubscribed uplink) — sim/README.md.
#pragma once
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "core/cluster.h"
#include "core/plan.h"

namespace redsim {

struct SimOptions;

// One grouped op as its group ran it, by member index (group_members order).
struct GroupedTiming {
  std::vector<double> duration_s;  // from the group's start (all members ready) to the member's end
  std::vector<std::int64_t> bytes_sent, bytes_received;
};

using GroupedTimings = std::unordered_map<std::uint32_t, GroupedTiming>;  // by op id

bool plan_has_grouped_collectives(const Plan& plan);

// Simulates every grouped collective of the plan (forks, like simulate()); ops alike in kind,
// size, algorithm and group are simulated once.
GroupedTimings simulate_grouped_collectives(const Plan& plan, const ClusterSpec& cluster, const SimOptions& options);


}  // namespace redsim
