// Ordinary least squares for the small, well-conditioned fits calibrate makes (a handful of
// unknowns: latencies, inverse bandwidths, per-collective overheads). Householder QR, so no
// normal equations squaring the condition number.
#pragma once
#include <vector>

namespace redsim {

struct LeastSquaresFit {
  std::vector<double> coef;       // one per column of X
  std::vector<double> residuals;  // y - X coef, per row
  double rms_residual = 0;
  double max_abs_relative_residual = 0;  // max |residual / y| over rows with y != 0
};

// Rows of X are observations. Throws std::invalid_argument if X has fewer rows than columns
// or its columns are linearly dependent (rank deficient).
LeastSquaresFit least_squares(const std::vector<std::vector<double>>& X, const std::vector<double>& y);

// Weighted: each row scaled by w (e.g. 1/y for relative error).
LeastSquaresFit weighted_least_squares(const std::vector<std::vector<double>>& X, const std::vector<double>& y,
                                       const std::vector<double>& w);

}  // namespace redsim
