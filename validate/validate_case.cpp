#include "validate/validate_case.h"

#include <cmath>
#include <cstdio>
#include <exception>

#include "core/cluster_json.h"
#include "core/compute_reference.h"
#include "core/error.h"
#include "core/json_in.h"
#include "core/knobs_json.h"
#include "core/result_json.h"
#include "core/trace_batch.h"
#include "core/trace_json.h"
#include "collectives/cluster_subset.h"
#include "strategies/strategy.h"
#include "validate/measured_framework_ops.h"

namespace redsim {

namespace {

void check_case(const ValidateCase& c) {
  if (c.knobs.strategy == "all")
    throw InputError("", "", "--strategy all: validate compares one strategy at a time");
  if (!(c.max_error > 0) || !std::isfinite(c.max_error))
    throw InputError("", "", "--max-error: expected a positive fraction (e.g. 0.10), got " +
                                 std::to_string(c.max_error));
  const bool measure = c.run.ranks > 0 || !c.run.testbed.empty();
  if (!c.measured_file.empty() && measure)
    throw InputError("", "", "--measured takes a measurement from a file: give neither --ranks nor --testbed");
  if (c.step_times_only && c.measured_file.empty())
    throw InputError("", "", "--step-times-only compares a measured file's step times: give --measured FILE");
  if (c.measured_file.empty() && (c.run.ranks > 0) == !c.run.testbed.empty())
    throw InputError("", "", "give exactly one of --measured FILE, --ranks N (local run) or --testbed nodes=K,...");
}

// A measured file of the plan, or else of the plan less its framework ops (a profile imported by
// `trace import --kineto` has none; validate/measured_framework_ops.h); the first error otherwise.
MeasuredRun read_measured(const ValidateCase& c, const ModelTrace& trace, const ClusterSpec& cluster, const Plan& plan,
                          const Notes& notes) {
  if (c.step_times_only) {
    nlohmann::json j = JsonIn::parse_file(c.measured_file);
    const bool had_timeline = j.is_object() && j.erase("timeline") > 0;
    MeasuredRun m = measured_run_from_json(j, c.measured_file, plan);
    if (had_timeline) notes("redsim validate: step times only (--step-times-only): the measured timeline is left out");
    return m;
  }
  std::exception_ptr first;
  try {
    return read_measured_run(c.measured_file, plan);
  } catch (const InputError&) {
    first = std::current_exception();
  }
  ClusterSpec bare = cluster;
  bare.framework = FrameworkSpec{};  // whatever framework costs the cluster models: none
  const Plan without = make_strategy(c.knobs.strategy)->plan(trace, bare, c.knobs);
  const auto index = ops_without_framework(plan, without);
  if (!index || without.ops.size() == plan.ops.size()) std::rethrow_exception(first);
  MeasuredRun m;
  try {
    m = read_measured_run(c.measured_file, without);
  } catch (const InputError&) {
    std::rethrow_exception(first);
  }
  if (!m.timeline) std::rethrow_exception(first);
  m.timeline->timeline = with_framework_ops(m.timeline->timeline, plan, *index);
  notes("redsim validate: the measured timeline has no framework ops (the cluster's per-bucket costs): each is "
        "compared as taking no time where the op before it ended");
  return m;
}

// The measurement and where it came from.
std::pair<MeasuredRun, std::string> measure(const ValidateCase& c, const ModelTrace& trace, const ClusterSpec& cluster,
                                            const Plan& plan, const Notes& notes) {
  if (!c.measured_file.empty()) return {read_measured(c, trace, cluster, plan, notes), c.measured_file};
  RunMeasurement run = c.run;
  run.layout = c.layout;  // the run reads the cluster file itself, and takes the same part of it
  run.batch_size = c.batch_size;  // and the trace, at the same batch
  auto m = measure_with_redsim_run(run, c.trace_file, c.cluster_file, cluster, c.knobs, plan,
                                   [&](const std::string& what) { notes("redsim validate: measuring with " + what); });
  return {std::move(m), measurement_source(c.run)};
}

}  // namespace

CaseResult validate_case(const ValidateCase& c, const Predictor& predict, const Notes& notes) {
  std::string batch_note;
  const auto trace = load_trace_at(c.trace_file, c.batch_size, &batch_note);
  check_case(c);
  if (!batch_note.empty()) notes("redsim validate: note: " + batch_note);
  const auto cluster = cluster_for_trace(trace, c.trace_file, cluster_part(load_cluster(c.cluster_file), c.layout),
                                         c.cluster_file, c.run.compute_scale);
  const Plan plan = make_strategy(c.knobs.strategy)->plan(trace, cluster, c.knobs);
  const auto [m, measured_from] = measure(c, trace, cluster, plan, notes);
  if (m.buffer_scale != 1.0) {
    char scale[32];
    std::snprintf(scale, sizeof scale, "%g", m.buffer_scale);
    notes(std::string("warning: the measured run scaled its buffers by ") + scale +
          " (memory); the simulated plan uses the traced sizes, so the comparison is not like for like");
  }
  const Prediction predicted = predict(plan, cluster);
  CaseResult res;
  res.cmp = compare_runs(plan, predicted.timeline, m.step_times_s, m.timeline ? &m.timeline->timeline : nullptr,
                         m.timeline ? m.timeline->ranks : std::vector<int>{});
  res.pass = std::abs(res.cmp.step_error) <= c.max_error;
  res.label = c.label.empty() ? plan.strategy + " " + trace.model + " " + cluster.name : c.label;
  res.out = {{"format", "redsim-validation"},
             {"version", 1},
             {"trace", {{"file", c.trace_file}, {"model", trace.model}, {"batch_size_per_rank", trace.batch_size_per_rank}}},
             {"cluster", {{"file", c.cluster_file}, {"name", cluster.name}, {"world_size", cluster.world_size()}}},
             {"knobs", knobs_to_json(c.knobs)},
             {"simulator", predicted.simulator},
             {"measured",
              {{"from", measured_from}, {"steps", m.step_times_s.size()}, {"has_timeline", m.timeline.has_value()}}},
             {"comparison", comparison_to_json(plan, res.cmp)},
             {"max_error", c.max_error},
             {"verdict", res.pass ? "pass" : "fail"}};
  return res;
}

}  // namespace redsim
