// tuned.json, the ranked table and the SVG report.
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <tuple>
#include <sstream>

#include "core/knobs_json.h"
#include "core/step_summary.h"
#include "sim/sim_engine.h"
#include "strategies/strategy.h"
#include "tests/tune/tune_test_support.h"
#include "tune/report_svg.h"
#include "tune/tune_output.h"

using namespace redsim;
using namespace redsim::tune;

namespace {

struct Tuned {
  testing::TuneProblem problem = testing::mixed_multi_node();
  TuneResult result;
  TuneInputs inputs;
  Tuned() {
    problem.axes.channels = {1, 2};
    result = autotune(problem.trace, problem.cluster, problem.constraints, problem.axes, TuneOptions{});
    inputs = TuneInputs{"trace.json", "cluster.json", &problem.trace, &problem.cluster, problem.constraints};
  }
};

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto pos = s.find(what); pos != std::string::npos; pos = s.find(what, pos + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("tuned.json carries the chosen knobs, which simulate to the predicted time", "[tune][output]") {
  Tuned t;
  const auto& r = t.result;
  const auto j = tuned_json(r, t.inputs);
  CHECK(j.at("format") == "redsim-tuned");
  // The "knobs" object is what redsim simulate --config reads.
  const Knobs k = knobs_from_json(j.at("knobs"), "tuned.json", "$.knobs", Knobs{});
  CHECK(knobs_to_json(k) == knobs_to_json(r.candidate(r.best).knobs));
  CHECK(j.at("predicted").at("time_per_optimizer_step_s").get<double>() == r.eval(r.best).objective_s);
  CHECK(j.at("predicted").at("step_time_s").get<double>() == r.eval(r.best).step_time_s);
  // Simulating the chosen knobs again gives the same step.
  const auto plan = make_strategy(k.strategy)->plan(t.problem.trace, t.problem.cluster, k);
  SimOptions sim;
  sim.fidelity = r.fidelity;
  CHECK(summarize(plan, simulate(plan, t.problem.cluster, sim)).step_time_s == r.eval(r.best).step_time_s);

  // Runners-up: distinct settings, no faster than the best, in order.
  const auto& ru = j.at("runners_up");
  REQUIRE(ru.size() == 5);
  double prev = r.eval(r.best).objective_s;
  for (const auto& x : ru) {
    const double v = x.at("predicted").at("time_per_optimizer_step_s").get<double>();
    CHECK(v >= prev);
    prev = v;
  }
  CHECK(j.at("search").at("method") == "guided");
  CHECK(j.at("search").at("simulations") == r.simulations);
  CHECK(j.at("search").at("grid_points") == r.grid.points.size());
  CHECK(j.at("inputs").at("engine").at("fidelity") == std::string(fidelity_name(r.fidelity)));
  CHECK(j.at("best_per_strategy").size() == 5);
  CHECK(j.at("constraints").at("microbatches") == 2);
}

TEST_CASE("the ranked table shows the best, each strategy and the notes", "[tune][output]") {
  Tuned t;
  std::ostringstream out;
  print_ranked_table(out, t.result, t.inputs, 2, -1, 1);
  const auto s = out.str();
  CHECK(s.find("best: " + t.result.candidate(t.result.best).family + ": ") != std::string::npos);
  for (const auto& f : tune_families()) CHECK(s.find("  " + f + " ") != std::string::npos);
  CHECK(s.find("search: guided, " + std::to_string(t.result.simulations) + " simulations") != std::string::npos);
  CHECK(s.find("notes:") != std::string::npos);
}

TEST_CASE("the SVG report draws a line per strategy, algorithm and channel count and marks the choice", "[tune][output]") {
  Tuned t;
  const auto svg = tune_report_svg(t.result, t.inputs);
  CHECK(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
  CHECK(svg.find("</svg>\n") == svg.size() - 7);
  CHECK(count(svg, "<svg") == 1);
  CHECK(svg.find("chosen: " + t.result.candidate(t.result.best).family) != std::string::npos);
  CHECK(svg.find("stroke=\"#d00\"") != std::string::npos);
  // A legend entry per (strategy, algorithm, channels) that was simulated, and a polyline per such
  // series with two or more simulated bucket sizes: lines never join settings of another algorithm.
  std::map<std::tuple<std::string, std::string, int>, std::set<std::int64_t>> series;
  for (auto p : t.result.ranking) {
    const auto& c = t.result.candidate(p);
    const std::string alg = c.family == "zero" ? "ring" : algorithm_label(c.knobs);
    series[{c.family, alg, c.knobs.channels}].insert(c.knobs.bucket_cap_bytes);
  }
  std::size_t lines = 0;
  for (const auto& [key, buckets] : series) {
    const auto& [f, alg, ch] = key;
    CHECK(svg.find(">" + f + ", " + alg + " x" + std::to_string(ch)) != std::string::npos);
    if (f != "flat" && buckets.size() > 1) ++lines;
  }
  CHECK(count(svg, "<polyline") == lines);
  // Balanced elements.
  CHECK(count(svg, "<text") == count(svg, "</text>"));
  CHECK(count(svg, "<g ") == count(svg, "</g>"));
}
