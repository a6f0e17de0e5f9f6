// The result of one run of a Plan, simulated or measured: the redsim-result format (its inputs,
// the engine, the knobs, the summary and the per-rank per-op Timeline; a measured run adds its
// step times), and the redsim-comparison format of `simulate --strategy all`. This file is the
// one writer (simulate, run, trace import) and the one reader (validate --measured) of them, so
// whatever one command writes the others read. The reader also takes the simpler measured files
// a user makes: an object with step_times_s, or a plain array of step times in seconds.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/cluster.h"
#include "core/knobs.h"
#include "core/plan.h"
#include "core/step_summary.h"
#include "core/timeline.h"
#include "core/atomic_file.h"
#include "core/timeline_json.h"
#include "core/trace.h"

namespace redsim {

// What was run and by whom. The pointers are never null.
struct ResultInputs {
  std::string trace_file;
  const ModelTrace* trace = nullptr;
  std::string cluster_file;  // "" when the cluster is no file (the job a profiler trace came from)
  const ClusterSpec* cluster = nullptr;
  // {"name": "simgrid" | "gloo" | "nccl" | "kineto-import", ...}: the engine and its particulars.
  nlohmann::json engine;
};

// What a real run measured besides the Timeline.
struct Measurement {
  std::vector<double> step_times_s;  // every measured step, per training step
  int median_step = -1;              // index of the step whose Timeline is written; -1: none is
  // The measuring engine's own statements (backend, verification, clock, buffer scale...).
  nlohmann::json details = nlohmann::json::object();
};

// One strategy's run. The pointers are never null.
struct RedsimResult {
  ResultInputs inputs;
  const Knobs* knobs = nullptr;
  const Plan* plan = nullptr;
  const StepSummary* summary = nullptr;
  const Timeline* timeline = nullptr;
  std::vector<int> timeline_ranks;  // the job rank of each Timeline row; empty: row r is rank r
  std::optional<Measurement> measurement;
};

nlohmann::json result_to_json(const RedsimResult& result);
// A simulated result with its timeline in the folded form (redsim-timeline version 3) for
// `ranks` (sorted), streamed to `out`: the size follows the distinct records, not ranks x ops.
void write_folded_result(const RedsimResult& result, const std::vector<int>& ranks, const OutputSink& out);

// `simulate --strategy all`: one entry per strategy, no Timelines.
struct StrategyRun {
  const Knobs* knobs = nullptr;
  const Plan* plan = nullptr;
  const StepSummary* summary = nullptr;
  std::string fidelity;
};
nlohmann::json comparison_result_to_json(const ResultInputs& inputs, const std::vector<StrategyRun>& runs);

// A measured run as validate compares it: step times, and the Timeline when the file has one.
struct MeasuredRun {
  std::vector<double> step_times_s;
  std::optional<RankedTimeline> timeline;
  std::string engine;       // engine.name, "" when the file does not say
  double buffer_scale = 1;  // measurement.buffer_scale: a run that shrank its buffers to fit memory
};

// Accepts a redsim-result of a measured run (measurement.step_times_s, and its timeline), an
// object with step_times_s (and optionally a timeline; other members are ignored), or an array
// of step times in seconds. The timeline must be of `plan`. Bad input: a one-line InputError
// naming the file and JSON path ("m.json: $.step_times_s[1]: expected ...").
MeasuredRun measured_run_from_json(const nlohmann::json& root, const std::string& file, const Plan& plan);
MeasuredRun read_measured_run(const std::string& file, const Plan& plan);

}  // namespace redsim
