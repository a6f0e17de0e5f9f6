// redsim calibrate --from-nccl-tests: a cluster file fitted to a user's own nccl-tests logs.
#pragma once
#include <string>
#include <vector>

namespace redsim::cli {

struct NcclTestsCalibration {
  std::vector<std::string> logs;
  std::string cluster_file;  // the cluster the logs ran on, as a starting point
  std::string out_file;
  std::string name;  // "" = the base cluster's name + "-fitted"
  std::string svg_file;  // "" = no chart
};

void calibrate_from_nccl_tests(const NcclTestsCalibration& o);

}  // namespace redsim::cli
