// Builds the SimGrid platform of a cluster: a host per device, split-duplex links for device
// ports, PCIe switch uplinks, NICs and fat-tree leaf uplinks; switches are routers with an
// unlimited backplane. Only the (src, dst) pairs the Plan's collectives use get a route, so the
// platform stays linear in the ranks instead of quadratic.
#pragma once
#include <set>
#include <utility>
#include <vector>

#include "core/cluster.h"

namespace simgrid::s4u {
class Engine;
class Host;
}

namespace redsim {

using RankPairs = std::set<std::pair<int, int>>;

struct SimPlatform {
  std::vector<simgrid::s4u::Host*> hosts;  // by rank
  static constexpr double kHostSpeedFlops = 1e9;  // compute ops execute duration_s * this
};

// Both engines' settings, set before any actor exists: the fluid network model that matches
// alpha-beta formulas exactly (shared/SIMGRID_NOTES.md), and actor contexts. SimGrid's defaults give
// every actor an 8 MiB stack mapped with mmap plus a guard page; a simulation of FSDP on 128
// ranks starts tens of thousands of short actors, and mapping and unmapping their stacks was
// a third of its CPU time (perf). Actors here keep their state on the heap and never recurse,
// so a smaller stack from malloc (no guard page) suffices and is reused between actors.
void configure_engine(simgrid::s4u::Engine& engine);

// Must be called once, after the Engine exists and before it runs.
SimPlatform build_platform(const ClusterSpec& cluster, const RankPairs& pairs);

}  // namespace redsim
