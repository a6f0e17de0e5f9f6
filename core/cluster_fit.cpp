#include "core/cluster_fit.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/least_squares.h"
#include "core/pipeline.h"

namespace redsim {

std::vector<double> alpha_beta_row(OpKind kind, std::int64_t bytes, int ranks) {
  const double n = ranks, s = static_cast<double>(bytes);
  switch (kind) {
    case OpKind::allreduce:
      return {2 * (n - 1), 2 * (n - 1) / n * s, 1};
    case OpKind::reduce_scatter:
    case OpKind::allgather:
      return {n - 1, (n - 1) / n * s, 1};
    case OpKind::reduce:
    case OpKind::broadcast: {
      const double p = pipeline_chunks(bytes);
      return {n + p - 2, (n + p - 2) * s / p, 1};
    }
    default:
      throw std::invalid_argument("cluster fit: not a collective: " + std::string(op_kind_name(kind)));
  }
}

double alpha_beta_time(OpKind kind, std::int64_t bytes, int ranks, double alpha_s, double beta_s_per_byte,
                       double launch_s) {
  const auto r = alpha_beta_row(kind, bytes, ranks);
  return r[0] * alpha_s + r[1] * beta_s_per_byte + r[2] * launch_s;
}

namespace {

// Rows of coefficients of (alpha, beta, launch); with_launch false leaves the launch term out.
ClusterFitResult fit_rows(const std::vector<std::vector<double>>& X, const std::vector<double>& y, bool with_launch) {
  std::vector<double> w;
  for (double t : y) w.push_back(1.0 / t);
  // Fit the unknowns; any that comes out negative is fixed at 0 and the rest refitted.
  const auto solve = [&](const std::vector<bool>& use) {
  std::vector<bool> active = {true, true, with_launch};
  std::vector<double> coef(3, 0.0);
  for (int round = 0; round < 5; ++round) {
    std::vector<std::vector<double>> Xa;
    std::vector<double> ya, wa;
    for (std::size_t i = 0; i < X.size(); ++i) {
      if (!use[i]) continue;
      std::vector<double> r;
      for (int k = 0; k < 3; ++k)
        if (active[static_cast<std::size_t>(k)]) r.push_back(X[i][static_cast<std::size_t>(k)]);
      Xa.push_back(std::move(r));
      ya.push_back(y[i]);
      wa.push_back(w[i]);
    }
    const auto fit = weighted_least_squares(Xa, ya, wa);
    std::size_t j = 0;
    bool negative = false;
    for (std::size_t k = 0; k < 3; ++k) {
      coef[k] = active[k] ? fit.coef[j++] : 0.0;
      if (active[k] && coef[k] < 0 && k != 1) {  // bandwidth must stay in the model
        active[k] = false;
        negative = true;
      }
    }
    // A sweep whose times hardly grow with size (latency-bound, noisy) can fit a non-positive
    // 1/bandwidth: drop alpha, then the launch term, until it is positive (beta alone through the
    // origin always is, every time and coefficient being positive).
    if (!negative && !(coef[1] > 0)) {
      if (active[0])
        active[0] = false;
      else
        active[2] = false;
      negative = true;
    }
    if (!negative) break;
  }
  return coef;
  };
  // Robust step: points whose relative residual exceeds 3x the median (and 5%) — e.g. small
  // messages hit by TCP or shaper effects the model has no term for — are left out and the fit
  // repeated (up to 3 times), while 6+ points remain; every point's residual is still reported.
  std::vector<bool> use(X.size(), true);
  std::vector<double> coef = solve(use);
  for (int round = 0; round < 3; ++round) {  // re-judged against each refit, so a skewed first fit is undone
    std::vector<double> e;
    for (std::size_t i = 0; i < X.size(); ++i)
      e.push_back(std::abs((X[i][0] * coef[0] + X[i][1] * coef[1] + X[i][2] * coef[2] - y[i]) / y[i]));
    std::vector<double> sorted = e;
    std::sort(sorted.begin(), sorted.end());
    const double cut = std::max(0.05, 3 * sorted[sorted.size() / 2]);
    std::vector<bool> next(X.size());
    std::size_t kept = 0;
    for (std::size_t i = 0; i < X.size(); ++i) kept += (next[i] = e[i] <= cut) ? 1 : 0;
    if (next == use || kept < 6) break;
    try {
      coef = solve(next);
      use = next;
    } catch (const std::invalid_argument&) {
      break;
    }
  }
  if (!(coef[1] > 0)) throw std::invalid_argument("cluster fit: the fitted bandwidth is not positive");
  for (auto& c : coef) c = std::max(c, 0.0);
  ClusterFitResult r;
  r.alpha_s = coef[0];
  r.beta_s_per_byte = coef[1];
  r.launch_s = coef[2];
  double sq = 0;
  for (std::size_t i = 0; i < X.size(); ++i) {
    const double p = X[i][0] * coef[0] + X[i][1] * coef[1] + X[i][2] * coef[2];
    r.predicted_s.push_back(p);
    const double e = (p - y[i]) / y[i];
    r.relative_error.push_back(e);
    r.used.push_back(use[i]);
    if (!use[i]) continue;
    ++r.points_used;
    sq += e * e;
    r.max_abs_relative_error = std::max(r.max_abs_relative_error, std::abs(e));
  }
  r.rms_relative_error = std::sqrt(sq / static_cast<double>(r.points_used));
  return r;
}

}  // namespace

ClusterFitResult fit_alpha_beta(const std::vector<CollectiveSample>& samples) {
  std::vector<std::vector<double>> X;
  std::vector<double> y;
  for (const auto& s : samples) {
    if (!(s.time_s > 0) || !std::isfinite(s.time_s) || s.ranks < 2 || s.bytes <= 0)
      throw std::invalid_argument("cluster fit: every sample needs 2+ ranks, positive bytes and a positive time");
    X.push_back(alpha_beta_row(s.kind, s.bytes, s.ranks));
    y.push_back(s.time_s);
  }
  if (X.size() < 3) throw std::invalid_argument("cluster fit: need at least 3 samples with 2+ ranks");
  return fit_rows(X, y, true);
}

ClusterFitResult fit_point_to_point(const std::vector<LinkSample>& samples) {
  std::vector<std::vector<double>> X;
  std::vector<double> y;
  for (const auto& s : samples) {
    if (!(s.time_s > 0) || !std::isfinite(s.time_s) || s.bytes <= 0)
      throw std::invalid_argument("link fit: every sample needs positive bytes and a positive time");
    X.push_back({1.0, static_cast<double>(s.bytes), 0.0});
    y.push_back(s.time_s);
  }
  if (X.size() < 3) throw std::invalid_argument("link fit: need at least 3 samples");
  return fit_rows(X, y, false);
}

}  // namespace redsim
