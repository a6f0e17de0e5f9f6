// Reading and writing cluster files (configs/README.md, configs/cluster.schema.json).
#pragma once
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/cluster.h"

namespace redsim {

// Throws InputError naming file and JSON path for anything malformed or impossible.
ClusterSpec cluster_from_json(const nlohmann::json& j, const std::string& file);
ClusterSpec load_cluster(const std::string& file);
nlohmann::json cluster_to_json(const ClusterSpec& c);

class JsonIn;
// An NCCL version as the cluster file writes it ("2.18.5", "2.20"; ClusterSpec::nccl_version's
// encoding); throws InputError for anything else. nccl_version_name writes it back.
int nccl_version_from_json(const JsonIn& v);
std::optional<int> parse_nccl_version(const std::string& text);
inline constexpr const char* kNcclVersionExpected = "an NCCL version \"2.MINOR\" or \"2.MINOR.PATCH\", e.g. \"2.18.5\"";
std::string nccl_version_name(int version);

}  // namespace redsim
