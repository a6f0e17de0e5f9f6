// A Plan as plain JSON, for printing, diffing and saving (redsim simulate --plan FILE).
#pragma once
#include <nlohmann/json.hpp>

#include "core/plan.h"

namespace redsim {

nlohmann::json plan_to_json(const Plan& plan);
nlohmann::json memory_to_json(const RankMemory& memory);

}  // namespace redsim
