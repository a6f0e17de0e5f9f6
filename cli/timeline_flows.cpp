#include "cli/timeline_flows.h"

#include <algorithm>
#include <map>
#include <vector>

#include "core/units.h"

namespace redsim::cli {

namespace {

void add_flows(nlohmann::json& events, const Plan& plan, const Timeline& tl, int rank) {
  int id = 0;
  for (const auto& op : plan.ops) {
    if (!op_kind_is_collective(op.kind)) continue;
    const auto& to = tl.at(rank, op.id);
    for (auto d : op.deps) {
      const auto& dep = plan.ops[d];
      if (op_kind_is_collective(dep.kind)) continue;  // stream order, not a gradient
      const auto& from = tl.at(rank, d);
      // The start binds to the slice that encloses it: just inside the dependency's end.
      const double from_us = std::max(from.start_s, from.end_s - 1e-9) * kUsPerS;
      events.push_back({{"ph", "s"}, {"name", "ready"}, {"cat", "gradient_ready"}, {"id", id}, {"pid", rank},
                        {"tid", dep.stream}, {"ts", from_us}});
      events.push_back({{"ph", "f"}, {"bp", "e"}, {"name", "ready"}, {"cat", "gradient_ready"}, {"id", id}, {"pid", rank},
                        {"tid", op.stream}, {"ts", to.start_s * kUsPerS}});
      ++id;
    }
  }
}

void add_counters(nlohmann::json& events, const Plan& plan, const Timeline& tl, const std::vector<int>& ranks) {
  for (int r : ranks) {
    std::map<double, std::int64_t> delta;  // time (s) -> change of bytes in flight
    for (const auto& op : plan.ops) {
      if (!op_kind_is_collective(op.kind)) continue;
      const auto& t = tl.at(r, op.id);
      if (t.end_s <= t.start_s) continue;
      delta[t.start_s] += op.bytes;
      delta[t.end_s] -= op.bytes;
    }
    std::int64_t in_flight = 0;
    events.push_back({{"ph", "C"}, {"name", "collective bytes in flight"}, {"pid", r}, {"ts", 0.0},
                      {"args", {{"bytes", 0}}}});
    for (const auto& [t_s, d] : delta) {
      in_flight += d;
      events.push_back({{"ph", "C"}, {"name", "collective bytes in flight"}, {"pid", r}, {"ts", t_s * kUsPerS},
                        {"args", {{"bytes", in_flight}}}});
    }
  }
}

}  // namespace

void add_flows_and_counters(nlohmann::json& chrome_trace, const Plan& plan, const Timeline& timeline,
                            const std::vector<int>& ranks) {
  auto& events = chrome_trace["traceEvents"];
  if (!ranks.empty()) add_flows(events, plan, timeline, ranks.front());
  add_counters(events, plan, timeline, ranks);
}

}  // namespace redsim::cli
