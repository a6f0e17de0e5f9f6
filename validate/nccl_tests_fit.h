// Fits a cluster file's link parameters to real nccl-tests logs: each log is simulated on the part
// of the cluster it ran on (one node's devices, or several nodes), and the link class it exercises
// (the intra-node link from single-node logs, the NICs from multi-node ones) gets the bandwidth
// that matches its large sizes and the latency that matches its small ones. Runs whose thread
// drives several GPUs (-g) also give the host's launch cost, a fixed part and a part per channel,
// from the rows their launches bound. NCCL's own constants
// (protocol and per-hop latencies, per-channel caps) stay as published: the fit moves only what a
// cluster file says. The simulator comes in as a RunPredictor, so validate/ needs no sim/.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "validate/nccl_tests_log.h"

namespace redsim {

// One row of a run as simulated: the out-of-place time nccl-tests would print, the device's part
// of it, and the channels the collective ran on (which the host's launches pay for).
struct PredictedRow {
  double time_us = 0;
  double device_us = 0;
  int channels = 1;
};

// Predicted rows of `run` on `layout` (the cluster restricted to the run's nodes and devices).
using RunPredictor = std::function<std::vector<PredictedRow>(const ClusterSpec& layout, const NcclTestsRun& run)>;

struct FittedParam {
  std::string name;  // the cluster file's JSON path, e.g. "$.intra_node.link_bandwidth_GBps"
  double before = 0;
  double after = 0;
  std::string note;  // why it was not fitted, or that it hit a bound (a latency of 0)
};

struct RowResidual {
  std::size_t run = 0;
  std::size_t row = 0;
  double measured_us = 0;
  double before_us = 0;  // the cluster as given
  double after_us = 0;   // the fitted cluster
  bool fitted = false;   // used by the fit (rows with #wrong > 0 are not)
};

struct NcclTestsFit {
  ClusterSpec cluster;
  std::vector<FittedParam> params;
  std::vector<RowResidual> rows;
  int simulations = 0;
};

// The part of `cluster` a run used. Throws InputError naming the log's line when it does not fit.
ClusterSpec layout_of_run(const ClusterSpec& cluster, const std::string& cluster_file, const NcclTestsRun& run);

NcclTestsFit fit_nccl_tests(const ClusterSpec& base, const std::string& cluster_file, const std::vector<NcclTestsRun>& runs,
                            const RunPredictor& predict, const std::function<void(const std::string&)>& progress);

}  // namespace redsim
