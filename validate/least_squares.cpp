#include "validate/least_squares.h"

#include <cmath>
#include <stdexcept>

namespace redsim {

LeastSquaresFit weighted_least_squares(const std::vector<std::vector<double>>& X, const std::vector<double>& y,
                                       const std::vector<double>& w) {
  const std::size_t m = X.size();
  if (m == 0 || y.size() != m || w.size() != m) throw std::invalid_argument("least squares: mismatched sizes");
  const std::size_t n = X[0].size();
  if (m < n) throw std::invalid_argument("least squares: fewer observations than unknowns");
  std::vector<std::vector<double>> A(m, std::vector<double>(n));
  std::vector<double> b(m);
  for (std::size_t i = 0; i < m; ++i) {
    if (X[i].size() != n) throw std::invalid_argument("least squares: ragged rows");
    for (std::size_t j = 0; j < n; ++j) A[i][j] = X[i][j] * w[i];
    b[i] = y[i] * w[i];
  }
  double scale = 0;
  for (const auto& row : A)
    for (double v : row) scale = std::max(scale, std::fabs(v));
  // Householder QR in place: A becomes R (upper part), b becomes Q^T b.
  for (std::size_t k = 0; k < n; ++k) {
    double norm = 0;
    for (std::size_t i = k; i < m; ++i) norm += A[i][k] * A[i][k];
    norm = std::sqrt(norm);
    if (norm <= 1e-12 * std::max(scale, 1e-300)) throw std::invalid_argument("least squares: rank-deficient design");
    const double alpha = A[k][k] > 0 ? -norm : norm;
    std::vector<double> v(m, 0.0);
    v[k] = A[k][k] - alpha;
    for (std::size_t i = k + 1; i < m; ++i) v[i] = A[i][k];
    double vnorm2 = 0;
    for (std::size_t i = k; i < m; ++i) vnorm2 += v[i] * v[i];
    if (vnorm2 == 0) continue;
    for (std::size_t j = k; j < n; ++j) {
      double dot = 0;
      for (std::size_t i = k; i < m; ++i) dot += v[i] * A[i][j];
      const double f = 2 * dot / vnorm2;
      for (std::size_t i = k; i < m; ++i) A[i][j] -= f * v[i];
    }
    double dot = 0;
    for (std::size_t i = k; i < m; ++i) dot += v[i] * b[i];
    const double f = 2 * dot / vnorm2;
    for (std::size_t i = k; i < m; ++i) b[i] -= f * v[i];
  }
  LeastSquaresFit fit;
  fit.coef.assign(n, 0.0);
  for (std::size_t k = n; k-- > 0;) {
    double s = b[k];
    for (std::size_t j = k + 1; j < n; ++j) s -= A[k][j] * fit.coef[j];
    fit.coef[k] = s / A[k][k];
  }
  double ss = 0;
  for (std::size_t i = 0; i < m; ++i) {
    double pred = 0;
    for (std::size_t j = 0; j < n; ++j) pred += X[i][j] * fit.coef[j];
    const double r = y[i] - pred;
    fit.residuals.push_back(r);
    ss += r * r;
    if (y[i] != 0) fit.max_abs_relative_residual = std::max(fit.max_abs_relative_residual, std::fabs(r / y[i]));
  }
  fit.rms_residual = std::sqrt(ss / static_cast<double>(m));
  return fit;
}

LeastSquaresFit least_squares(const std::vector<std::vector<double>>& X, const std::vector<double>& y) {
  return weighted_least_squares(X, y, std::vector<double>(y.size(), 1.0));
}

}  // namespace redsim
