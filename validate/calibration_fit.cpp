#include "validate/calibration_fit.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace redsim {

namespace {

constexpr OpKind kSwept[] = {OpKind::allreduce, OpKind::reduce, OpKind::reduce_scatter, OpKind::allgather,
                             OpKind::broadcast};

bool fitted_kind(const CalibrationPolicy& policy, OpKind k) {
  return policy.fit == "all" || k == OpKind::allreduce || k == OpKind::reduce_scatter || k == OpKind::allgather;
}

bool large_enough(const CalibrationPolicy& policy, const CollectiveSample& s) {
  return static_cast<double>(s.bytes) >= policy.fit_min_bytes;
}

// Kinds the joint fit left without a launch of their own get one with alpha and beta held.
void fit_held_launches(const std::vector<CollectiveSample>& sweep, const CalibrationPolicy& policy,
                       CollectiveCalibration& c) {
  for (OpKind k : kSwept) {
    if (c.fit.launch_s_by_kind.count(k) != 0) continue;
    std::vector<CollectiveSample> own;
    for (const auto& p : sweep)
      if (p.kind == k && large_enough(policy, p)) own.push_back(p);
    if (own.empty()) continue;
    c.fit.launch_s_by_kind[k] = fit_launch_only(own, c.fit.alpha_s, c.fit.beta_s_per_byte);
    c.held.push_back(k);
  }
  if (const auto it = c.fit.launch_s_by_kind.find(OpKind::allreduce); it != c.fit.launch_s_by_kind.end())
    c.fit.launch_s = it->second;  // the shared figure, for kinds a plan runs that were not swept
}

// Every point against the cluster file's model (each kind's own launch), and the residuals over
// the sizes fitted.
void grade_points(const std::vector<CollectiveSample>& sweep, const std::vector<std::size_t>& index,
                  const CalibrationPolicy& policy, CollectiveCalibration& c) {
  const auto launch_of = [&](OpKind k) {
    const auto it = c.fit.launch_s_by_kind.find(k);
    return it != c.fit.launch_s_by_kind.end() ? it->second : c.fit.launch_s;
  };
  double sq = 0;
  std::size_t k = 0;
  for (std::size_t i = 0; i < sweep.size(); ++i) {
    const auto& p = sweep[i];
    const bool in_fit = k < index.size() && index[k] == i;
    CalibratedPoint cp{p, alpha_beta_time(p.kind, p.bytes, p.ranks, c.fit.alpha_s, c.fit.beta_s_per_byte,
                                          launch_of(p.kind)),
                       PointUse::fitted};
    if (!large_enough(policy, p))
      cp.use = PointUse::below_min;
    else if (!in_fit)
      cp.use = PointUse::launch_only;
    else if (!c.fit.used[k])
      cp.use = PointUse::outlier;
    if (cp.use == PointUse::fitted || cp.use == PointUse::launch_only) {
      const double e = (cp.model_s - p.time_s) / p.time_s;
      sq += e * e;
      c.max_abs_relative_error = std::max(c.max_abs_relative_error, std::abs(e));
      ++c.points_counted;
    }
    c.points.push_back(cp);
    if (in_fit) ++k;
  }
  c.rms_relative_error = c.points_counted > 0 ? std::sqrt(sq / c.points_counted) : 0;
}

}  // namespace

CollectiveCalibration calibrate_collectives(const std::vector<CollectiveSample>& sweep,
                                            const CalibrationPolicy& policy) {
  std::vector<CollectiveSample> samples;
  std::vector<std::size_t> index;
  for (std::size_t i = 0; i < sweep.size(); ++i)
    if (fitted_kind(policy, sweep[i].kind) && large_enough(policy, sweep[i])) {
      samples.push_back(sweep[i]);
      index.push_back(i);
    }
  // One launch overhead per collective kind. Alpha is told apart from them only by the chains,
  // whose hop count grows with the size (N + P - 2); a ring's is fixed per kind. So --fit all
  // fits alpha, bandwidth and every kind's launch at once; --fit ring fits alpha, bandwidth and
  // one shared launch on the rings, then each kind's own launch with those two held.
  CollectiveCalibration c;
  c.fit = fit_alpha_beta(samples, policy.fit == "all");
  fit_held_launches(sweep, policy, c);
  grade_points(sweep, index, policy, c);
  return c;
}

std::optional<LinkCalibration> calibrate_link(const std::vector<LinkSample>& sweep, double fit_min_bytes) {
  LinkCalibration link;
  std::vector<LinkSample> samples;
  for (std::size_t i = 0; i < sweep.size(); ++i)
    if (static_cast<double>(sweep[i].bytes) >= fit_min_bytes) {
      samples.push_back(sweep[i]);
      link.index.push_back(i);
    }
  if (samples.size() < 3) return std::nullopt;
  link.fit = fit_point_to_point(samples);
  return link;
}

ClusterSpec calibrated_cluster(const CalibrationRun& run, const CalibrationPolicy& policy,
                               const CollectiveCalibration& collectives, const std::optional<LinkCalibration>& intra) {
  const ClusterFitResult& fit = collectives.fit;
  ClusterSpec c;
  c.name = run.name.empty() ? "calibrated-" + std::to_string(run.nodes) + "x" + std::to_string(run.ranks_per_node)
                            : run.name;
  c.nodes = run.nodes;
  c.devices_per_node = run.ranks_per_node;
  c.device.name = run.backend == "nccl" ? "gpu" : "cpu-rank";
  // The fit comes from this job's own ranks running the schedule with traced times as given.
  c.device.speedup_reference = "*";
  c.collective_launch_us = fit.launch_s * 1e6;
  for (const auto& [k, v] : fit.launch_s_by_kind) c.collective_launch_us_by_kind[k] = v * 1e6;
  std::ostringstream src;
  src << "redsim calibrate --backend " << run.backend << " ("
      << (run.rate.empty() ? "" : "testbed rate " + run.rate + ", ") << run.nodes << " node(s) x " << run.ranks_per_node << " rank(s)): " << collectives.points.size()
      << " collective sweep points, " << run.iters << " iterations each; alpha-beta fit (--fit " << policy.fit
      << ", sizes from " << policy.fit_min_bytes << " B) rms residual "
      << std::llround(collectives.rms_relative_error * 1000) / 10.0 << "%";
  if (run.nodes > 1) {
    c.inter.topology = InterTopology::star;
    c.inter.nics_per_node = 1;
    c.inter.nic_bandwidth_gbps = fit.bandwidth_Bps() * 8 / 1e9;
    c.inter.latency_us = fit.alpha_s * 1e6;
    if (run.ranks_per_node > 1) {
      if (!intra) throw std::runtime_error("calibrate: no intra-node point-to-point sweep to fit");
      c.intra.fabric = IntraFabric::pcie;
      c.intra.link_bandwidth_GBps = intra->fit.bandwidth_Bps() / 1e9;
      c.intra.latency_us = intra->fit.alpha_s * 1e6;
      src << "; intra-node link from a point-to-point fit (rms residual "
          << std::llround(intra->fit.rms_relative_error * 1000) / 10.0 << "%)";
    }
  } else {
    c.intra.fabric = run.backend == "nccl" ? IntraFabric::nvswitch : IntraFabric::pcie;
    c.intra.link_bandwidth_GBps = fit.bandwidth_Bps() / 1e9;
    c.intra.latency_us = fit.alpha_s * 1e6;
  }
  c.source = src.str();
  return c;
}

}  // namespace redsim
