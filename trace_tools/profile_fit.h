// What a profiler (Kineto) trace of a real data-parallel step says about the costs the model adds
// around compute and collectives (core/cluster.h): how much slower compute kernels run beside an
// NCCL kernel and NCCL kernels beside compute (InterferenceSpec), and the fixed per-bucket time
// between a bucket's gradients being ready and its allreduce starting (FrameworkSpec). For
// `redsim calibrate --from-profile`.
//
// The rule fitted is the simulator's (sim/interference.h): work that overlaps the other kind for
// a fraction phi of its measured time d runs at 1/s of its speed there, so its time alone is
// d0 = d (1 - phi) + d phi / s, and each overlapped kernel gives s = phi / (d0 / d - 1 + phi).
// d0 comes from the same compute kernel (name, grid, block) running alone elsewhere in the
// profiles, and for a collective from one of the same size that ran alone or else from those
// that did, scaled by the model's time for each size (the predictor): then the fit leans on the
// model's size law, so calibrate the links first (--from-nccl-tests).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/dtype.h"
#include "core/plan.h"

namespace redsim {

// A collective whose time alone the model is asked for.
struct CollectiveQuery {
  OpKind kind = OpKind::allreduce;
  std::int64_t bytes = 0;  // the buffer each rank contributes
  DType dtype = DType::fp32;
  int world = 2;
  bool operator<(const CollectiveQuery& o) const;
};
// Microseconds each query takes alone on the cluster, in order.
using AlonePredictor = std::function<std::vector<double>(const std::vector<CollectiveQuery>&)>;

// Overlap fractions: at most this much is "alone", at least this much is "beside".
inline constexpr double kAloneMaxOverlap = 0.05;
inline constexpr double kBesideMinOverlap = 0.5;

// One fitted value (named apart from validate/nccl_tests_fit.h's FittedParam: one name for two
// types in one namespace broke the program once both were linked, stop 46).
struct ProfileParam {
  std::string name;  // the cluster file's JSON path
  double before = 0, after = 0;
  bool fitted = false;
  int evidence = 0;  // estimates the value is the median of
  double q1 = 0, q3 = 0;  // their quartiles
  std::string note;  // why not fitted, or what was clamped
};

struct ProfileFit {
  ClusterSpec cluster;  // the base cluster with the fitted values
  std::vector<ProfileParam> params;
  int files = 0, steps = 0, compute_kernels = 0, nccl_kernels = 0, buckets = 0;
  std::vector<std::string> warnings;
};

// Reads every file (InputError naming the file and JSON path for a malformed one), fits and
// returns the cluster with compute_slowdown, collective_slowdown, bucket_overhead_us and
// copy_out_us_per_tensor replaced where the profiles have evidence; the rest of `base` is kept.
ProfileFit fit_profiles(const ClusterSpec& base, const std::vector<std::string>& files, const AlonePredictor& alone);

}  // namespace redsim
