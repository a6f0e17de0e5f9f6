// The human-readable summary redsim simulate prints.
#pragma once
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/knobs.h"
#include "core/plan.h"
#include "core/step_summary.h"
#include "core/trace.h"

namespace redsim::cli {

// "ring/ll128 x24": the algorithm, protocol and channels a collective runs.
std::string collective_choice_text(const PlanOp& op);
// Calls row(i) for rows 0..n-1, or for the first 12 and last 8 with a line for the rest between
// them when there are more than 24 (the result JSON has them all).
void print_elided(std::ostream& out, std::size_t n, const std::function<void(std::size_t)>& row);

void print_summary(std::ostream& out, const ModelTrace& trace, const ClusterSpec& cluster, const Knobs& knobs,
                   const Plan& plan, const StepSummary& summary);

struct StrategyRow {
  std::string strategy;
  const Plan* plan;
  StepSummary summary;
};
// One row per strategy: step time, time per sample, exposed comm, bytes, memory per rank.
void print_comparison(std::ostream& out, const ModelTrace& trace, const ClusterSpec& cluster,
                      const std::vector<StrategyRow>& rows);

}  // namespace redsim::cli
