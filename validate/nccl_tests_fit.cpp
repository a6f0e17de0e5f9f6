#include "validate/nccl_tests_fit.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "collectives/cluster_subset.h"
#include "core/error.h"
#include "core/statistics.h"
#include "validate/least_squares.h"

namespace redsim {
namespace {

constexpr std::int64_t kSmallBytes = 64 * 1024;        // latency-bound sizes
constexpr std::int64_t kLargeBytes = 8 * 1024 * 1024;  // bandwidth-bound sizes (and the top eighth of a sweep)
constexpr int kRounds = 6;

bool usable(const NcclTestsRow& r) { return !(r.wrong && *r.wrong > 0); }

double& bandwidth_of(ClusterSpec& c, bool inter) { return inter ? c.inter.nic_bandwidth_gbps : c.intra.link_bandwidth_GBps; }
double& latency_of(ClusterSpec& c, bool inter) { return inter ? c.inter.latency_us : c.intra.latency_us; }

using Times = std::vector<std::vector<double>>;  // per run of a selection, per row

std::vector<double> times_of(const std::vector<PredictedRow>& rows) {
  std::vector<double> us;
  for (const auto& r : rows) us.push_back(r.time_us);
  return us;
}

struct Evaluator {
  const std::string& cluster_file;
  const std::vector<NcclTestsRun>& runs;
  const RunPredictor& predict;
  int simulations = 0;

  // The best cluster seen for the current selection, by the mean squared log error over its usable
  // rows: NCCL's discrete speed steps make the response a staircase, so a step can overshoot, and
  // the fit never returns a cluster worse than one it has simulated.
  std::optional<ClusterSpec> best;
  double best_error = 0;

  Times operator()(const ClusterSpec& c, const std::vector<std::size_t>& which) {
    Times out;
    for (auto i : which) {
      out.push_back(times_of(predict(layout_of_run(c, cluster_file, runs[i]), runs[i])));
      ++simulations;
    }
    double sum = 0;
    int n = 0;
    for (std::size_t k = 0; k < which.size(); ++k)
      for (std::size_t r = 0; r < out[k].size(); ++r)
        if (usable(runs[which[k]].rows[r])) {
          const double e = std::log(out[k][r] / runs[which[k]].rows[r].time_us);
          sum += e * e;
          ++n;
        }
    const double error = n > 0 ? sum / n : 0;
    if (!best || error < best_error) best = c, best_error = error;
    return out;
  }
};

struct RowRef {
  std::size_t k;  // index into the selection
  std::size_t row;
};

// The rows that set bandwidth (large) and latency (small) of one link class.
void pick_rows(const std::vector<NcclTestsRun>& runs, const std::vector<std::size_t>& which, std::vector<RowRef>& large,
               std::vector<RowRef>& small) {
  for (std::size_t k = 0; k < which.size(); ++k) {
    const auto& rows = runs[which[k]].rows;
    std::int64_t max_size = 0;
    for (const auto& r : rows)
      if (usable(r)) max_size = std::max(max_size, r.size_bytes);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (!usable(rows[i])) continue;
      const auto s = rows[i].size_bytes;
      if (s == max_size || (s >= kLargeBytes && s >= max_size / 8)) large.push_back({k, i});
      if (s <= kSmallBytes) small.push_back({k, i});
    }
  }
}

struct ClassFit {
  FittedParam bandwidth, latency;
};

// Latency by a Newton step on the small rows' median residual, the slope taken by simulating a
// nudged latency; NCCL's per-hop latency is a floor under the link's (collectives/README.md), so a
// nudge below it changes nothing and the nudge grows until it does.
void fit_latency(ClusterSpec& c, bool inter, const std::vector<std::size_t>& which, Evaluator& eval,
                 const std::vector<RowRef>& small, FittedParam& p) {
  const auto measured = [&](const RowRef& r) { return eval.runs[which[r.k]].rows[r.row].time_us; };
  const Times t = eval(c, which);
  std::vector<double> residual;
  for (const auto& r : small) residual.push_back(measured(r) - t[r.k][r.row]);
  const double want = median_of(residual);
  for (double delta_us = std::max(1.0, 0.5 * latency_of(c, inter)); delta_us <= 256; delta_us *= 4) {
    ClusterSpec probe = c;
    const double step = want < 0 ? -std::min(delta_us, latency_of(c, inter)) : delta_us;
    if (step == 0) break;
    latency_of(probe, inter) += step;
    const Times t2 = eval(probe, which);
    std::vector<double> slope;
    for (const auto& r : small) slope.push_back((t2[r.k][r.row] - t[r.k][r.row]) / step);
    const double k = median_of(slope);
    if (k > 1e-3) {
      latency_of(c, inter) = std::clamp(latency_of(c, inter) + want / k, 0.0, 1000.0);
      p.note.clear();
      return;
    }
  }
  p.note = "not fitted: the small sizes do not depend on this link's latency";
}

// Bandwidth by a secant search on the log of the median ratio of simulated to measured time over
// the large rows (the first step assumes time goes as 1/bandwidth), then the latency on the small
// rows; a few rounds, as each moves the other's rows a little.
ClassFit fit_class(ClusterSpec& c, bool inter, const std::vector<std::size_t>& which, Evaluator& eval,
                   const std::function<void(const std::string&)>& progress) {
  ClassFit f;
  eval.best.reset();
  f.bandwidth = {inter ? "$.inter_node.nic_bandwidth_gbps" : "$.intra_node.link_bandwidth_GBps", bandwidth_of(c, inter), 0, ""};
  f.latency = {inter ? "$.inter_node.latency_us" : "$.intra_node.latency_us", latency_of(c, inter), 0, ""};
  std::vector<RowRef> large, small;
  pick_rows(eval.runs, which, large, small);
  const auto measured = [&](const RowRef& r) { return eval.runs[which[r.k]].rows[r.row].time_us; };
  double f_now = 0, f_prev = 0, x_prev = 0;
  for (int round = 0; round < kRounds; ++round) {
    progress(std::string("calibrate: fitting the ") + (inter ? "inter-node NICs" : "intra-node link") + ", round " +
             std::to_string(round + 1) + " of at most " + std::to_string(kRounds));
    const Times t = eval(c, which);
    std::vector<double> ratios;
    for (const auto& r : large) ratios.push_back(t[r.k][r.row] / measured(r));
    f_now = std::log(median_of(ratios));
    double& bw = bandwidth_of(c, inter);
    const double x = std::log(bw);
    const double slope = round > 0 && f_now != f_prev && x != x_prev ? (f_now - f_prev) / (x - x_prev) : -1.0;
    x_prev = x, f_prev = f_now;
    const double x_new = x - f_now / (slope < -0.05 ? slope : -1.0);
    bw = std::clamp(std::exp(x_new), f.bandwidth.before / 100, f.bandwidth.before * 100);
    if (small.empty()) f.latency.note = "not fitted: no row of 64 KiB or less";
    else fit_latency(c, inter, which, eval, small, f.latency);
    if (std::abs(f_now) < 0.002 && round > 0) break;
  }
  (void)eval(c, which);  // the last latency step, scored
  c = *eval.best;
  f.bandwidth.after = bandwidth_of(c, inter);
  f.latency.after = latency_of(c, inter);
  if (std::abs(f_now) > 0.05)
    f.bandwidth.note = "large sizes do not follow the link bandwidth alone (NCCL's speed steps and caps); kept the best simulated";
  if (f.latency.note.empty() && f.latency.after == 0)
    f.latency.note = "fitted to 0 us: the small sizes are faster than NCCL's published per-hop latencies predict";
  return f;
}

// A row whose measured time is this far above the device's simulated time is taken to be paced by
// the host's launches (nccl-tests with -g: an iteration lasts at least g launches).
constexpr double kHostBoundRatio = 1.25;

struct HostFit {
  FittedParam fixed, per_channel;
};

// The host's launch cost from the -g runs' host-bound rows: measured / g = fixed + per_channel x
// (channels - 1), by least squares with each row scaled by 1/y (relative residuals), each part at
// least 0. Channels that never vary give the fixed part alone.
HostFit fit_host_launch(ClusterSpec& c, const std::string& cluster_file, const std::vector<NcclTestsRun>& runs,
                        const RunPredictor& predict, int& simulations) {
  HostFit f{{"$.collective_launch_us", c.collective_launch_us, c.collective_launch_us, ""},
            {"$.collective_launch_per_channel_us", c.collective_launch_per_channel_us, c.collective_launch_per_channel_us, ""}};
  std::vector<double> xs, ys;
  for (const auto& run : runs) {
    if (run.gpus_per_thread < 2) continue;
    const auto rows = predict(layout_of_run(c, cluster_file, run), run);
    ++simulations;
    for (std::size_t i = 0; i < rows.size() && i < run.rows.size(); ++i)
      if (usable(run.rows[i]) && run.rows[i].time_us > kHostBoundRatio * rows[i].device_us) {
        xs.push_back(rows[i].channels - 1);
        ys.push_back(run.rows[i].time_us / run.gpus_per_thread);
      }
  }
  if (xs.size() < 3) {
    f.fixed.note = f.per_channel.note = "not fitted: fewer than 3 rows of -g runs paced by the host";
    return f;
  }
  // Weights 1/y: relative residuals. Channels that never vary leave the fixed part alone to fit,
  // as does a slope below 0 (refitted without it).
  std::vector<double> w;
  for (double y : ys) w.push_back(1 / y);
  const bool varies = std::any_of(xs.begin(), xs.end(), [&](double x) { return x != xs.front(); });
  auto fit = [&](bool slope) {
    std::vector<std::vector<double>> X;
    for (double x : xs) X.push_back(slope ? std::vector<double>{1, x} : std::vector<double>{1});
    return weighted_least_squares(X, ys, w).coef;
  };
  std::vector<double> coef = varies ? fit(true) : fit(false);
  double b = coef.size() > 1 ? coef[1] : 0.0;
  if (b <= 0) {
    f.per_channel.note = varies ? "fitted to 0: the host-paced rows do not grow with channels"
                                : "not fitted: the host-paced rows all ran on one channel count";
    if (coef.size() > 1) coef = fit(false);
    b = 0;
  }
  const double a = std::max(0.0, coef[0]);
  c.collective_launch_us = a;
  c.collective_launch_us_by_kind.clear();  // the logs measured the launch itself
  if (f.per_channel.note.rfind("not fitted", 0) != 0) c.collective_launch_per_channel_us = b;
  f.fixed.after = c.collective_launch_us;
  f.per_channel.after = c.collective_launch_per_channel_us;
  f.fixed.note += std::to_string(xs.size()) + " host-paced rows";
  return f;
}

}  // namespace

ClusterSpec layout_of_run(const ClusterSpec& cluster, const std::string& cluster_file, const NcclTestsRun& run) {
  if (run.nodes > cluster.nodes || run.devices_per_node > cluster.devices_per_node)
    throw InputError(run.file, "line " + std::to_string(run.first_line),
                     "a run that fits the cluster " + cluster_file + " (" + std::to_string(cluster.nodes) + " node(s) x " +
                         std::to_string(cluster.devices_per_node) + " devices); this one ran on " +
                         std::to_string(run.nodes) + " x " + std::to_string(run.devices_per_node));
  return cluster_layout(cluster, run.nodes, run.devices_per_node);
}

NcclTestsFit fit_nccl_tests(const ClusterSpec& base, const std::string& cluster_file, const std::vector<NcclTestsRun>& runs,
                            const RunPredictor& predict, const std::function<void(const std::string&)>& progress) {
  Evaluator eval{cluster_file, runs, predict, 0, std::nullopt, 0};
  std::vector<std::size_t> all, single, multi;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    layout_of_run(base, cluster_file, runs[i]);  // every log fits before any simulation
    all.push_back(i);
    if (runs[i].nodes > 1) multi.push_back(i);
    else if (runs[i].devices_per_node > 1) single.push_back(i);
  }
  NcclTestsFit fit;
  fit.cluster = base;
  const Times before = eval(base, all);
  // The host first, so that the link fits see host-paced rows as such; again after them, since
  // which rows the host paces depends on the device times the links give.
  int host_sims = 0;
  fit_host_launch(fit.cluster, cluster_file, runs, predict, host_sims);
  if (!single.empty()) {
    const auto f = fit_class(fit.cluster, false, single, eval, progress);
    fit.params.push_back(f.bandwidth);
    fit.params.push_back(f.latency);
  }
  if (!multi.empty()) {
    const auto f = fit_class(fit.cluster, true, multi, eval, progress);
    fit.params.push_back(f.bandwidth);
    fit.params.push_back(f.latency);
  }
  {
    HostFit h = fit_host_launch(fit.cluster, cluster_file, runs, predict, host_sims);
    h.fixed.before = base.collective_launch_us;
    h.per_channel.before = base.collective_launch_per_channel_us;
    // Reported when either pass moved them (the second can find too few host-paced rows once the
    // links are fitted, leaving the first pass's values).
    h.fixed.after = fit.cluster.collective_launch_us;
    h.per_channel.after = fit.cluster.collective_launch_per_channel_us;
    if (h.fixed.note.rfind("not fitted", 0) != 0 || h.fixed.after != h.fixed.before || h.per_channel.after != h.per_channel.before) {
      fit.params.push_back(h.fixed);
      fit.params.push_back(h.per_channel);
    }
  }
  const Times after = eval(fit.cluster, all);
  for (std::size_t i = 0; i < runs.size(); ++i)
    for (std::size_t r = 0; r < runs[i].rows.size(); ++r)
      fit.rows.push_back({i, r, runs[i].rows[r].time_us, before[i][r], after[i][r], usable(runs[i].rows[r])});
  fit.simulations = eval.simulations + host_sims;
  return fit;
}

}  // namespace redsim
