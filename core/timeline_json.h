// The Timeline in redsim's own JSON (op by op, per rank) and as a Chrome/Perfetto trace.
#pragma once
#include <nlohmann/json.hpp>

#include "core/plan.h"
#include "core/step_summary.h"
#include "core/timeline.h"

namespace redsim {

nlohmann::json timeline_to_json(const Plan& plan, const Timeline& timeline);
nlohmann::json summary_to_json(const Plan& plan, const StepSummary& summary);
// Chrome trace event format: one process per rank, one thread per stream; opens in ui.perfetto.dev.
nlohmann::json timeline_to_chrome_trace(const Plan& plan, const Timeline& timeline);

}  // namespace redsim
