// The human-readable summary redsim simulate prints.
#pragma once
#include <ostream>

#include "core/cluster.h"
#include "core/knobs.h"
#include "core/plan.h"
#include "core/step_summary.h"
#include "core/trace.h"

namespace redsim::cli {

void print_summary(std::ostream& out, const ModelTrace& trace, const ClusterSpec& cluster, const Knobs& knobs,
                   const Plan& plan, const StepSummary& summary);

}  // namespace redsim::cli
