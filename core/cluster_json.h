// Reading and writing cluster files (configs/README.md, configs/cluster.schema.json).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "core/cluster.h"

namespace redsim {

// Throws InputError naming file and JSON path for anything malformed or impossible.
ClusterSpec cluster_from_json(const nlohmann::json& j, const std::string& file);
ClusterSpec load_cluster(const std::string& file);
nlohmann::json cluster_to_json(const ClusterSpec& c);

}  // namespace redsim
