// The calibrate fit recovers known alpha-beta parameters from synthetic sweeps generated with the
// simulator's formulas (validate/cluster_fit.h), with and without small deterministic noise.
#include <cmath>
#include <map>
#include <vector>

#include <catch2/catch.hpp>

#include "validate/cluster_fit.h"

using namespace redsim;

namespace {

std::vector<CollectiveSample> sweep(int ranks, double alpha, double beta, double launch, double noise) {
  std::vector<CollectiveSample> s;
  int i = 0;
  for (OpKind k : {OpKind::allreduce, OpKind::reduce, OpKind::reduce_scatter, OpKind::allgather, OpKind::broadcast})
    for (std::int64_t b = 4096; b <= (64LL << 20); b *= 2, ++i) {
      // Deterministic noise in [-noise, +noise]: a fixed pseudo-random sequence.
      const double u = std::sin(12.9898 * i) * 43758.5453;
      const double e = noise * (2 * (u - std::floor(u)) - 1);
      s.push_back({k, b, ranks, alpha_beta_time(k, b, ranks, alpha, beta, launch) * (1 + e)});
    }
  return s;
}

}  // namespace

TEST_CASE("alpha-beta rows follow the simulator's formulas", "[cluster_fit]") {
  // Ring allreduce on 4 ranks: 6 alpha + 1.5 S beta + launch.
  CHECK(alpha_beta_time(OpKind::allreduce, 1 << 20, 4, 1e-5, 1e-9, 2e-5) ==
        Approx(6e-5 + 1.5 * (1 << 20) * 1e-9 + 2e-5));
  // RS/AG: 3 alpha + 0.75 S beta.
  CHECK(alpha_beta_time(OpKind::reduce_scatter, 1 << 20, 4, 1e-5, 1e-9, 0) == Approx(3e-5 + 0.75 * (1 << 20) * 1e-9));
  // Chain broadcast of 2 MiB on 4 ranks: P = 4 chunks of 512 KiB, (4 + 4 - 2) (alpha + 512 KiB beta).
  CHECK(alpha_beta_time(OpKind::broadcast, 2 << 20, 4, 1e-5, 1e-9, 0) == Approx(6 * (1e-5 + 524288 * 1e-9)));
  // Below one chunk: P = 1.
  CHECK(alpha_beta_time(OpKind::reduce, 4096, 2, 1e-5, 1e-9, 0) == Approx(1 * (1e-5 + 4096 * 1e-9)));
}

TEST_CASE("the fit recovers exact synthetic parameters", "[cluster_fit]") {
  const double alpha = 80e-6, beta = 1.0 / 50e6, launch = 150e-6;  // 400 Mbit/s
  const auto fit = fit_alpha_beta(sweep(4, alpha, beta, launch, 0));
  CHECK(fit.alpha_s == Approx(alpha).epsilon(1e-6));
  CHECK(fit.beta_s_per_byte == Approx(beta).epsilon(1e-6));
  CHECK(fit.launch_s == Approx(launch).epsilon(1e-6));
  CHECK(fit.max_abs_relative_error < 1e-9);
}

TEST_CASE("the fit recovers synthetic parameters under 2% noise", "[cluster_fit]") {
  const double alpha = 30e-6, beta = 1.0 / 2e9, launch = 40e-6;
  const auto fit = fit_alpha_beta(sweep(2, alpha, beta, launch, 0.02));
  CHECK(fit.beta_s_per_byte == Approx(beta).epsilon(0.02));
  CHECK(fit.alpha_s + fit.launch_s / 2 == Approx(alpha + launch / 2).epsilon(0.15));
  CHECK(fit.rms_relative_error < 0.02);
  CHECK(fit.max_abs_relative_error < 0.05);
  REQUIRE(fit.relative_error.size() == 5 * 15);
}

TEST_CASE("a negative launch overhead is clamped to zero and refitted", "[cluster_fit]") {
  const double alpha = 50e-6, beta = 1.0 / 1e8;
  auto s = sweep(4, alpha, beta, 0, 0);
  for (auto& x : s) x.time_s -= 5e-6;  // would fit launch = -5 us
  const auto fit = fit_alpha_beta(s);
  CHECK(fit.launch_s == 0);
  CHECK(fit.alpha_s > 0);
  CHECK(fit.beta_s_per_byte == Approx(beta).epsilon(0.05));
}

TEST_CASE("the fit rejects unusable samples", "[cluster_fit]") {
  CHECK_THROWS_AS(fit_alpha_beta({}), std::invalid_argument);
  CHECK_THROWS_AS(fit_alpha_beta({{OpKind::allreduce, 4096, 1, 1e-3}}), std::invalid_argument);
  std::vector<CollectiveSample> one_size(4, CollectiveSample{OpKind::allreduce, 4096, 2, 1e-3});
  CHECK_THROWS_AS(fit_alpha_beta(one_size), std::invalid_argument);
}

TEST_CASE("outliers at small sizes are left out of the fit", "[cluster_fit]") {
  const double alpha = 40e-6, beta = 1.0 / 50e6, launch = 100e-6;
  auto s = sweep(2, alpha, beta, launch, 0.01);
  int outliers = 0;
  for (auto& x : s)
    if (x.bytes <= 16384 && x.kind == OpKind::allreduce) {
      x.time_s += 4e-3;  // e.g. a shaper's or TCP's stall the model has no term for
      ++outliers;
    }
  const auto fit = fit_alpha_beta(s);
  CHECK(fit.points_used == static_cast<int>(s.size()) - outliers);
  CHECK(fit.beta_s_per_byte == Approx(beta).epsilon(0.03));
  CHECK(fit.rms_relative_error < 0.02);
}

TEST_CASE("a latency-bound sweep still fits a positive bandwidth", "[cluster_fit]") {
  // Times that do not grow with size (a noisy, latency-bound loopback sweep): the fit drops alpha
  // and the launch term rather than return a non-positive 1/bandwidth.
  std::vector<CollectiveSample> s;
  for (std::int64_t b = 4096; b <= 262144; b *= 2)
    for (OpKind k : {OpKind::allreduce, OpKind::reduce_scatter, OpKind::allgather})
      s.push_back({k, b, 2, b == 4096 ? 8e-3 : 5e-3});
  const auto fit = fit_alpha_beta(s);
  CHECK(fit.beta_s_per_byte > 0);
  CHECK(fit.alpha_s >= 0);
  CHECK(fit.launch_s >= 0);
}

TEST_CASE("the point-to-point fit recovers a link's latency and bandwidth", "[cluster_fit]") {
  // One way over a 400 Mbit/s link with 120 us latency: t = alpha + S / B, no launch term.
  const double alpha = 120e-6, bandwidth = 50e6;
  std::vector<LinkSample> s;
  for (std::int64_t b = 4096; b <= (16LL << 20); b *= 2) s.push_back({b, alpha + static_cast<double>(b) / bandwidth});
  // One stalled small message (a TCP retransmit-like outlier) must not move the fit.
  s[2].time_s *= 8;
  const auto fit = fit_point_to_point(s);
  CHECK(fit.alpha_s == Approx(alpha).epsilon(1e-6));
  CHECK(fit.bandwidth_Bps() == Approx(bandwidth).epsilon(1e-6));
  CHECK(fit.launch_s == 0);
  CHECK_FALSE(fit.used[2]);
  CHECK(fit.points_used == static_cast<int>(s.size()) - 1);
  CHECK_THROWS_AS(fit_point_to_point({{4096, 1e-4}, {8192, 2e-4}}), std::invalid_argument);
  CHECK_THROWS_AS(fit_point_to_point({{4096, 1e-4}, {8192, 0}, {16384, 3e-4}}), std::invalid_argument);
}

TEST_CASE("per-kind launch overheads are recovered, one per collective", "[cluster_fit]") {
  // Gloo-like: the allreduce costs more to set up than the chains; same link for all.
  const double alpha = 50e-6, beta = 1.0 / 47e6;
  const std::map<OpKind, double> launch = {{OpKind::allreduce, 2.5e-3}, {OpKind::reduce, 0.3e-3},
                                           {OpKind::reduce_scatter, 1.0e-3}, {OpKind::allgather, 0.8e-3},
                                           {OpKind::broadcast, 0.2e-3}};
  std::vector<CollectiveSample> s;
  for (const auto& [k, l] : launch)
    for (std::int64_t b = 256 << 10; b <= (64LL << 20); b *= 2) s.push_back({k, b, 4, alpha_beta_time(k, b, 4, alpha, beta, l)});
  const auto fit = fit_alpha_beta(s, true);
  CHECK(fit.alpha_s == Approx(alpha).epsilon(1e-6));
  CHECK(fit.beta_s_per_byte == Approx(beta).epsilon(1e-6));
  REQUIRE(fit.launch_s_by_kind.size() == 5);
  for (const auto& [k, l] : launch) {
    CAPTURE(op_kind_name(k));
    CHECK(fit.launch_s_by_kind.at(k) == Approx(l).epsilon(1e-6));
  }
  CHECK(fit.launch_s == Approx(2.5e-3).epsilon(1e-6));  // the allreduce's is the shared figure
  // One shared launch cannot fit these: its residuals are far larger.
  CHECK(fit_alpha_beta(s, false).rms_relative_error > 100 * fit.rms_relative_error);
}

TEST_CASE("a kind's launch overhead alone, alpha and bandwidth held", "[cluster_fit]") {
  const double alpha = 40e-6, beta = 1.0 / 47e6, launch = 0.6e-3;
  std::vector<CollectiveSample> chain;
  for (std::int64_t b = 256 << 10; b <= (16LL << 20); b *= 2)
    chain.push_back({OpKind::reduce, b, 4, alpha_beta_time(OpKind::reduce, b, 4, alpha, beta, launch)});
  CHECK(fit_launch_only(chain, alpha, beta) == Approx(launch).epsilon(1e-9));
  // Faster than the held model at every size (a shaper's burst): clamped at 0, not negative.
  for (auto& s : chain) s.time_s = alpha_beta_time(OpKind::reduce, s.bytes, 4, alpha, beta, 0) * 0.8;
  CHECK(fit_launch_only(chain, alpha, beta) == 0);
  CHECK_THROWS_AS(fit_launch_only({}, alpha, beta), std::invalid_argument);
}
