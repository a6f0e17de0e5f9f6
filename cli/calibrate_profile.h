// redsim calibrate --from-profile: a cluster file whose interference factors and per-bucket
// framework overhead are fitted to PyTorch profiler (Kineto) traces of real steps.
#pragma once
#include <string>
#include <vector>

namespace redsim::cli {

struct ProfileCalibration {
  std::vector<std::string> traces;
  std::string cluster_file;  // the cluster the job ran on
  std::string out_file;
  std::string name;  // "" = the base cluster's name + "-fitted"
};

void calibrate_from_profiles(const ProfileCalibration& o);

}  // namespace redsim::cli
