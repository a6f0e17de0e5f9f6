// redsim tune --target: each framework's search holds only what that framework runs, its pick is
// a simulated setting or the framework's simulated defaults, and its files say which.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "core/error.h"
#include "core/units.h"
#include "tests/tune/tune_test_support.h"
#include "tune/merged_result.h"
#include "tune/search_space.h"
#include "tune/sim_cache.h"
#include "tune/target_emitters.h"
#include "tune/targets.h"

using namespace redsim;
using namespace redsim::tune;

namespace {

std::set<std::string> families(const Grid& g) {
  std::set<std::string> f;
  for (const auto& c : g.points) f.insert(c.family);
  return f;
}

bool any_hierarchical(const Grid& g) {
  return std::any_of(g.points.begin(), g.points.end(),
                     [](const Candidate& c) { return c.knobs.algorithm == Algorithm::hierarchical; });
}

}  // namespace

TEST_CASE("each target's grid holds only what its framework runs", "[tune][targets]") {
  auto p = testing::mixed_multi_node();  // 2 nodes x 2 devices: hierarchical applies
  const auto grid = [&](const std::string& t) {
    const auto c = target_constraints(t, p.constraints);
    return build_grid(target_axes(t, c), c, p.cluster);
  };
  const Grid ddp = grid("ddp"), horovod = grid("horovod"), nccl = grid("nccl"), ds = grid("deepspeed"), fsdp = grid("fsdp");
  CHECK(families(ddp) == std::set<std::string>{"flat", "bucketed", "accumulate", "localsgd"});
  CHECK_FALSE(any_hierarchical(ddp));  // neither DDP nor NCCL has it
  CHECK(any_hierarchical(horovod));    // HOROVOD_HIERARCHICAL_ALLREDUCE
  CHECK(families(ds) == std::set<std::string>{"zero", "fsdp"});
  // FSDP's HYBRID_SHARD: a node of 2 devices is the one group that splits 4 ranks in replicas.
  CHECK(families(fsdp) == std::set<std::string>{"fsdp", "hsdp"});
  for (const auto& c : fsdp.points)
    if (c.family == "hsdp") CHECK(c.knobs.shard_group == 2);
  // NCCL: DDP's buckets stay at its defaults; only the collective settings vary.
  CHECK(families(nccl) == std::set<std::string>{"bucketed"});
  for (const auto& c : nccl.points) {
    CHECK(c.knobs.bucket_cap_bytes == 25 * kMiB);
    CHECK(c.knobs.first_bucket_cap_bytes == 1 * kMiB);
  }
  CHECK_FALSE(any_hierarchical(nccl));
  // DeepSpeed's ZeRO-3 always re-gathers for backward.
  for (const auto& c : ds.points)
    if (c.family == "fsdp") CHECK(c.knobs.reshard_after_forward);
}

TEST_CASE("a section's pick is simulated, and the defaults are the framework's", "[tune][targets]") {
  auto p = testing::comm_bound_star();
  TuneOptions opt;
  opt.threads = 2;
  const auto s = tune_target(p.trace, p.cluster, p.constraints, "ddp", opt);
  REQUIRE(s.has_defaults);
  CHECK(s.result.evaluated(s.result.best));
  // DDP's defaults: bucket_cap_mb=25, a 1 MiB first bucket, NCCL's own algorithm and channels.
  CHECK(s.defaults.knobs.bucket_cap_bytes == 25 * kMiB);
  CHECK(s.defaults.knobs.first_bucket_cap_bytes == 1 * kMiB);
  CHECK_FALSE(s.defaults.knobs.algorithm.has_value());
  CHECK(s.defaults.knobs.channels == 0);
  // The pick is never slower than the defaults, and kept defaults mean the best gains under 1%.
  CHECK(s.pick_s() <= s.defaults_s);
  if (s.keep_defaults) CHECK(s.defaults_s <= s.best_s * 1.01);
  else CHECK(s.best_s < s.defaults_s / 1.01);
  // The file says so.
  const auto files = emit_target_snippets({s}, p.trace, p.cluster, p.constraints.microbatches);
  REQUIRE(files.size() == 2);  // pytorch_ddp.py, README.txt
  CHECK(files[0].file == "pytorch_ddp.py");
  CHECK(files[0].contents.find(s.keep_defaults ? "# redsim tune --target ddp: keep the defaults"
                                               : "# redsim tune --target ddp: predicted") != std::string::npos);
}

TEST_CASE("targets and strategies are checked", "[tune][targets]") {
  CHECK(parse_targets("all") == target_names());
  CHECK(parse_targets("fsdp") == std::vector<std::string>{"fsdp"});
  CHECK_THROWS_AS(parse_targets("Megatron"), InputError);
  TuneConstraints c;
  c.strategies = {"zero"};
  CHECK_THROWS_AS(target_constraints("horovod", c), InputError);  // Horovod has no ZeRO
  c.strategies = {"bogus"};
  CHECK_THROWS_AS(check_strategies(c), InputError);
}

TEST_CASE("the report of several targets holds every target's settings once, ranked together", "[tune][targets]") {
  auto p = testing::comm_bound_star();
  TuneOptions opt;
  opt.threads = 2;
  opt.cache = std::make_shared<SimCache>();
  const auto ddp = tune_target(p.trace, p.cluster, p.constraints, "ddp", opt);
  const auto horovod = tune_target(p.trace, p.cluster, p.constraints, "horovod", opt);
  const auto ds = tune_target(p.trace, p.cluster, p.constraints, "deepspeed", opt);
  const TuneResult all = merged_result({&ddp.result, &horovod.result, &ds.result});
  // Every family of each search is there; a setting two searches share (DDP's and Horovod's
  // buckets) appears once.
  std::set<std::string> want;
  for (const auto* r : {&ddp.result, &horovod.result, &ds.result})
    for (const auto& c : r->grid.points) want.insert(c.family + "|" + describe_knobs(c));
  std::set<std::string> got;
  for (const auto& c : all.grid.points) CHECK(got.insert(c.family + "|" + describe_knobs(c)).second);
  CHECK(got == want);
  // Each point keeps its own simulation; the ranking is over every simulated point that fits,
  // best first, and its head is the best of the three searches.
  std::size_t simulated = 0;
  for (std::size_t q = 0; q < all.points.size(); ++q) simulated += all.points[q].fits && all.evaluated(q) ? 1 : 0;
  CHECK(all.ranking.size() == simulated);
  for (std::size_t i = 1; i < all.ranking.size(); ++i) CHECK_FALSE(better(all, all.ranking[i], all.ranking[i - 1]));
  const double best = std::min({ddp.result.eval(ddp.result.best).objective_s, horovod.result.eval(horovod.result.best).objective_s,
                                ds.result.eval(ds.result.best).objective_s});
  CHECK(all.eval(all.best).objective_s == best);
  CHECK(all.simulations == ddp.result.simulations + horovod.result.simulations + ds.result.simulations);
  // Lines stay lines: each point is on the line that holds it.
  for (std::size_t l = 0; l < all.grid.lines.size(); ++l)
    for (auto q : all.grid.lines[l]) CHECK(all.grid.line_of[q] == l);
}
