// Predicted against measured: step time (median and spread of the measured steps), exposed
// communication, and every op's start and end (latest over ranks), for redsim validate.
#pragma once
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/plan.h"
#include "core/statistics.h"  // median_of, which the comparison reports
#include "core/step_summary.h"
#include "core/timeline.h"

namespace redsim {

struct OpComparison {
  std::uint32_t op = 0;
  double predicted_start_s = 0, measured_start_s = 0;  // earliest start over ranks
  double predicted_end_s = 0, measured_end_s = 0;      // latest end over ranks
};

struct RunComparison {
  double predicted_step_s = 0;
  double measured_step_median_s = 0;
  double measured_step_min_s = 0;
  double measured_step_max_s = 0;
  double step_error = 0;  // (predicted - measured median) / measured median
  double predicted_exposed_comm_s = 0;
  double measured_exposed_comm_s = 0;  // NaN-free: 0 when no measured timeline
  bool has_op_timeline = false;
  std::vector<OpComparison> ops;
  // Op errors as fractions of the measured step time: |predicted - measured| / step.
  double median_op_start_error = 0, max_op_start_error = 0;
  double median_op_end_error = 0, max_op_end_error = 0;
};


// measured_timeline may be null (e.g. PyTorch DDP step times only). Per-step values: for plans
// covering several steps (LocalSGD) step times are per training step on both sides.
// measured_ranks: the rank of each row of the measured Timeline, when it covers only some ranks
// (a profiler trace of one rank); ops are then compared on those ranks only. Empty: row r is rank r.
RunComparison compare_runs(const Plan& plan, const Timeline& predicted,
                           const std::vector<double>& measured_step_times_s, const Timeline* measured,
                           const std::vector<int>& measured_ranks = {});

nlohmann::json comparison_to_json(const Plan& plan, const RunComparison& c);

}  // namespace redsim
