// validate's own measurement: `redsim run` of the same trace, cluster and knobs, started as a
// child process (N local ranks, or one rank per host of realexec/testbed). The knobs travel as
// a --config file written by knobs_to_json, the result comes back as a redsim-result read by
// core/result_json; both temporary files are removed on every path.
#pragma once
#include <functional>
#include <stdexcept>
#include <optional>
#include <string>

#include "core/cluster.h"
#include "core/knobs.h"
#include "core/plan.h"
#include "core/result_json.h"

namespace redsim {

struct RunMeasurement {
  std::string backend = "gloo";
  int ranks = 0;        // local ranks (`redsim run --ranks N`), or
  std::string testbed;  // nodes=K,ranks-per-node=R,rate=RATE
  int steps = 10;
  int warmup = 2;
  double timeout_s = 120;
  std::optional<double> compute_scale;  // passed to redsim run as --compute-scale
  std::string layout;                   // passed to redsim run as --layout ("" = the whole cluster)
  std::int64_t batch_size = 0;          // passed to redsim run as --batch-size (0 = the trace's own)
};

// The child run ended with a non-zero status (2: it found the input bad).
class MeasuredRunFailed : public std::runtime_error {
 public:
  explicit MeasuredRunFailed(int status);
  int status() const { return status_; }

 private:
  int status_;
};

// "redsim run --ranks 2" or "testbed nodes=2,ranks-per-node=1,rate=400mbit": where the numbers came from.
std::string measurement_source(const RunMeasurement& how);

// Checks the request against the cluster (InputError), tells `starting` what it starts, then
// runs it. Throws MeasuredRunFailed when the run fails, InputError when its result is not a
// measurement of `plan`.
MeasuredRun measure_with_redsim_run(const RunMeasurement& how, const std::string& trace_file,
                                    const std::string& cluster_file, const ClusterSpec& cluster, const Knobs& knobs,
                                    const Plan& plan, const std::function<void(const std::string&)>& starting);

}  // namespace redsim
