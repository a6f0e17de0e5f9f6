// The simulation cache shared by tune --target's searches (tune/sim_cache.h), and the step
// model's error report (tune/model_error.h).
#include <catch2/catch.hpp>

#include <cmath>

#include <memory>

#include "core/units.h"

#include "tune/model_error.h"
#include "tune/sim_cache.h"
#include "tune/tuner.h"
#include "tests/tune/tune_test_support.h"

using namespace redsim;
using namespace redsim::tune;

namespace {

// Flat and bucketed on 4 single-device nodes: 2 x 7 bucket sizes x 2 channels x 2 algorithms.
testing::TuneProblem small_star() {
  auto p = testing::comm_bound_star();
  p.constraints.strategies = {"flat", "bucketed"};
  p.axes.bucket_bytes = {kMiB, 2 * kMiB, 4 * kMiB, 8 * kMiB, 16 * kMiB, 32 * kMiB, 64 * kMiB};
  p.axes.channels = {1, 2};
  p.axes.algorithms = {Algorithm::ring, Algorithm::tree};
  p.axes.first_bucket_bytes = {kMiB, 4 * kMiB};
  return p;
}

}  // namespace

TEST_CASE("a search adopts every cached simulation of its grid and simulates nothing twice", "[tune][cache]") {
  const auto problem = small_star();
  TuneOptions alone;
  const auto reference = autotune(problem.trace, problem.cluster, problem.constraints, problem.axes, alone);

  TuneOptions shared;
  shared.cache = std::make_shared<SimCache>();
  shared.method = SearchMethod::exhaustive;
  const auto first = autotune(problem.trace, problem.cluster, problem.constraints, problem.axes, shared);
  // The exhaustive search simulated each distinct plan once, and the cache holds each.
  CHECK(first.reused == 0);
  CHECK(shared.cache->size() == static_cast<std::size_t>(first.simulations));
  // A second search of the same grid finds all of them: nothing is simulated again, and it
  // reaches the exhaustive optimum, which the guided search alone reaches too (small grid).
  shared.method = SearchMethod::guided;
  const auto second = autotune(problem.trace, problem.cluster, problem.constraints, problem.axes, shared);
  CHECK(second.simulations == 0);
  CHECK(second.reused == first.simulations);
  CHECK(second.eval(second.best).objective_s == first.eval(first.best).objective_s);
  CHECK(reference.eval(reference.best).objective_s == first.eval(first.best).objective_s);
  CHECK(shared.cache->size() == static_cast<std::size_t>(first.simulations));
}

TEST_CASE("the step model's error is (estimate - simulated) / simulated per strategy", "[tune][model]") {
  // Two simulated settings of one family with known estimates: 90 ms for 100 ms (-10%) and
  // 230 ms for 200 ms (+15%); one of another family without an estimate (not counted).
  TuneResult r;
  r.grid.points.resize(3);
  r.grid.points[0].family = "bucketed";
  r.grid.points[1].family = "bucketed";
  r.grid.points[2].family = "zero";
  r.points.resize(3);
  r.evaluations.resize(3);
  const double simulated_s[] = {0.100, 0.200, 0.300};
  for (std::size_t i = 0; i < 3; ++i) {
    r.points[i].evaluation = i;
    r.evaluations[i].objective_s = simulated_s[i];
  }
  r.evaluations[0].estimate_s = 0.090;
  r.evaluations[1].estimate_s = 0.230;
  r.evaluations[1].corrected_estimate_s = 0.202;  // +1%
  const auto rows = step_model_error({&r});
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].family == "bucketed");
  CHECK(rows[0].settings == 2);
  CHECK(std::abs(rows[0].mean_abs_error - 0.125) < 1e-12);     // (10% + 15%) / 2
  CHECK(std::abs(rows[0].mean_signed_error - 0.025) < 1e-12);  // (-10% + 15%) / 2
  CHECK(std::abs(rows[0].max_abs_error - 0.15) < 1e-12);
  CHECK(std::abs(rows[0].corrected_mean_abs_error - 0.055) < 1e-12);  // (10% + 1%) / 2: no correction = raw
  CHECK(rows[0].worst_estimate_s == 0.230);
  CHECK(rows[0].worst_simulated_s == 0.200);
}
