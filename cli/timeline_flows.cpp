#include "cli/timeline_flows.h"

#include <algorithm>
#include <map>
#include <vector>

#include "core/units.h"

namespace redsim::cli {

namespace {

void flow_events(const Plan& plan, const Timeline& tl, int rank, const EventSink& emit) {
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
      auto flow = [&](std::string_view ph) {
        JsonObjectText e;
        e.str("ph", ph);
        if (ph == "f") e.str("bp", "e");
        return e.str("name", "ready").str("cat", "gradient_ready").integer("id", id).integer("pid", rank);
      };
      emit(flow("s").integer("tid", dep.stream).num("ts", from_us).text());
      emit(flow("f").integer("tid", op.stream).num("ts", to.start_s * kUsPerS).text());
      ++id;
    }
  }
}

void counter_events(const Plan& plan, const Timeline& tl, const std::vector<int>& ranks, const EventSink& emit) {
  for (int r : ranks) {
    std::map<double, std::int64_t> delta;  // time (s) -> change of bytes in flight
    for (const auto& op : plan.ops) {
      if (!op_kind_is_collective(op.kind)) continue;
      const auto& t = tl.at(r, op.id);
      if (t.end_s <= t.start_s) continue;
      delta[t.start_s] += op.bytes;
      delta[t.end_s] -= op.bytes;
    }
    auto counter = [&](double ts_us, std::int64_t bytes) {
      emit(JsonObjectText()
               .str("ph", "C")
               .str("name", "collective bytes in flight")
               .integer("pid", r)
               .num("ts", ts_us)
               .object("args", JsonObjectText().integer("bytes", bytes))
               .text());
    };
    std::int64_t in_flight = 0;
    counter(0.0, 0);
    for (const auto& [t_s, d] : delta) {
      in_flight += d;
      counter(t_s * kUsPerS, in_flight);
    }
  }
}

}  // namespace

void flow_and_counter_events(const Plan& plan, const Timeline& timeline, const std::vector<int>& ranks,
                             const EventSink& emit) {
  if (!ranks.empty()) flow_events(plan, timeline, ranks.front(), emit);
  counter_events(plan, timeline, ranks, emit);
}

}  // namespace redsim::cli
