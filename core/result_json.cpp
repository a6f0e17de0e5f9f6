#include "core/result_json.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"
#include "core/json_in.h"
#include "core/knobs_json.h"
#include "core/plan_json.h"

namespace redsim {

using nlohmann::json;

namespace {

json inputs_members(const ResultInputs& in) {
  const ClusterSpec& c = *in.cluster;
  json cluster = {{"name", c.name},
                  {"nodes", c.nodes},
                  {"devices_per_node", c.devices_per_node},
                  {"world_size", c.world_size()},
                  {"device", c.device.name}};
  if (!in.cluster_file.empty()) cluster["file"] = in.cluster_file;
  return {{"trace",
           {{"file", in.trace_file},
            {"model", in.trace->model},
            {"params", in.trace->param_count()},
            {"batch_size_per_rank", in.trace->batch_size_per_rank}}},
          {"cluster", std::move(cluster)},
          {"engine", in.engine}};
}

// The plan's memory per rank and, where the cluster gives its device's memory, whether it fits.
json memory_member(const Plan& plan, const ClusterSpec* cluster) {
  json j = memory_to_json(plan.memory);
  if (const std::int64_t device = cluster ? cluster->device_memory_bytes() : 0; device > 0) {
    j["device_memory_bytes"] = device;
    j["fits_device_memory"] = plan.memory.total_bytes() <= device;
  }
  return j;
}

json strategy_members(const Knobs& knobs, const Plan& plan, const StepSummary& summary, const ClusterSpec* cluster) {
  return {{"knobs", knobs_to_json(knobs)},
          {"steps_in_plan", plan.steps},
          {"memory_per_rank", memory_member(plan, cluster)},
          {"summary", summary_to_json(plan, summary)}};
}

json measurement_to_json(const Measurement& m) {
  json j = m.details;
  j["step_times_s"] = m.step_times_s;
  if (m.step_times_s.empty()) return j;
  const auto [lo, hi] = std::minmax_element(m.step_times_s.begin(), m.step_times_s.end());
  j["step_time_min_s"] = *lo;
  j["step_time_max_s"] = *hi;
  j["step_time_mean_s"] = std::accumulate(m.step_times_s.begin(), m.step_times_s.end(), 0.0) /
                          static_cast<double>(m.step_times_s.size());
  if (m.median_step >= 0) {
    j["median_step"] = m.median_step;
    j["step_time_median_s"] = m.step_times_s.at(static_cast<std::size_t>(m.median_step));
  }
  return j;
}

json timeline_member(const RedsimResult& r) {
  if (r.timeline_ranks.empty()) return timeline_to_json(*r.plan, *r.timeline);
  int world = r.plan->world_size;
  for (int rank : r.timeline_ranks) world = std::max(world, rank + 1);
  return timeline_to_json(*r.plan, *r.timeline, r.timeline_ranks, world);
}

}  // namespace

namespace {

json result_without_timeline(const RedsimResult& r) {
  json j = inputs_members(r.inputs);
  j["format"] = "redsim-result";
  j["version"] = 1;
  j.update(strategy_members(*r.knobs, *r.plan, *r.summary, r.inputs.cluster));
  if (r.measurement) j["measurement"] = measurement_to_json(*r.measurement);
  return j;
}

}  // namespace

json result_to_json(const RedsimResult& r) {
  json j = result_without_timeline(r);
  j["timeline"] = timeline_member(r);
  return j;
}

void write_folded_result(const RedsimResult& r, const std::vector<int>& ranks, const OutputSink& out) {
  std::string head = result_without_timeline(r).dump(1);  // "{\n ...\n}": reopened for the timeline
  head.resize(head.size() - 2);
  out(head + ",\n \"timeline\": ");
  write_folded_timeline_json(*r.plan, *r.timeline, ranks, out);
  out("\n}\n");
}

json comparison_result_to_json(const ResultInputs& inputs, const std::vector<StrategyRun>& runs) {
  json strategies = json::array();
  for (const auto& s : runs) {
    strategies.push_back(strategy_members(*s.knobs, *s.plan, *s.summary, inputs.cluster));
    strategies.back()["fidelity"] = s.fidelity;
  }
  json j = inputs_members(inputs);
  j["format"] = "redsim-comparison";
  j["version"] = 1;
  j["strategies"] = std::move(strategies);
  return j;
}

namespace {

std::vector<double> read_step_times(const JsonIn& times) {
  if (!times.raw().is_array() || times.raw().empty()) times.fail("a non-empty array of step times in seconds");
  std::vector<double> out;
  for (const auto& v : times.items()) {
    // 1e9 s (31 years): a bound that keeps every derived error and median finite.
    if (!v.raw().is_number() || !(v.raw().get<double>() > 0) || !(v.raw().get<double>() <= 1e9))
      v.fail("a positive number of seconds (at most 1e9)");
    out.push_back(v.raw().get<double>());
  }
  return out;
}

// Where the step times are: measurement.step_times_s (a redsim-result), step_times_s, or the
// whole file (an array).
JsonIn step_times_node(const JsonIn& root) {
  const json& j = root.raw();
  if (j.is_array()) return root;
  if (j.is_object() && j.contains("measurement")) return root.at("measurement").at("step_times_s");
  if (j.is_object() && j.contains("step_times_s")) return root.at("step_times_s");
  throw InputError(root.file(), "$",
                   "expected a measured result (measurement.step_times_s), an object with step_times_s, or an "
                   "array of step times in seconds");
}

}  // namespace

MeasuredRun measured_run_from_json(const json& j, const std::string& file, const Plan& plan) {
  const JsonIn root(j, "$", file);
  MeasuredRun m;
  if (j.is_object()) {
    if (auto format = root.find("format"); format && format->string() == "redsim-result") {
      if (root.at("version").integer() != 1) root.at("version").fail("version 1");
      if (!j.contains("measurement"))
        throw InputError(file, "$", "expected a measured result (measurement.step_times_s); this redsim-result was "
                                    "simulated, not measured");
    }
  }
  m.step_times_s = read_step_times(step_times_node(root));
  if (!j.is_object()) return m;
  if (auto engine = root.find("engine"); engine && engine->raw().is_object())
    m.engine = engine->string_or("name", "");
  if (auto measurement = root.find("measurement")) m.buffer_scale = measurement->positive_number_or("buffer_scale", 1);
  if (auto timeline = root.find("timeline")) m.timeline = timeline_from_json(*timeline, plan);
  return m;
}

MeasuredRun read_measured_run(const std::string& file, const Plan& plan) {
  return measured_run_from_json(JsonIn::parse_file(file), file, plan);
}

}  // namespace redsim
