// The least-squares fit calibrate relies on recovers known parameters.
#include <catch2/catch.hpp>

#include <cmath>

#include "validate/least_squares.h"

using namespace redsim;

TEST_CASE("least squares recovers an alpha-beta model from exact data", "[core][fit]") {
  // t = alpha + S / B with alpha = 25 us and B = 50 MB/s, sizes 4 KiB .. 256 MiB.
  const double alpha = 25e-6, inv_B = 1.0 / 50e6;
  std::vector<std::vector<double>> X;
  std::vector<double> y;
  for (double s = 4096; s <= 256.0 * 1024 * 1024; s *= 4) {
    X.push_back({1.0, s});
    y.push_back(alpha + s * inv_B);
  }
  // Relative weights: small messages matter as much as large ones.
  std::vector<double> w;
  for (double t : y) w.push_back(1.0 / t);
  auto fit = weighted_least_squares(X, y, w);
  CHECK(fit.coef[0] == Approx(alpha).epsilon(1e-9));
  CHECK(fit.coef[1] == Approx(inv_B).epsilon(1e-9));
  CHECK(fit.max_abs_relative_residual < 1e-9);
}

TEST_CASE("least squares with three unknowns and deterministic noise", "[core][fit]") {
  // y = 3 + 2 a - 0.5 b, with a +-1% alternating perturbation: the fit stays within a few %.
  std::vector<std::vector<double>> X;
  std::vector<double> y;
  int k = 0;
  for (double a = 1; a <= 10; a += 1)
    for (double b = 0; b <= 20; b += 5) {
      X.push_back({1, a, b});
      y.push_back((3 + 2 * a - 0.5 * b + 20) * (1 + ((k++ % 2) ? 0.01 : -0.01)) - 20);
    }
  auto fit = least_squares(X, y);
  CHECK(fit.coef[1] == Approx(2).epsilon(0.05));
  CHECK(fit.coef[2] == Approx(-0.5).epsilon(0.05));
  CHECK(fit.rms_residual > 0);
}

TEST_CASE("a rank-deficient design is refused", "[core][fit]") {
  std::vector<std::vector<double>> X{{1, 2}, {2, 4}, {3, 6}};
  CHECK_THROWS_AS(least_squares(X, {1, 2, 3}), std::invalid_argument);
  CHECK_THROWS_AS(least_squares({{1, 2}}, {1}), std::invalid_argument);
}
