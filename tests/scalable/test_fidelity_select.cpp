// Choosing the fidelity: names, the estimate of the exact fidelity's transfers, and auto's rule.
#include <catch2/catch.hpp>

#include "core/cluster_json.h"
#include "core/error.h"
#include "core/trace_json.h"
#include "core/pipeline.h"
#include "sim/sim_engine.h"
#include "strategies/strategy.h"
#include "tests/test_support.h"

using namespace redsim;

TEST_CASE("fidelity names round-trip and bad names are input errors", "[scalable][fidelity]") {
  for (auto f : {Fidelity::exact, Fidelity::scalable, Fidelity::auto_select}) CHECK(parse_fidelity(fidelity_name(f)) == f);
  CHECK_THROWS_AS(parse_fidelity("fast"), InputError);
  // The library default stays exact: existing callers see no change.
  CHECK(SimOptions{}.fidelity == Fidelity::exact);
}

TEST_CASE("estimated exact transfers follow each algorithm's step count", "[scalable][fidelity]") {
  auto cluster = testing::ideal_multi_node(4, 8, 4e10, 2e-6, 5e9, 6e-6);
  const int n = 32;
  const std::int64_t S = 8 * kPipelineChunkBytes;  // 8 chunks in one channel
  auto one = [&](OpKind kind, Algorithm algorithm, int channels) {
    return estimated_exact_transfers(testing::single_collective_plan(n, kind, algorithm, S, channels, 0), cluster);
  };
  CHECK(one(OpKind::allreduce, Algorithm::ring, 1) == 2LL * (n - 1) * n);
  CHECK(one(OpKind::allreduce, Algorithm::ring, 2) == 2 * 2LL * (n - 1) * n);
  CHECK(one(OpKind::reduce_scatter, Algorithm::ring, 1) == (n - 1) * n);
  CHECK(one(OpKind::broadcast, Algorithm::ring, 1) == (n - 1) * 8);
  CHECK(one(OpKind::allreduce, Algorithm::tree, 1) == 2 * (n - 1) * 8);
  // Hierarchical: 2(d-1) intra steps of d transfers per node, 2(m-1) inter steps of m per local device.
  CHECK(one(OpKind::allreduce, Algorithm::hierarchical, 1) == 2LL * 7 * 8 * 4 + 2LL * 3 * 4 * 8);
}

TEST_CASE("auto picks exact for small worlds and scalable beyond", "[scalable][fidelity]") {
  const auto trace = load_trace(REDSIM_SOURCE_DIR "/traces/resnet50.json");
  auto cluster = load_cluster(REDSIM_SOURCE_DIR "/configs/dgx-h100-x2.json");
  auto plan = make_strategy("bucketed")->plan(trace, cluster, Knobs{});
  REQUIRE(estimated_exact_transfers(plan, cluster) <= kAutoExactMaxTransfers);
  CHECK(resolve_fidelity(plan, cluster, Fidelity::auto_select) == Fidelity::exact);
  CHECK(resolve_fidelity(plan, cluster, Fidelity::scalable) == Fidelity::scalable);

  cluster.nodes = 128;  // 1,024 ranks: over the rank limit
  plan = make_strategy("bucketed")->plan(trace, cluster, Knobs{});
  CHECK(resolve_fidelity(plan, cluster, Fidelity::auto_select) == Fidelity::scalable);
  CHECK(resolve_fidelity(plan, cluster, Fidelity::exact) == Fidelity::exact);

  // 256 ranks of GPT-2 XL: few enough ranks, but millions of transfers.
  const auto gpt = load_trace(REDSIM_SOURCE_DIR "/traces/gpt2-xl.json");
  cluster.nodes = 32;
  plan = make_strategy("bucketed")->plan(gpt, cluster, Knobs{});
  CHECK(estimated_exact_transfers(plan, cluster) > kAutoExactMaxTransfers);
  CHECK(resolve_fidelity(plan, cluster, Fidelity::auto_select) == Fidelity::scalable);
}

TEST_CASE("simulate with auto gives the same Timeline as the fidelity it resolves to", "[scalable][fidelity]") {
  auto cluster = testing::ideal_star(8, 1e10, 4e-6);
  auto plan = testing::single_allreduce_plan(8, 8'000'000, 1);
  auto a = simulate(plan, cluster, SimOptions{false, Fidelity::auto_select});
  auto e = simulate(plan, cluster, SimOptions{false, Fidelity::exact});
  CHECK(a.at(3, 0).end_s == e.at(3, 0).end_s);
}
