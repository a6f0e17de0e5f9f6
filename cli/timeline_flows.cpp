#include "cli/timeline_flows.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <map>
#include <vector>

#include "collectives/send_classes.h"
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

void counter_track(int rank, const std::string& name, const std::map<double, std::int64_t>& delta, const EventSink& emit) {
  auto counter = [&](double ts_us, std::int64_t bytes) {
    emit(JsonObjectText()
             .str("ph", "C")
             .str("name", name)
             .integer("pid", rank)
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

// Per rank: the bytes it contributes to the collectives running at each instant, and the wire
// bytes it sends over each link class (NVLink, PCI, network) while they run, from the hops its
// algorithm takes (collectives/send_classes.h). A class the rank never sends over gets no track.
void counter_events(const Plan& plan, const ClusterSpec& cluster, const Timeline& tl, const std::vector<int>& ranks,
                    const EventSink& emit) {
  static constexpr const char* kHwNames[] = {"nvlink", "pci", "net"};
  SendClasses classes(cluster);
  for (int r : ranks) {
    std::map<double, std::int64_t> delta;  // time (s) -> change of bytes in flight
    std::array<std::map<double, std::int64_t>, 3> by_hw;
    for (const auto& op : plan.ops) {
      if (!op_kind_is_collective(op.kind)) continue;
      const auto& t = tl.at(r, op.id);
      if (t.end_s <= t.start_s) continue;
      delta[t.start_s] += op.bytes;
      delta[t.end_s] -= op.bytes;
      if (t.bytes_sent <= 0 || plan.world_size != cluster.world_size()) continue;
      const auto shares = classes.shares(op, r);
      for (std::size_t h = 0; h < 3; ++h) {
        const auto b = static_cast<std::int64_t>(std::llround(shares[h] * static_cast<double>(t.bytes_sent)));
        if (b == 0) continue;
        by_hw[h][t.start_s] += b;
        by_hw[h][t.end_s] -= b;
      }
    }
    counter_track(r, "collective bytes in flight", delta, emit);
    for (std::size_t h = 0; h < 3; ++h)
      if (!by_hw[h].empty()) counter_track(r, std::string("bytes sent in flight: ") + kHwNames[h], by_hw[h], emit);
  }
}

}  // namespace

void flow_and_counter_events(const Plan& plan, const ClusterSpec& cluster, const Timeline& timeline,
                             const std::vector<int>& ranks, const EventSink& emit) {
  if (!ranks.empty()) flow_events(plan, timeline, ranks.front(), emit);
  counter_events(plan, cluster, timeline, ranks, emit);
}

}  // namespace redsim::cli
