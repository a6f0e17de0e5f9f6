// How calibrate hands over the cluster files it makes (from a sweep, nccl-tests logs or profiler
// traces): named and sourced as fitted from a base, checked to load, written atomically.
#pragma once
#include <string>
#include <vector>

#include "core/cluster.h"

namespace redsim::cli {

// `c` is `base` with fitted values: it takes `name` (default: base's name + "-fitted") and base's
// source plus "<what> fitted by redsim calibrate <flag> to <inputs>."
void name_fitted_cluster(ClusterSpec& c, const ClusterSpec& base, const std::string& name, const std::string& what,
                         const std::string& flag, const std::vector<std::string>& inputs);

// Checks that `c` loads as written, writes it to out_file atomically, reads it back, and says where.
void write_calibrated_cluster(const ClusterSpec& c, const std::string& out_file);

}  // namespace redsim::cli
