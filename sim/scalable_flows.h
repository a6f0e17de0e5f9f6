// The scalable fidelity's SimGrid side (sim/scalable_model.h builds the stages): a platform
// where each interned route is a host's uplinks to one sink, and the runner of one channel's
// stages over it.
#pragma once
#include <vector>

#include <simgrid/forward.h>

#include "core/cluster.h"
#include "sim/scalable_model.h"

namespace redsim {

// The SimGrid side: a star zone where each interned route is the uplink list of its own source
// host, and every flow ends at one sink host that has no links of its own. Memory grows with
// the routes used, not with the square of the ranks as a full routing table would.
struct FlowPlatform {
  std::vector<simgrid::s4u::Host*> sources;  // by route id
  std::vector<simgrid::s4u::Link*> pace;  // by route id: the pace link of a paced route, else null
  std::vector<double> latency_s;         // by route id
  simgrid::s4u::Host* sink = nullptr;
};

FlowPlatform build_flow_platform(const ClusterSpec& cluster, const scalable::RouteTable& routes);

// Runs one channel's stages in the calling actor and records what they did in `run`.
void run_stages(const std::vector<scalable::Stage>& stages, const scalable::RouteTable& routes, const FlowPlatform& fp,
                scalable::ChannelRun& run);

}  // namespace redsim
