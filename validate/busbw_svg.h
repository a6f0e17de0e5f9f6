// The chart of redsim collective --compare: bus bandwidth against size (a log axis), as a real
// nccl-tests run measured it and as redsim predicts it, one panel per run, with the algorithm,
// protocol and channels the model chose marked where they change.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace redsim {

struct BusbwPoint {
  std::int64_t size_bytes = 0;
  double measured_GBps = 0;
  double predicted_GBps = 0;
  std::string choice;  // e.g. "ring/ll128 x24"
};

struct BusbwPanel {
  std::string title;     // the run (the log's file, line, op, ranks): escaped when drawn
  std::string subtitle;  // how it was simulated (cluster, NCCL release)
  std::vector<BusbwPoint> points;
};

std::string busbw_compare_svg(const std::vector<BusbwPanel>& panels, const std::string& heading);

}  // namespace redsim
