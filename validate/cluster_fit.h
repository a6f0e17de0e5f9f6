// Fitting a cluster's alpha-beta parameters to collective microbenchmarks (redsim calibrate).
// The model is the simulator's own closed form for each algorithm (sim/README.md), linear in
// the unknowns alpha (per-hop latency, s), beta (s per byte on the bottleneck link) and the
// per-collective launch overhead (s), fitted by weighted least squares (weights 1/time, so
// every size counts by its relative error):
//   ring allreduce          2(N-1) alpha + 2(N-1)/N S beta + launch
//   ring reduce-scatter,    (N-1) alpha + (N-1)/N S beta + launch
//   ring allgather
//   chain reduce, broadcast (N+P-2)(alpha + S/P beta) + launch,  P = ceil(S / 512 KiB)
// S is the collective's total buffer size in bytes (nccl-tests' "size").
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/plan.h"

namespace redsim {

struct CollectiveSample {
  OpKind kind = OpKind::allreduce;
  std::int64_t bytes = 0;
  int ranks = 2;
  double time_s = 0;  // one collective, as nccl-tests' "time"
};

struct ClusterFitResult {
  double alpha_s = 0;
  double beta_s_per_byte = 0;  // 1 / bandwidth
  double launch_s = 0;  // shared; with launch_per_kind, the allreduce's (else the smallest kind's)
  std::map<OpKind, double> launch_s_by_kind;  // with launch_per_kind only
  std::vector<double> coef;  // every fitted unknown: alpha, beta, then the launch term(s)
  double bandwidth_Bps() const { return beta_s_per_byte > 0 ? 1.0 / beta_s_per_byte : 0; }
  std::vector<double> predicted_s;     // per sample
  std::vector<double> relative_error;  // (predicted - measured) / measured, per sample
  std::vector<bool> used;              // per sample: kept in the final fit (see fit_alpha_beta)
  int points_used = 0;
  double rms_relative_error = 0;       // over the points used
  double max_abs_relative_error = 0;   // over the points used
};

// The model's coefficients of (alpha, beta, launch) for one sample.
std::vector<double> alpha_beta_row(OpKind kind, std::int64_t bytes, int ranks);
double alpha_beta_time(OpKind kind, std::int64_t bytes, int ranks, double alpha_s, double beta_s_per_byte,
                       double launch_s);

// Points whose relative residual exceeds max(5%, 3x the median) after a first fit are left out
// of a refit (repeated up to 3 times, while at least 6 remain); residuals are reported for every point.
// Throws std::invalid_argument with fewer than 3 usable samples, unsupported kinds, or a
// degenerate design (e.g. one size only). Negative fitted values are clamped to 0 and refitted
// without that unknown.
// launch_per_kind: one launch overhead per collective kind in the samples (a library's
// allreduce and its reduce need not cost the same to set up) instead of one shared.
ClusterFitResult fit_alpha_beta(const std::vector<CollectiveSample>& samples, bool launch_per_kind = false);

// One collective kind's launch overhead with alpha and beta held at a fit's values (calibrate
// --fit ring: the chains' setup cost, their transfer terms being the rings'): the weighted least
// squares of the one unknown (weights 1/time), clamped at 0. Throws without samples.
double fit_launch_only(const std::vector<CollectiveSample>& samples, double alpha_s, double beta_s_per_byte);

// One link measured point to point: time = alpha + bytes * beta (launch_s stays 0); same
// weighting, clamping and outlier rule as fit_alpha_beta.
struct LinkSample {
  std::int64_t bytes = 0;
  double time_s = 0;  // one way
};
ClusterFitResult fit_point_to_point(const std::vector<LinkSample>& samples);

}  // namespace redsim
