// Reading and writing model traces (traces/README.md, traces/trace.schema.json).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "core/trace.h"

namespace redsim {

// Throws InputError naming file and JSON path for anything malformed or inconsistent.
ModelTrace trace_from_json(const nlohmann::json& j, const std::string& file);
ModelTrace load_trace(const std::string& file);
nlohmann::json trace_to_json(const ModelTrace& trace);

}  // namespace redsim
