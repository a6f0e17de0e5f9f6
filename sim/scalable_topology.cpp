#include "sim/scalable_topology.h"

#include <limits>
#include <queue>

#include "core/units.h"

namespace redsim::scalable {

std::size_t RouteTable::Hash::operator()(const std::vector<std::uint64_t>& v) const {
  std::uint64_t h = 1469598103934665603ULL;
  for (auto x : v) h = (h ^ x) * 1099511628211ULL;
  return static_cast<std::size_t>(h);
}

void RouteTable::add_route(const Route& route, bool paced) {
  routes_.push_back(route);
  latency_s_.push_back(route_latency_s(cluster_, route));
  hw_.push_back(route_hw(cluster_, route));
  paced_.push_back(paced ? 1 : 0);
  for (const auto& l : route) route_links_.push_back(link_id(l));
  route_link_begin_.push_back(route_links_.size());
}

std::uint32_t RouteTable::link_id(const LinkRef& l) {
  auto [it, fresh] = link_ids_.emplace(l.key(), static_cast<std::uint32_t>(link_capacity_Bps_.size()));
  if (fresh) link_capacity_Bps_.push_back(link_bandwidth_Bps(cluster_, l));
  return it->second;
}

EdgeLinks RouteTable::describe_between(int src, int dst, const Fold& fold, std::vector<std::uint32_t>& links) {
  const Route route = route_between(cluster_, src, dst, fold);
  EdgeLinks e;
  e.begin = static_cast<std::uint32_t>(links.size());
  for (const auto& l : route) links.push_back(link_id(l));
  e.end = static_cast<std::uint32_t>(links.size());
  e.latency_s = route_latency_s(cluster_, route);
  e.hw = route_hw(cluster_, route);
  return e;
}

std::uint32_t RouteTable::intern(const Route& route, bool paced) {
  const auto id = static_cast<std::uint32_t>(routes_.size());
  if (paced) {
    add_route(route, true);
    return id;
  }
  std::vector<std::uint64_t> key;
  key.reserve(route.size());
  for (const auto& l : route) key.push_back(l.key());
  auto it = ids_.find(key);
  if (it != ids_.end()) return it->second;
  add_route(route, false);
  ids_.emplace(std::move(key), id);
  return id;
}

namespace {

// Weighted max-min sharing among a fixed set of flows, re-solvable for any subset of them.
// Flows and links are held as two compressed adjacency arrays (flow -> its links, link -> its
// flows) over links renumbered densely for this set, so building one costs no allocation per
// flow or link.
class FairShare {
 public:
  FairShare(const RouteTable& routes, const std::vector<std::uint32_t>& flows, bool weighted = true)
      : weight_(flows.size()) {
    std::vector<double> latency_s(flows.size());
    for (std::size_t f = 0; f < flows.size(); ++f) latency_s[f] = routes.latency_s(flows[f]);
    set_weights(latency_s, weighted);
    index_links(routes, flows.size(), [&](std::size_t f) {
      return std::make_pair(routes.links_begin(flows[f]), routes.links_end(flows[f]));
    });
  }
  FairShare(const RouteTable& routes, const std::vector<EdgeLinks>& edges, const std::vector<std::uint32_t>& links,
            bool weighted)
      : weight_(edges.size()) {
    std::vector<double> latency_s(edges.size());
    for (std::size_t f = 0; f < edges.size(); ++f) latency_s[f] = edges[f].latency_s;
    set_weights(latency_s, weighted);
    index_links(routes, edges.size(), [&](std::size_t f) {
      return std::make_pair(links.data() + edges[f].begin, links.data() + edges[f].end);
    });
  }

  // Progressive filling over the flows with active[f] set; the others get 0.
  std::vector<double> rates(const std::vector<char>& active) const {
    const std::size_t nf = weight_.size();
    std::vector<double> rate(nf, 0.0), remaining = capacity_, wsum(capacity_.size(), 0.0);
    for (std::size_t f = 0; f < nf; ++f)
      if (active[f])
        for (auto i = flow_begin_[f]; i < flow_begin_[f + 1]; ++i) wsum[flow_links_[i]] += weight_[f];
    std::vector<char> frozen(nf, 0);
    using Entry = std::pair<double, std::uint32_t>;  // (level = remaining / weight, link)
    std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
    for (std::uint32_t l = 0; l < capacity_.size(); ++l)
      if (wsum[l] > 0) heap.emplace(remaining[l] / wsum[l], l);
    while (!heap.empty()) {
      auto [x, l] = heap.top();
      heap.pop();
      if (wsum[l] <= 1e-300 || x != remaining[l] / wsum[l]) continue;  // done or stale
      for (auto j = link_begin_[l]; j < link_begin_[l + 1]; ++j) {
        const auto f = link_flows_[j];
        if (!active[f] || frozen[f]) continue;
        frozen[f] = 1;
        rate[f] = weight_[f] * x;
        for (auto i = flow_begin_[f]; i < flow_begin_[f + 1]; ++i) {
          const auto m = flow_links_[i];
          remaining[m] = std::max(0.0, remaining[m] - rate[f]);
          wsum[m] -= weight_[f];
          if (m != l && wsum[m] > 1e-300) heap.emplace(remaining[m] / wsum[m], m);
        }
      }
      wsum[l] = 0;
    }
    return rate;
  }

 private:
  void set_weights(const std::vector<double>& latency_s, bool weighted) {
    bool any_zero = !weighted;
    for (double l : latency_s) any_zero = any_zero || l <= 0;
    for (std::size_t f = 0; f < latency_s.size(); ++f) weight_[f] = any_zero ? 1.0 : 1.0 / latency_s[f];
  }

  // links_of(f): flow f's dense link ids as a [begin, end) pair of pointers.
  template <class LinksOf>
  void index_links(const RouteTable& routes, std::size_t flows, const LinksOf& links_of) {
    constexpr std::uint32_t kNone = ~0u;
    auto& local = routes.link_scratch();
    std::vector<std::uint32_t> touched;
    flow_begin_.assign(flows + 1, 0);
    for (std::size_t f = 0; f < flows; ++f) {
      const auto [first, last] = links_of(f);
      for (auto g = first; g != last; ++g) {
        if (local[*g] == kNone) {
          local[*g] = static_cast<std::uint32_t>(capacity_.size());
          capacity_.push_back(routes.link_capacity_Bps(*g));
          touched.push_back(*g);
        }
        flow_links_.push_back(local[*g]);
      }
      flow_begin_[f + 1] = flow_links_.size();
    }
    for (auto g : touched) local[g] = kNone;
    link_begin_.assign(capacity_.size() + 1, 0);
    for (auto l : flow_links_) ++link_begin_[l + 1];
    for (std::size_t l = 0; l < capacity_.size(); ++l) link_begin_[l + 1] += link_begin_[l];
    link_flows_.resize(flow_links_.size());
    std::vector<std::size_t> fill(link_begin_.begin(), link_begin_.end() - 1);
    for (std::size_t f = 0; f < flows; ++f)  // flows in order per link, as before
      for (auto i = flow_begin_[f]; i < flow_begin_[f + 1]; ++i)
        link_flows_[fill[flow_links_[i]]++] = static_cast<std::uint32_t>(f);
  }

  std::vector<double> weight_, capacity_;
  std::vector<std::size_t> flow_begin_, link_begin_;
  std::vector<std::uint32_t> flow_links_, link_flows_;
};

}  // namespace

std::vector<double> fair_rates(const RouteTable& routes, const std::vector<std::uint32_t>& flows, bool weighted) {
  return FairShare(routes, flows, weighted).rates(std::vector<char>(flows.size(), 1));
}

std::vector<double> fair_rates(const RouteTable& routes, const std::vector<EdgeLinks>& edges,
                               const std::vector<std::uint32_t>& links, bool weighted) {
  return FairShare(routes, edges, links, weighted).rates(std::vector<char>(edges.size(), 1));
}

double fluid_round_s(const RouteTable& routes, const std::vector<std::uint32_t>& flows, double bytes) {
  const std::size_t nf = flows.size();
  if (nf == 0) return 0;
  FairShare share(routes, flows);
  std::vector<double> left(nf, bytes), start(nf);
  for (std::size_t f = 0; f < nf; ++f) start[f] = routes.latency_s(flows[f]);
  double t = 0, last = 0;
  std::size_t done = 0;
  std::vector<char> active(nf, 0), finished(nf, 0);
  const double eps = 1e-15;
  while (done < nf) {
    double next_start = std::numeric_limits<double>::infinity();
    bool any = false;
    for (std::size_t f = 0; f < nf; ++f) {
      if (finished[f]) continue;
      active[f] = start[f] <= t + eps ? 1 : 0;
      if (active[f] && left[f] <= 0) {  // nothing to move: done once started
        finished[f] = 1, active[f] = 0, ++done, last = std::max(last, start[f]);
        continue;
      }
      any = any || active[f];
      if (!active[f]) next_start = std::min(next_start, start[f]);
    }
    if (done == nf) break;
    if (!any) {
      t = next_start;
      continue;
    }
    const auto rate = share.rates(active);
    double dt = next_start - t;
    for (std::size_t f = 0; f < nf; ++f)
      if (active[f] && rate[f] > 0) dt = std::min(dt, left[f] / rate[f]);
    for (std::size_t f = 0; f < nf; ++f) {
      if (!active[f]) continue;
      left[f] -= rate[f] * dt;
      if (left[f] <= bytes * 1e-9) {
        finished[f] = 1, active[f] = 0, ++done;
        last = std::max(last, t + dt);
      }
    }
    t += dt;
  }
  return last;
}

}  // namespace redsim::scalable
