// Knobs as JSON: written into results and tuned configs, read back by --config.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "core/knobs.h"

namespace redsim {

nlohmann::json knobs_to_json(const Knobs& k);
// Reads a knobs object; members absent keep the values already in `base`.
Knobs knobs_from_json(const nlohmann::json& j, const std::string& file, const std::string& json_path, Knobs base);

}  // namespace redsim
