// The scalable fidelity's view of the cluster network (sim/network.h names the links and routes
// them for both fidelities): routes interned by value, and max-min fair rates of flows over them
// (sim/README.md, "Scalable fidelity").
//
// No SimGrid here: this is plain arithmetic, so the folding and routing rules are testable alone.
#pragma once
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "core/cluster.h"
#include "sim/network.h"

namespace redsim::scalable {

using redsim::Fold;
using redsim::LinkKind;
using redsim::LinkRef;
using redsim::Route;
using redsim::choose_fold;
using redsim::link_bandwidth_Bps;
using redsim::link_latency_s;
using redsim::route_between;
using redsim::route_latency_s;

// Interns routes: every distinct route gets a small id (in order of first use, so ids are
// deterministic). The engine gives each id one source host whose links are the route.
//
// A `paced` route is never shared: it gets its own id (its own source host) and a pace link of
// its own, whose bandwidth the engine sets to one flow's rate cap before starting it (SimGrid
// 3.32 cannot cap a host-to-host comm's rate).
class RouteTable {
 public:
  explicit RouteTable(const ClusterSpec& cluster) : cluster_(cluster) {}
  std::uint32_t intern(const Route& route, bool paced = false);
  std::uint32_t between(int src, int dst, const Fold& fold, bool paced = false) {
    return intern(route_between(cluster_, src, dst, fold), paced);
  }
  const std::vector<Route>& routes() const { return routes_; }
  bool paced(std::uint32_t id) const { return paced_[id] != 0; }
  double latency_s(std::uint32_t id) const { return latency_s_[id]; }
  const ClusterSpec& cluster() const { return cluster_; }

 private:
  struct Hash {
    std::size_t operator()(const std::vector<std::uint64_t>& v) const;
  };
  const ClusterSpec& cluster_;
  std::vector<Route> routes_;
  std::vector<double> latency_s_;
  std::vector<char> paced_;
  std::unordered_map<std::vector<std::uint64_t>, std::uint32_t, Hash> ids_;
};

// The rates (bytes/s) that flows over these routes get when they run together: max-min fair
// sharing weighted as SimGrid's CM02 model weights it (a flow's share on a link is inversely
// proportional to its route's latency; equal weights when latencies are zero), or unweighted.
// Computed by progressive filling: the link that saturates first fixes the rates of its flows,
// and so on. For flows of equal size that start together, the unweighted rates give each flow's
// completion time better than the weighted ones: a link drains its load at full capacity
// whatever the weights, so its last flow ends after (flows x size / capacity).
std::vector<double> fair_rates(const RouteTable& routes, const std::vector<std::uint32_t>& flows, bool weighted = true);

// How long one lockstep round takes in which every flow moves `bytes` over its route at once:
// each flow starts moving data after its route latency, and the flows share links as above,
// rates changing as flows start and finish (a small fluid simulation, no SimGrid).
double fluid_round_s(const RouteTable& routes, const std::vector<std::uint32_t>& flows, double bytes);

}  // namespace redsim::scalable
