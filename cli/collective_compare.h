// redsim collective --compare: a user's own nccl-tests logs against the simulated sweep on a
// cluster file, row by row (measured and predicted time and bus bandwidth, the error, the model's
// choice), with a summary per band and, with --svg, a chart.
#pragma once
#include <string>
#include <vector>

#include "core/plan.h"
#include "sim/sim_engine.h"

namespace redsim::cli {

struct CollectiveCompare {
  std::vector<std::string> logs;
  std::string cluster_file;
  std::string json_file, svg_file;  // "" = not written
  CollectiveRequest request;        // --algorithm, --protocol, --channels as the run was pinned
  Fidelity fidelity = Fidelity::auto_select;
};

void compare_collective_logs(const CollectiveCompare& o);

}  // namespace redsim::cli
