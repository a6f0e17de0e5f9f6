#include "validate/cluster_fit.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "validate/least_squares.h"
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

// What the alpha-beta rows need of a sample; `what` names the fit in the error.
void check_sample(const CollectiveSample& s, const char* what) {
  if (!(s.time_s > 0) || !std::isfinite(s.time_s) || s.ranks < 2 || s.bytes <= 0)
    throw std::invalid_argument(std::string(what) + ": every sample needs 2+ ranks, positive bytes and a positive time");
}

double dot(const std::vector<double>& row, const std::vector<double>& coef) {
  double p = 0;
  for (std::size_t k = 0; k < row.size(); ++k) p += row[k] * coef[k];
  return p;
}

// Columns some used row touches (a kind whose points were all left out is not fitted).
std::vector<bool> touched_columns(const std::vector<std::vector<double>>& X, const std::vector<bool>& use) {
  std::vector<bool> active(X.front().size(), false);
  for (std::size_t i = 0; i < X.size(); ++i)
    for (std::size_t k = 0; k < active.size(); ++k)
      if (use[i] && X[i][k] != 0) active[k] = true;
  return active;
}

// Fits the unknowns of the used rows; any that comes out negative is fixed at 0 and the rest
// refitted.
std::vector<double> solve(const std::vector<std::vector<double>>& X, const std::vector<double>& y,
                          const std::vector<double>& w, const std::vector<bool>& use) {
  const std::size_t m = X.front().size();
  std::vector<bool> active = touched_columns(X, use);
  std::vector<double> coef(m, 0.0);
  for (int round = 0; round < 8; ++round) {
    std::vector<std::vector<double>> Xa;
    std::vector<double> ya, wa;
    for (std::size_t i = 0; i < X.size(); ++i) {
      if (!use[i]) continue;
      std::vector<double> r;
      for (std::size_t k = 0; k < m; ++k)
        if (active[k]) r.push_back(X[i][k]);
      Xa.push_back(std::move(r));
      ya.push_back(y[i]);
      wa.push_back(w[i]);
    }
    const auto fit = weighted_least_squares(Xa, ya, wa);
    std::size_t j = 0;
    bool negative = false;
    for (std::size_t k = 0; k < m; ++k) {
      coef[k] = active[k] ? fit.coef[j++] : 0.0;
      if (active[k] && coef[k] < 0 && k != 1) {  // bandwidth must stay in the model
        active[k] = false;
        negative = true;
      }
    }
    // A sweep whose times hardly grow with size (latency-bound, noisy) can fit a non-positive
    // 1/bandwidth: drop alpha, then the launch terms, until it is positive (beta alone through
    // the origin always is, every time and coefficient being positive).
    if (!negative && !(coef[1] > 0)) {
      if (active[0])
        active[0] = false;
      else
        for (std::size_t k = 2; k < m; ++k) active[k] = false;
      negative = true;
    }
    if (!negative) break;
  }
  return coef;
}

// Rows of coefficients of (alpha, beta, launch terms...): column 0 is alpha, 1 is beta, the rest
// launch overheads (one shared, one per collective kind, or none).
ClusterFitResult fit_rows(const std::vector<std::vector<double>>& X, const std::vector<double>& y) {
  std::vector<double> w;
  for (double t : y) w.push_back(1.0 / t);
  // Robust step: points whose relative residual exceeds 3x the median (and 5%) — e.g. small
  // messages hit by TCP or shaper effects the model has no term for — are left out and the fit
  // repeated (up to 3 times), while 6+ points remain; every point's residual is still reported.
  std::vector<bool> use(X.size(), true);
  std::vector<double> coef = solve(X, y, w, use);
  for (int round = 0; round < 3; ++round) {  // re-judged against each refit, so a skewed first fit is undone
    std::vector<double> e;
    for (std::size_t i = 0; i < X.size(); ++i) e.push_back(std::abs((dot(X[i], coef) - y[i]) / y[i]));
    std::vector<double> sorted = e;
    std::sort(sorted.begin(), sorted.end());
    const double cut = std::max(0.05, 3 * sorted[sorted.size() / 2]);
    std::vector<bool> next(X.size());
    std::size_t kept = 0;
    for (std::size_t i = 0; i < X.size(); ++i) kept += (next[i] = e[i] <= cut) ? 1 : 0;
    if (next == use || kept < 6) break;
    try {
      coef = solve(X, y, w, next);
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
  r.coef = coef;
  double sq = 0;
  for (std::size_t i = 0; i < X.size(); ++i) {
    const double p = dot(X[i], coef);
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

ClusterFitResult fit_alpha_beta(const std::vector<CollectiveSample>& samples, bool launch_per_kind) {
  std::vector<OpKind> kinds;  // the launch columns, in first-seen order
  for (const auto& s : samples) {
    check_sample(s, "cluster fit");
    if (launch_per_kind && std::find(kinds.begin(), kinds.end(), s.kind) == kinds.end()) kinds.push_back(s.kind);
  }
  if (samples.size() < 3) throw std::invalid_argument("cluster fit: need at least 3 samples with 2+ ranks");
  std::vector<std::vector<double>> X;
  std::vector<double> y;
  for (const auto& s : samples) {
    auto row = alpha_beta_row(s.kind, s.bytes, s.ranks);  // alpha, beta, launch
    if (launch_per_kind) {
      row.resize(2 + kinds.size(), 0.0);
      std::fill(row.begin() + 2, row.end(), 0.0);
      row[2 + static_cast<std::size_t>(std::find(kinds.begin(), kinds.end(), s.kind) - kinds.begin())] = 1.0;
    }
    X.push_back(std::move(row));
    y.push_back(s.time_s);
  }
  ClusterFitResult r = fit_rows(X, y);
  if (launch_per_kind) {
    for (std::size_t k = 0; k < kinds.size(); ++k) r.launch_s_by_kind[kinds[k]] = r.coef[2 + k];
    // The shared figure: the allreduce's (the collective most plans run), else the smallest.
    if (const auto it = r.launch_s_by_kind.find(OpKind::allreduce); it != r.launch_s_by_kind.end())
      r.launch_s = it->second;
    else {
      r.launch_s = r.launch_s_by_kind.begin()->second;
      for (const auto& [k, v] : r.launch_s_by_kind) r.launch_s = std::min(r.launch_s, v);
    }
  } else {
    r.launch_s = r.coef[2];
  }
  return r;
}

double fit_launch_only(const std::vector<CollectiveSample>& samples, double alpha_s, double beta_s_per_byte) {
  if (samples.empty()) throw std::invalid_argument("launch fit: no samples");
  double num = 0, den = 0;
  for (const auto& s : samples) {
    check_sample(s, "launch fit");
    const double w2 = 1.0 / (s.time_s * s.time_s);
    num += w2 * (s.time_s - alpha_beta_time(s.kind, s.bytes, s.ranks, alpha_s, beta_s_per_byte, 0));
    den += w2;
  }
  return std::max(0.0, num / den);
}

ClusterFitResult fit_point_to_point(const std::vector<LinkSample>& samples) {
  std::vector<std::vector<double>> X;
  std::vector<double> y;
  for (const auto& s : samples) {
    if (!(s.time_s > 0) || !std::isfinite(s.time_s) || s.bytes <= 0)
      throw std::invalid_argument("link fit: every sample needs positive bytes and a positive time");
    X.push_back({1.0, static_cast<double>(s.bytes)});
    y.push_back(s.time_s);
  }
  if (X.size() < 3) throw std::invalid_argument("link fit: need at least 3 samples");
  return fit_rows(X, y);
}

}  // namespace redsim
