// calibrate's fit policy: which of the swept points determine a cluster file's figures, how they
// are fitted (validate/cluster_fit.h), and the cluster file that results.
//   --fit ring (the default): only the ring collectives (allreduce, reduce-scatter, allgather)
//   determine alpha and the bandwidth, with one shared launch overhead; then each other kind's own
//   launch is fitted with those two held. Swept back to back, chains (reduce, broadcast) overlap
//   (a head starts the next while the last drains) and a shaper's burst speeds their idle hops,
//   neither of which the chain formula has a term for: fitting them skews the link (measured:
//   --fit all on the testbed gave 593 Mbit/s for a 400 Mbit/s link).
//   --fit all: every point, with one launch overhead per kind.
// Points below fit_min_bytes are measured and reported but never fitted: there the alpha-beta
// model has no term for what dominates (TCP slow start, a token bucket's burst, stalls).
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "validate/cluster_fit.h"

namespace redsim {

struct CalibrationPolicy {
  std::string fit = "ring";  // ring | all
  double fit_min_bytes = 256 * 1024;
};

// How a swept point entered the fit.
enum class PointUse { fitted, outlier, below_min, launch_only };

struct CalibratedPoint {
  CollectiveSample sample;
  double model_s = 0;  // the cluster file's model: alpha, bandwidth and the kind's own launch
  PointUse use = PointUse::fitted;
};

struct CollectiveCalibration {
  ClusterFitResult fit;                 // alpha, beta, launch overheads (launch_s: the allreduce's)
  std::vector<OpKind> held;             // kinds whose launch was fitted with alpha and beta held
  std::vector<CalibratedPoint> points;  // every swept point, in sweep order
  // Residuals of the model over the points fitted or launch-only (outliers and small sizes not).
  int points_counted = 0;
  double rms_relative_error = 0;
  double max_abs_relative_error = 0;
};

// Throws std::invalid_argument when the points cannot determine the fit (validate/cluster_fit.h).
CollectiveCalibration calibrate_collectives(const std::vector<CollectiveSample>& sweep,
                                            const CalibrationPolicy& policy);

// One link class measured point to point: the fit over the sizes from fit_min_bytes.
struct LinkCalibration {
  ClusterFitResult fit;              // per-sample vectors follow `index`
  std::vector<std::size_t> index;    // the sweep points fitted, as indices into the sweep
};
// nullopt when fewer than 3 sizes reach fit_min_bytes (the link was not measured).
std::optional<LinkCalibration> calibrate_link(const std::vector<LinkSample>& sweep, double fit_min_bytes);

// The calibrated cluster: one star of `nodes` nodes whose NIC (or, on one node, whose intra-node
// link) has the fitted bandwidth and latency, the fitted launch overheads, and a source saying how
// it was measured. With several nodes of several ranks the intra-node link comes from its own
// point-to-point fit (the collectives' rings are bound by the NIC); it must then be given.
struct CalibrationRun {
  std::string name;     // "" = calibrated-<nodes>x<ranks per node>
  std::string backend;  // gloo | nccl
  std::string rate;     // the testbed's shaped rate, "" when not on the testbed
  int nodes = 1;
  int ranks_per_node = 1;
  int iters = 0;
};
ClusterSpec calibrated_cluster(const CalibrationRun& run, const CalibrationPolicy& policy,
                               const CollectiveCalibration& collectives, const std::optional<LinkCalibration>& intra);

}  // namespace redsim
