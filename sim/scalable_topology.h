// The scalable fidelity's view of the cluster network: the same links as platform.cpp (device
// ports, PCIe switch uplinks, NICs, fat-tree leaf uplinks, all split-duplex) named by value
// rather than built, the route between two ranks, and the fold that maps a large symmetric
// cluster onto the links of one period of it (sim/README.md, "Scalable fidelity").
//
// No SimGrid here: this is plain arithmetic, so the folding and routing rules are testable alone.
#pragma once
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "core/cluster.h"

namespace redsim::scalable {

enum class LinkKind : std::uint8_t { device = 0, pcie_uplink = 1, nic = 2, leaf_uplink = 3 };

// One direction of one split-duplex link. `up` is SimGrid's Direction::UP (towards the switch).
struct LinkRef {
  LinkKind kind = LinkKind::device;
  std::int32_t index = 0;  // device: rank; pcie: node*switches+switch; nic: node*nics+nic; leaf: leaf
  bool up = true;
  std::uint64_t key() const {
    return (static_cast<std::uint64_t>(kind) << 40) | (static_cast<std::uint64_t>(up ? 1 : 0) << 32) |
           static_cast<std::uint32_t>(index);
  }
};
using Route = std::vector<LinkRef>;

// Translation symmetry used to fold the cluster. Shifting every rank by `period_nodes` nodes maps
// each link onto a link of the same kind and capacity and each ring edge onto a ring edge, so
// the traffic of a ring-shaped collective on the whole cluster loads every link of one period
// exactly as it loads the corresponding link of any other period. The fold simulates the links
// of nodes [0, period_nodes) only; an edge that leaves the period wraps around to its start.
struct Fold {
  int period_nodes = 1;
  int period_ranks = 1;
  int nodes = 1;
  bool folds() const { return period_nodes < nodes; }
};

// The period: one node on a star (all nodes alike behind one non-blocking switch), one leaf
// (nodes_per_leaf nodes) on a fat-tree whose leaves are all full, otherwise the whole cluster
// (no folding). `allow` = false never folds (for checking the fold itself).
Fold choose_fold(const ClusterSpec& cluster, bool allow = true);

// The links of the route src -> dst (as platform.cpp routes it), each mapped into the period of
// `fold` (an unfolded Fold leaves indices as they are).
Route route_between(const ClusterSpec& cluster, int src, int dst, const Fold& fold);

// Capacity (bytes/s per direction) and latency (s) of a link, as platform.cpp sets them.
double link_bandwidth_Bps(const ClusterSpec& cluster, LinkKind kind);
double link_latency_s(const ClusterSpec& cluster, LinkKind kind);
double route_latency_s(const ClusterSpec& cluster, const Route& route);

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
