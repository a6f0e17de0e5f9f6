// Extras for the Perfetto timeline that make the overlap visible: flow arrows from each op a
// collective waits on (a layer's backward whose gradients fill the bucket, or the framework's
// bucket copy) to the collective, and a counter track of the collective bytes in flight.
#pragma once
#include <nlohmann/json.hpp>

#include "core/plan.h"
#include "core/timeline.h"

namespace redsim::cli {

// Appends to a trace made by timeline_to_chrome_trace for `ranks`. Flows are drawn for the first
// of them only (every rank runs the same Plan, and a flow per rank would multiply the file by the
// world size); the counter is per rank ("collective bytes in flight", bytes each rank contributes to the
// collectives running at that instant).
void add_flows_and_counters(nlohmann::json& chrome_trace, const Plan& plan, const Timeline& timeline,
                            const std::vector<int>& ranks);

}  // namespace redsim::cli
