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
class Host;
}

namespace redsim {

using RankPairs = std::set<std::pair<int, int>>;

struct SimPlatform {
  std::vector<simgrid::s4u::Host*> hosts;  // by rank
  static constexpr double kHostSpeedFlops = 1e9;  // compute ops execute duration_s * this
};

// Must be called once, after the Engine exists and before it runs.
SimPlatform build_platform(const ClusterSpec& cluster, const RankPairs& pairs);

}  // namespace redsim
