// The chart of redsim collective --compare and calibrate --from-nccl-tests: bus bandwidth against
// size (a log axis), as a real nccl-tests run measured it and as redsim predicts it (calibrate: on
// the cluster as given and as fitted), one panel per run, with the algorithm, protocol and
// channels the model chose marked where they change.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace redsim {

struct BusbwPoint {
  std::int64_t size_bytes = 0;
  double measured_GBps = 0;
  double predicted_GBps = 0;
  std::string choice;        // e.g. "ring/ll128 x24"
  double fitted_GBps = -1;   // calibrate's fitted cluster; < 0: no third curve
};

struct BusbwPanel {
  std::string title;     // the run (the log's file, line, op, ranks): escaped when drawn
  std::string subtitle;  // how it was simulated (cluster, NCCL release)
  std::vector<BusbwPoint> points;
};

// `predicted_label` names the second curve ("predicted", "as given").
std::string busbw_compare_svg(const std::vector<BusbwPanel>& panels, const std::string& heading,
                              const std::string& predicted_label = "predicted");

}  // namespace redsim
