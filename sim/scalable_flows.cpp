#include "sim/scalable_flows.h"

#include <algorithm>
#include <string>
#include <unordered_map>

#include <simgrid/s4u.hpp>

#include "sim/network.h"

namespace redsim {
namespace sg4 = simgrid::s4u;

namespace {

const char* link_kind_name(LinkKind k) {
  constexpr const char* names[] = {"dev", "pcie", "nic", "leaf", "socket", "nvlink", "gpupcie"};
  return names[static_cast<int>(k)];
}

constexpr double kUncappedBps = 1e18;

sg4::CommPtr start_flow(const scalable::Flow& f, const FlowPlatform& fp) {
  auto comm = sg4::Comm::sendto_init(fp.sources[f.route], fp.sink);
  comm->set_payload_size(static_cast<std::uint64_t>(f.bytes));
  if (auto* pace = fp.pace[f.route]) pace->set_bandwidth(f.rate_cap_Bps > 0 ? f.rate_cap_Bps : kUncappedBps);
  comm->start();
  return comm;
}

// How long a flow took, its protocol's throughput cap included (a transfer lasts at least
// min_transfer_s after the route's latency).
double flow_duration_s(const scalable::Flow& f, const FlowPlatform& fp, const sg4::CommPtr& comm) {
  const double lat = fp.latency_s[f.route];
  const double raw = comm->get_finish_time() - comm->get_start_time();
  double d = std::max(raw, lat + f.min_transfer_s);
  if (f.overlap_latency_s <= 0) return d;
  if (f.overlap_side_by_side) return std::max(d, lat + f.overlap_latency_s);
  const double slices = std::max(1, f.overlap_slices), link_s = raw - lat;
  // A tree's or chain's later chunks: the latencies add to the transfers at the links' rate.
  if (!f.overlap_capped) return std::max(d, lat + f.overlap_latency_s + link_s);
  // A ring's slices: each waits for its transfer a step back. The sender spaces a step's slices
  // a cap-time apart; closer than their transfers, they share the link and each takes longer.
  const double per_slice_s = std::max(std::max(link_s, f.min_transfer_s) / slices,
                                      link_s - (slices - 1) / slices * f.min_transfer_s);
  return std::max(d, lat + f.overlap_latency_s + per_slice_s);
}

// The flows of a with_previous stage (scalable::Stage), started during the stage before it: as
// that stage's last flow starts (or, for a wave counted several laps, `lead_s` before its end),
// so that their route latency passes while the wave's first chunk crosses its last hop. Flows
// marked after_wave start when that stage ends (launch_all).
struct EarlyFlows {
  const scalable::Stage* stage = nullptr;  // null: the next stage does not start early
  double lead_s = 0;                       // the longest route latency among its flows
  std::vector<sg4::CommPtr> comms;         // by flow of the stage; null until started
  bool launched = false;
  void launch(const FlowPlatform& fp) {
    if (!stage || launched) return;
    launched = true;
    comms.resize(stage->flows.size());
    for (std::size_t k = 0; k < comms.size(); ++k)
      if (!stage->flows[k].after_wave) comms[k] = start_flow(stage->flows[k], fp);
  }
  void launch_all(const FlowPlatform& fp) {
    launch(fp);
    for (std::size_t k = 0; k < comms.size(); ++k)
      if (!comms[k]) comms[k] = start_flow(stage->flows[k], fp);
  }
};

// A dataflow stage: each flow starts once the flows it comes after are done; the stage ends
// after its critical path, the sources' reduction times included (on the path only: a flow
// starts as soon as its inputs have arrived).
void run_dataflow(const scalable::Stage& st, const FlowPlatform& fp, EarlyFlows& early, scalable::ChannelRun& run) {
  const double begin = sg4::Engine::get_clock();
  const std::size_t n = st.flows.size();
  std::vector<int> waiting(n, 0);
  std::vector<std::vector<std::uint32_t>> next(n);
  for (std::size_t k = 0; k < n; ++k)
    for (auto a : st.flows[k].after)
      if (a >= 0) {
        waiting[k] += 1;
        next[static_cast<std::size_t>(a)].push_back(static_cast<std::uint32_t>(k));
      }
  std::vector<double> path(n, 0.0);  // arrival time of each flow on the critical path, from begin
  std::vector<sg4::CommPtr> inflight;
  std::vector<std::uint32_t> which;
  std::size_t launched = 0;
  auto launch = [&](std::size_t k) {
    if (++launched == n) early.launch(fp);
    inflight.push_back(start_flow(st.flows[k], fp));
    which.push_back(static_cast<std::uint32_t>(k));
  };
  for (std::size_t k = 0; k < n; ++k)
    if (waiting[k] == 0) launch(k);
  double end = begin;
  while (!inflight.empty()) {
    const auto i = static_cast<std::size_t>(sg4::Comm::wait_any(inflight));
    const auto k = which[i];
    const auto& f = st.flows[k];
    double ready = 0;
    for (auto a : f.after)
      if (a >= 0) ready = std::max(ready, path[static_cast<std::size_t>(a)]);
    path[k] = ready + f.after_extra_s + flow_duration_s(f, fp, inflight[i]) + f.hop_extra_s;
    // The path already holds the flow's one round of protocol latency (hop_extra_s); its post
    // delay holds it too (for plain stages), so it is not charged twice.
    end = std::max(end, begin + path[k] + f.post_delay_s - f.hop_extra_s);
    inflight[i] = inflight.back();
    inflight.pop_back();
    which[i] = which.back();
    which.pop_back();
    for (auto d : next[k])
      if (--waiting[d] == 0) launch(d);
  }
  if (end > sg4::Engine::get_clock()) sg4::this_actor::sleep_until(end);
  run.stage_end_s.push_back(sg4::Engine::get_clock());
  run.round_s.push_back(std::move(path));
}

// A stage whose flows started with the previous one (Stage::with_previous): it ends each flow's
// transfer and post delay after the previous stage did.
void finish_with_previous(const scalable::Stage& st, const scalable::RouteTable& routes, const FlowPlatform& fp,
                          EarlyFlows& early, scalable::ChannelRun& run) {
  const double previous_end = sg4::Engine::get_clock();
  early.launch_all(fp);
  auto& comms = early.comms;
  for (auto& c : comms) c->wait();
  std::vector<double> round_s(st.flows.size());
  double end = previous_end;
  for (std::size_t k = 0; k < st.flows.size(); ++k) {
    const auto& f = st.flows[k];
    const double lat = routes.latency_s(f.route);
    const double took = flow_duration_s(f, fp, comms[k]);
    round_s[k] = scalable::round_time_s(f, lat, took);
    end = std::max(end, previous_end + std::max(0.0, took - lat) + f.post_delay_s);
  }
  early = EarlyFlows{};
  if (end > sg4::Engine::get_clock()) sg4::this_actor::sleep_until(end);
  run.stage_end_s.push_back(sg4::Engine::get_clock());
  run.round_s.push_back(std::move(round_s));
}

// A wave: its flows one after another, each after the previous one and its post delay; a lap
// counts `repeat` times.
void run_wave(const scalable::Stage& st, const FlowPlatform& fp, EarlyFlows& early, scalable::ChannelRun& run) {
  const double wave_start = sg4::Engine::get_clock();
  std::vector<double> round_s;
  for (std::size_t k = 0; k < st.flows.size(); ++k) {
    const auto& f = st.flows[k];
    if (k + 1 == st.flows.size() && st.repeat <= 1) early.launch(fp);
    auto comm = start_flow(f, fp);
    comm->wait();
    const double took = flow_duration_s(f, fp, comm);
    round_s.push_back(took + f.round_extra_s + f.hop_extra_s);
    const double wait = took - (comm->get_finish_time() - comm->get_start_time()) + f.post_delay_s;
    if (wait > 0) sg4::this_actor::sleep_for(wait);
  }
  const double lap = sg4::Engine::get_clock() - wave_start;
  if (st.repeat > 1 && lap > 0) {
    const double end = wave_start + lap * st.repeat;
    if (early.stage) sg4::this_actor::sleep_until(std::max(sg4::Engine::get_clock(), end - early.lead_s));
    early.launch(fp);
    sg4::this_actor::sleep_until(std::max(sg4::Engine::get_clock(), end));
  }
  run.stage_end_s.push_back(sg4::Engine::get_clock());
  run.round_s.push_back(std::move(round_s));
}

}  // namespace

FlowPlatform build_flow_platform(const ClusterSpec& cluster, const scalable::RouteTable& routes) {
  using Dir = sg4::LinkInRoute::Direction;
  FlowPlatform fp;
  auto* zone = sg4::create_star_zone("scalable");
  std::unordered_map<std::uint64_t, sg4::SplitDuplexLink*> links;
  auto link_of = [&](const scalable::LinkRef& l) {
    scalable::LinkRef both = l;
    both.up = true;
    auto it = links.find(both.key());
    if (it != links.end()) return it->second;
    auto* link = zone->create_split_duplex_link(std::string(link_kind_name(l.kind)) + std::to_string(l.index),
                                                link_bandwidth_Bps(cluster, l));
    link->set_latency(link_latency_s(cluster, l));
    link->seal();
    links.emplace(both.key(), link);
    return link;
  };
  for (std::size_t id = 0; id < routes.routes().size(); ++id) {
    auto* host = zone->create_host("f" + std::to_string(id), 1e9);
    std::vector<sg4::LinkInRoute> lr;
    sg4::Link* pace = nullptr;
    if (routes.paced(static_cast<std::uint32_t>(id))) {
      pace = zone->create_link("pace" + std::to_string(id), kUncappedBps);
      pace->seal();
      lr.emplace_back(pace);
    }
    fp.pace.push_back(pace);
    for (const auto& l : routes.routes()[id]) lr.emplace_back(link_of(l), l.up ? Dir::UP : Dir::DOWN);
    zone->add_route(host->get_netpoint(), nullptr, nullptr, nullptr, lr, false);
    fp.sources.push_back(host);
    fp.latency_s.push_back(routes.latency_s(static_cast<std::uint32_t>(id)));
  }
  fp.sink = zone->create_host("sink", 1e9);
  zone->add_route(nullptr, fp.sink->get_netpoint(), nullptr, nullptr, {}, false);
  zone->seal();
  return fp;
}

// Runs one channel's stages: a stage's flows start together; the stage ends when the last flow
// plus its post delay is done; a wave's flows run one after another.
void run_stages(const std::vector<scalable::Stage>& stages, const scalable::RouteTable& routes, const FlowPlatform& fp,
                scalable::ChannelRun& run) {
  run.start_s = sg4::Engine::get_clock();
  EarlyFlows early;
  for (std::size_t i = 0; i < stages.size(); ++i) {
    const auto& st = stages[i];
    if (st.with_previous && i > 0) {
      finish_with_previous(st, routes, fp, early, run);
      continue;
    }
    if (i + 1 < stages.size() && stages[i + 1].with_previous) {
      early.stage = &stages[i + 1];
      for (const auto& f : early.stage->flows) early.lead_s = std::max(early.lead_s, routes.latency_s(f.route));
    }
    if (st.fixed_s >= 0) {
      if (st.fixed_s > 0) sg4::this_actor::sleep_for(st.fixed_s);
      run.stage_end_s.push_back(sg4::Engine::get_clock());
      run.round_s.push_back(st.fixed_round_s);
      continue;
    }
    if (st.sequential) {
      run_wave(st, fp, early, run);
      continue;
    }
    if (st.dataflow) {
      run_dataflow(st, fp, early, run);
      continue;
    }
    std::vector<sg4::CommPtr> comms;
    comms.reserve(st.flows.size());
    for (const auto& f : st.flows) comms.push_back(start_flow(f, fp));
    for (auto& c : comms) c->wait();
    std::vector<double> round_s(st.flows.size());
    double end = sg4::Engine::get_clock();
    for (std::size_t k = 0; k < st.flows.size(); ++k) {
      const auto& f = st.flows[k];
      const double lat = routes.latency_s(f.route);
      const double took = flow_duration_s(f, fp, comms[k]);
      round_s[k] = scalable::round_time_s(f, lat, took);
      end = std::max(end, comms[k]->get_start_time() + took + f.post_delay_s);
    }
    if (end > sg4::Engine::get_clock()) sg4::this_actor::sleep_until(end);
    run.stage_end_s.push_back(sg4::Engine::get_clock());
    run.round_s.push_back(std::move(round_s));
  }
}

}  // namespace redsim
