#include "validate/run_comparison.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace redsim {

namespace {
// Earliest start and latest end over the given rows.
std::pair<double, double> op_span(const Timeline& tl, std::uint32_t op, const std::vector<int>& rows) {
  double start = std::numeric_limits<double>::infinity(), end = 0;
  for (int r : rows) {
    start = std::min(start, tl.at(r, op).start_s);
    end = std::max(end, tl.at(r, op).end_s);
  }
  return {start, end};
}

std::vector<int> all_rows(const Timeline& tl) {
  std::vector<int> rows(static_cast<std::size_t>(tl.world_size));
  for (int r = 0; r < tl.world_size; ++r) rows[static_cast<std::size_t>(r)] = r;
  return rows;
}

// The predicted rows to compare with the measured ones: the same ranks.
std::vector<int> predicted_rows(const Timeline& predicted, const Timeline& measured, const std::vector<int>& ranks) {
  if (ranks.empty()) {
    if (measured.world_size != predicted.world_size)
      throw std::invalid_argument("the measured timeline is not of this plan (world size or op count differ)");
    return all_rows(predicted);
  }
  if (ranks.size() != static_cast<std::size_t>(measured.world_size))
    throw std::invalid_argument("the measured timeline's rows and ranks differ in number");
  for (int r : ranks)
    if (r < 0 || r >= predicted.world_size)
      throw std::invalid_argument("the measured timeline has rank " + std::to_string(r) + ", not in the plan");
  return ranks;
}
}  // namespace

RunComparison compare_runs(const Plan& plan, const Timeline& predicted, const std::vector<double>& measured_steps,
                           const Timeline* measured, const std::vector<int>& measured_ranks) {
  if (measured_steps.empty()) throw std::invalid_argument("no measured step times to compare with");
  RunComparison c;
  const auto ps = summarize(plan, predicted);
  c.predicted_step_s = ps.step_time_s;
  c.predicted_exposed_comm_s = ps.exposed_comm_s;
  c.measured_step_median_s = median_of(measured_steps);
  c.measured_step_min_s = *std::min_element(measured_steps.begin(), measured_steps.end());
  c.measured_step_max_s = *std::max_element(measured_steps.begin(), measured_steps.end());
  c.step_error = (c.predicted_step_s - c.measured_step_median_s) / c.measured_step_median_s;
  if (measured == nullptr) return c;
  if (measured->op_count != plan.ops.size())
    throw std::invalid_argument("the measured timeline is not of this plan (world size or op count differ)");
  const std::vector<int> predicted_at = predicted_rows(predicted, *measured, measured_ranks);
  const std::vector<int> measured_at = all_rows(*measured);
  c.has_op_timeline = true;
  c.measured_exposed_comm_s = summarize(plan, *measured).exposed_comm_s;
  // Op times compare against the measured window the plan covers (steps x per-step time).
  const double window = c.measured_step_median_s * plan.steps;
  std::vector<double> start_err, end_err;
  for (const auto& op : plan.ops) {
    OpComparison o;
    o.op = op.id;
    std::tie(o.predicted_start_s, o.predicted_end_s) = op_span(predicted, op.id, predicted_at);
    std::tie(o.measured_start_s, o.measured_end_s) = op_span(*measured, op.id, measured_at);
    start_err.push_back(std::fabs(o.predicted_start_s - o.measured_start_s) / window);
    end_err.push_back(std::fabs(o.predicted_end_s - o.measured_end_s) / window);
    c.ops.push_back(o);
  }
  c.median_op_start_error = median_of(start_err);
  c.max_op_start_error = *std::max_element(start_err.begin(), start_err.end());
  c.median_op_end_error = median_of(end_err);
  c.max_op_end_error = *std::max_element(end_err.begin(), end_err.end());
  return c;
}

nlohmann::json comparison_to_json(const Plan& plan, const RunComparison& c) {
  nlohmann::json j = {{"predicted_step_s", c.predicted_step_s},
                      {"measured_step_median_s", c.measured_step_median_s},
                      {"measured_step_min_s", c.measured_step_min_s},
                      {"measured_step_max_s", c.measured_step_max_s},
                      {"step_error", c.step_error},
                      {"predicted_exposed_comm_s", c.predicted_exposed_comm_s}};
  if (!c.has_op_timeline) return j;
  j["measured_exposed_comm_s"] = c.measured_exposed_comm_s;
  j["median_op_start_error"] = c.median_op_start_error;
  j["max_op_start_error"] = c.max_op_start_error;
  j["median_op_end_error"] = c.median_op_end_error;
  j["max_op_end_error"] = c.max_op_end_error;
  nlohmann::json ops = nlohmann::json::array();
  for (const auto& o : c.ops)
    ops.push_back({{"op", o.op},
                   {"name", plan.ops[o.op].name},
                   {"predicted_start_s", o.predicted_start_s},
                   {"measured_start_s", o.measured_start_s},
                   {"predicted_end_s", o.predicted_end_s},
                   {"measured_end_s", o.measured_end_s}});
  j["ops"] = std::move(ops);
  return j;
}

}  // namespace redsim
