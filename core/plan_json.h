// A Plan as plain JSON, for printing, diffing and saving (redsim simulate --plan FILE).
#pragma once
#include <nlohmann/json.hpp>

#include "core/plan.h"

namespace redsim {

nlohmann::json plan_to_json(const Plan& plan);
// What a request pinned, as plans, `collective --json` and `--compare --json` write it:
// {"algorithm", "protocol", "channels"}, each "auto" when unpinned.
nlohmann::json requested_to_json(const CollectiveRequest& req);
nlohmann::json memory_to_json(const RankMemory& memory);

}  // namespace redsim
