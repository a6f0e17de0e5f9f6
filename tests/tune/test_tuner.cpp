// The search: the guided tuner against exhaustive search, computed here.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <limits>

#include "core/step_summary.h"
#include "core/units.h"
#include "sim/sim_engine.h"
#include "strategies/strategy.h"
#include "tests/tune/tune_test_support.h"
#include "tune/parallel.h"
#include "tune/tuner.h"

using namespace redsim;
using namespace redsim::tune;

namespace {

// Exhaustive search written out: simulate every grid point, keep the shortest time per
// optimizer step (time per sample x batch x world x micro-batches).
double brute_force_best(const testing::TuneProblem& p, SimOptions sim) {
  const auto grid = build_grid(p.axes, p.constraints, p.cluster);
  const double samples =
      static_cast<double>(p.trace.batch_size_per_rank) * p.cluster.world_size() * p.constraints.microbatches;
  std::vector<double> objective(grid.points.size());
  parallel_for(grid.points.size(), default_threads(), [&](std::size_t i) {
    const auto& k = grid.points[i].knobs;
    const auto plan = make_strategy(k.strategy)->plan(p.trace, p.cluster, k);
    objective[i] = summarize(plan, simulate(plan, p.cluster, sim)).time_per_sample_s * samples;
  });
  return *std::min_element(objective.begin(), objective.end());
}

testing::TuneProblem small_star() {
  auto p = testing::comm_bound_star();
  p.constraints.strategies = {"flat", "bucketed"};
  p.axes.bucket_bytes = {kMiB, 2 * kMiB, 4 * kMiB, 8 * kMiB, 16 * kMiB, 32 * kMiB, 64 * kMiB};
  p.axes.channels = {1, 2};
  p.axes.algorithms = {Algorithm::ring, Algorithm::tree};
  p.axes.first_bucket_bytes = {kMiB, 4 * kMiB};
  return p;
}

testing::TuneProblem small_multi_node() {
  auto p = testing::mixed_multi_node();
  p.constraints.strategies = {"zero", "accumulate", "localsgd"};
  p.axes.bucket_bytes = {kMiB, 2 * kMiB, 4 * kMiB, 8 * kMiB, 16 * kMiB, 32 * kMiB};
  p.axes.channels = {1, 2};
  p.axes.algorithms = {Algorithm::ring, Algorithm::hierarchical};
  p.axes.first_bucket_bytes = {kMiB};
  p.axes.allgather_bucket_bytes = {4 * kMiB, 16 * kMiB};
  p.axes.zero_stages = {2};
  return p;
}

}  // namespace

TEST_CASE("the guided search picks the exhaustive optimum on small grids", "[tune][search]") {
  for (auto problem : {small_star(), small_multi_node()}) {
    INFO(problem.name);
    TuneOptions opt;
    const auto r = autotune(problem.trace, problem.cluster, problem.constraints, problem.axes, opt);
    SimOptions sim;
    sim.fidelity = r.fidelity;
    const double best = brute_force_best(problem, sim);
    CHECK(r.eval(r.best).objective_s == best);
    CHECK(r.simulations < static_cast<int>(r.grid.points.size()));
    // The tuner's own exhaustive mode agrees.
    opt.method = SearchMethod::exhaustive;
    const auto ex = autotune(problem.trace, problem.cluster, problem.constraints, problem.axes, opt);
    CHECK(ex.eval(ex.best).objective_s == best);
  }
}

TEST_CASE("on a larger grid the guided search is within 1% of exhaustive, simulating at most 20%",
          "[tune][search]") {
  auto problem = testing::mixed_multi_node();  // all five families, 1542 settings
  TuneOptions opt;
  const auto guided = autotune(problem.trace, problem.cluster, problem.constraints, problem.axes, opt);
  opt.method = SearchMethod::exhaustive;
  const auto ex = autotune(problem.trace, problem.cluster, problem.constraints, problem.axes, opt);
  REQUIRE(ex.grid.points.size() == guided.grid.points.size());
  REQUIRE(ex.grid.points.size() > 1000);
  // Every point of the grid was simulated by the exhaustive search, and its best is the minimum.
  double best = std::numeric_limits<double>::infinity();
  for (std::size_t p = 0; p < ex.points.size(); ++p) {
    REQUIRE(ex.evaluated(p));
    best = std::min(best, ex.eval(p).objective_s);
  }
  CHECK(ex.eval(ex.best).objective_s == best);
  const double gap = guided.eval(guided.best).objective_s / best - 1;
  CHECK(gap >= 0);
  CHECK(gap <= 0.01);
  CHECK(guided.simulations <= 0.2 * static_cast<double>(guided.grid.points.size()));
  CHECK(guided.simulations <= 0.2 * ex.simulations);  // also against the distinct plans
  std::printf("tune: larger grid: %zu points (%d distinct plans), guided %d simulations, gap %.4f%%\n",
              ex.grid.points.size(), ex.simulations, guided.simulations, gap * 100);
}

TEST_CASE("the guided search is deterministic whatever the number of threads", "[tune][search]") {
  auto problem = testing::comm_bound_star();
  TuneOptions opt;
  opt.threads = 1;
  const auto a = autotune(problem.trace, problem.cluster, problem.constraints, problem.axes, opt);
  opt.threads = 3;
  const auto b = autotune(problem.trace, problem.cluster, problem.constraints, problem.axes, opt);
  CHECK(a.best == b.best);
  CHECK(a.simulations == b.simulations);
  CHECK(a.ranking == b.ranking);
  REQUIRE(a.evaluations.size() == b.evaluations.size());
  for (std::size_t i = 0; i < a.evaluations.size(); ++i) CHECK(a.evaluations[i].objective_s == b.evaluations[i].objective_s);
}

TEST_CASE("ties go to the least memory, then to the first setting in canonical order", "[tune][search]") {
  auto problem = testing::comm_bound_star();
  problem.constraints.strategies = {"zero", "bucketed"};
  TuneOptions opt;
  opt.method = SearchMethod::exhaustive;
  const auto r = autotune(problem.trace, problem.cluster, problem.constraints, problem.axes, opt);
  for (auto p : r.ranking) {
    const double d = r.eval(p).objective_s - r.eval(r.best).objective_s;
    CHECK(d >= 0);
    if (d == 0) {
      CHECK(r.points[p].memory.total_bytes() >= r.points[r.best].memory.total_bytes());
      if (r.points[p].memory.total_bytes() == r.points[r.best].memory.total_bytes()) CHECK(p >= r.best);
    }
  }
  // ZeRO stages 1 and 2 simulate alike: stage 2 wins the tie (less memory).
  for (auto p : r.ranking)
    if (r.candidate(p).family == "zero") {
      CHECK(r.candidate(p).knobs.zero_stage == 2);
      break;
    }
}

TEST_CASE("the guided search stays within its simulation budget", "[tune][search]") {
  auto problem = testing::comm_bound_star();
  TuneOptions opt;
  opt.max_simulations = 6;
  const auto r = autotune(problem.trace, problem.cluster, problem.constraints, problem.axes, opt);
  CHECK(r.simulations <= 6);
  CHECK(r.budget_exhausted);
  CHECK(r.evaluated(r.best));
}
