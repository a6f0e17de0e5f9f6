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
using redsim::route_hw;
using redsim::route_latency_s;

// A route that only computed sharing sees (a computed tree's edge): its dense link ids as a range
// of an edge-links array, its latency and NCCL hardware class. Not interned, so it costs no
// route-table entry (a computed tree at 131,072 ranks has millions of edges).
struct EdgeLinks {
  std::uint32_t begin = 0, end = 0;
  double latency_s = 0;
  int hw = 0;
};

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
  // Describes src -> dst without interning the route: appends its dense link ids to `links`.
  EdgeLinks describe_between(int src, int dst, const Fold& fold, std::vector<std::uint32_t>& links);
  const std::vector<Route>& routes() const { return routes_; }
  bool paced(std::uint32_t id) const { return paced_[id] != 0; }
  double latency_s(std::uint32_t id) const { return latency_s_[id]; }
  // NCCL's hardware class of the route (route_hw), kept per route: computed trees ask per edge.
  int hw(std::uint32_t id) const { return hw_[id]; }
  const ClusterSpec& cluster() const { return cluster_; }

  // Every link a route crosses gets a dense id, interned with the route, so sharing
  // computations index arrays instead of hashing link keys per flow (fair_rates over a
  // 131,072-rank tree touches millions of links).
  std::size_t link_count() const { return link_capacity_Bps_.size(); }
  const std::uint32_t* links_begin(std::uint32_t id) const { return route_links_.data() + route_link_begin_[id]; }
  const std::uint32_t* links_end(std::uint32_t id) const { return route_links_.data() + route_link_begin_[id + 1]; }
  double link_capacity_Bps(std::uint32_t link) const { return link_capacity_Bps_[link]; }
  // One slot per link, all ~0u, for renumbering a subset of links; the user puts every slot it
  // sets back to ~0u (the engine is single-threaded, so one scratch serves every user).
  std::vector<std::uint32_t>& link_scratch() const {
    link_scratch_.resize(link_count(), ~0u);
    return link_scratch_;
  }

 private:
  struct Hash {
    std::size_t operator()(const std::vector<std::uint64_t>& v) const;
  };
  const ClusterSpec& cluster_;
  std::vector<Route> routes_;
  std::vector<double> latency_s_;
  std::vector<char> paced_;
  std::vector<int> hw_;
  std::unordered_map<std::vector<std::uint64_t>, std::uint32_t, Hash> ids_;
  std::unordered_map<std::uint64_t, std::uint32_t> link_ids_;
  std::vector<double> link_capacity_Bps_;
  std::vector<std::uint32_t> route_links_;
  std::vector<std::size_t> route_link_begin_{0};
  mutable std::vector<std::uint32_t> link_scratch_;
  void add_route(const Route& route, bool paced);
  std::uint32_t link_id(const LinkRef& l);
};

// The rates (bytes/s) that flows over these routes get when they run together: max-min fair
// sharing weighted as SimGrid's CM02 model weights it (a flow's share on a link is inversely
// proportional to its route's latency; equal weights when latencies are zero), or unweighted.
// Computed by progressive filling: the link that saturates first fixes the rates of its flows,
// and so on. For flows of equal size that start together, the unweighted rates give each flow's
// completion time better than the weighted ones: a link drains its load at full capacity
// whatever the weights, so its last flow ends after (flows x size / capacity).
std::vector<double> fair_rates(const RouteTable& routes, const std::vector<std::uint32_t>& flows, bool weighted = true);
// The same over described edges (links: the array their ranges index).
std::vector<double> fair_rates(const RouteTable& routes, const std::vector<EdgeLinks>& edges,
                               const std::vector<std::uint32_t>& links, bool weighted = true);

// How long one lockstep round takes in which every flow moves `bytes` over its route at once:
// each flow starts moving data after its route latency, and the flows share links as above,
// rates changing as flows start and finish (a small fluid simulation, no SimGrid).
double fluid_round_s(const RouteTable& routes, const std::vector<std::uint32_t>& flows, double bytes);

}  // namespace redsim::scalable
