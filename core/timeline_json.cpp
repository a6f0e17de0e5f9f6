#include "core/timeline_json.h"

#include <cmath>

#include "core/units.h"

namespace redsim {

using nlohmann::json;

json timeline_to_json(const Plan& plan, const Timeline& tl) {
  json ranks = json::array();
  for (int r = 0; r < tl.world_size; ++r) {
    json ops = json::array();
    for (std::size_t i = 0; i < tl.op_count; ++i) {
      const auto& t = tl.at(r, i);
      json o = {{"op", i}, {"ready_s", t.ready_s}, {"start_s", t.start_s}, {"end_s", t.end_s}};
      if (op_kind_is_collective(plan.ops[i].kind)) {
        o["bytes_sent"] = t.bytes_sent;
        o["bytes_received"] = t.bytes_received;
      }
      ops.push_back(std::move(o));
    }
    ranks.push_back({{"rank", r}, {"ops", std::move(ops)}});
  }
  return {{"format", "redsim-timeline"}, {"version", 1}, {"source", tl.source}, {"world_size", tl.world_size},
          {"ranks", std::move(ranks)}};
}

json summary_to_json(const Plan& plan, const StepSummary& s) {
  json colls = json::array();
  for (const auto& c : s.collectives) {
    const auto& op = plan.ops[c.op];
    json o = {{"op", c.op},           {"name", op.name},          {"kind", op_kind_name(op.kind)},
              {"bytes", c.bytes},     {"tensors", c.tensors},     {"start_s", c.start_s},
              {"end_s", c.end_s},     {"algbw_GBps", c.algbw_GBps}, {"busbw_GBps", c.busbw_GBps}};
    if (c.bucket >= 0) o["bucket"] = c.bucket;
    o["algorithm"] = algorithm_name(op.algorithm);
    if (op.protocol) o["protocol"] = protocol_name(*op.protocol);
    o["channels"] = op.channels;
    colls.push_back(std::move(o));
  }
  return {{"step_time_s", s.step_time_s},
          {"compute_time_s", s.compute_time_s},
          {"comm_time_s", s.comm_time_s},
          {"exposed_comm_s", s.exposed_comm_s},
          {"time_per_sample_s", s.time_per_sample_s},
          {"bytes_sent_per_rank", s.bytes_sent_per_rank},
          {"collectives", std::move(colls)}};
}

json timeline_to_chrome_trace(const Plan& plan, const Timeline& tl) {
  json events = json::array();
  for (int r = 0; r < tl.world_size; ++r) {
    events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", r}, {"tid", 0},
                      {"args", {{"name", "rank " + std::to_string(r)}}}});
    events.push_back({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", r}, {"tid", 0},
                      {"args", {{"sort_index", r}}}});
    for (std::size_t s = 0; s < plan.streams.size(); ++s)
      events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", r}, {"tid", s},
                        {"args", {{"name", plan.streams[s]}}}});
  }
  for (int r = 0; r < tl.world_size; ++r) {
    for (const auto& op : plan.ops) {
      const auto& t = tl.at(r, op.id);
      json args = {{"op", op.id}};
      if (op_kind_is_collective(op.kind)) {
        args["bytes"] = op.bytes;
        args["bytes_sent"] = t.bytes_sent;
        args["channels"] = op.channels;
        args["algorithm"] = algorithm_name(op.algorithm);
        if (op.protocol) args["protocol"] = protocol_name(*op.protocol);
        args["issued_us"] = t.ready_s * kUsPerS;
      }
      events.push_back({{"ph", "X"},
                        {"name", op.name},
                        {"cat", op_kind_name(op.kind)},
                        {"pid", r},
                        {"tid", op.stream},
                        {"ts", t.start_s * kUsPerS},
                        {"dur", (t.end_s - t.start_s) * kUsPerS},
                        {"args", std::move(args)}});
    }
  }
  return {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"},
          {"otherData", {{"producer", "redsim"}, {"source", tl.source}, {"strategy", plan.strategy}}}};
}

}  // namespace redsim
