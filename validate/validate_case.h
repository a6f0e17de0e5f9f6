// One validation: simulate a strategy's Plan and compare it with a measurement of the same Plan,
// from a file (`--measured`) or from a `redsim run` validate starts itself. The simulator comes
// in as a Predictor, so validate/ needs neither sim/ nor realexec/ (cli joins them).
#pragma once
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/cluster.h"
#include "core/knobs.h"
#include "core/plan.h"
#include "core/timeline.h"
#include "validate/run_comparison.h"
#include "validate/run_measurement.h"

namespace redsim {

struct ValidateCase {
  std::string label;  // "" = "<strategy> <model> <cluster>"
  std::string trace_file;
  std::string cluster_file;
  Knobs knobs;
  std::string measured_file;  // the measurement from a file, or else
  RunMeasurement run;         // one validate runs (run.ranks > 0 or a run.testbed)
  double max_error = 0.10;    // largest acceptable |step error|
  std::string layout;         // --layout: the part of the cluster the measured run used ("" = all)
  std::int64_t batch_size = 0;  // --batch-size: the trace evaluated at this batch per rank (0 = its own)
  // --step-times-only: compare step times alone, leaving out a measured file's timeline (one of
  // another plan: a profile at another bucket size). Only with measured_file.
  bool step_times_only = false;
};

struct Prediction {
  Timeline timeline;
  nlohmann::json simulator;  // what predicted it, for the report: {"engine": ..., "fidelity": ...}
};
using Predictor = std::function<Prediction(const Plan&, const ClusterSpec&)>;

// What validate says as it goes, a line at a time: that it starts a run, that a measurement is not
// like for like.
using Notes = std::function<void(const std::string&)>;

struct CaseResult {
  std::string label;
  RunComparison cmp;
  bool pass = false;   // |step error| within max_error
  nlohmann::json out;  // the redsim-validation report
};

// Throws InputError for bad input, MeasuredRunFailed when validate's own run fails.
CaseResult validate_case(const ValidateCase& c, const Predictor& predict, const Notes& notes);

}  // namespace redsim
