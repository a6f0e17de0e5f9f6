// The fold (one period of a symmetric cluster stands for all of it), the routes it maps, the
// sharing arithmetic, and how many flows the scalable fidelity simulates as the world grows.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>

#include "core/cluster_json.h"
#include "core/step_summary.h"
#include "core/trace_json.h"
#include "sim/scalable_model.h"
#include "sim/scalable_topology.h"
#include "sim/sim_engine.h"
#include "strategies/strategy.h"
#include "tests/test_support.h"

using namespace redsim;
using namespace redsim::scalable;

namespace {
ClusterSpec preset(const char* name) { return testing::preset_fabric(name); }
}  // namespace

TEST_CASE("the fold: a node on a star, a leaf on a fat-tree with full leaves, else nothing", "[scalable][fold]") {
  auto star = preset("dgx-h100-x2");
  star.nodes = 64;
  auto f = choose_fold(star);
  CHECK(f.period_nodes == 1);
  CHECK(f.period_ranks == 8);
  CHECK(f.folds());
  CHECK_FALSE(choose_fold(star, false).folds());

  auto ft = preset("dgx-h100-x2048");
  CHECK(choose_fold(ft).period_nodes == 4);
  ft.nodes = 6;  // a partial last leaf breaks the symmetry
  CHECK(choose_fold(ft).period_nodes == 6);
  CHECK_FALSE(choose_fold(ft).folds());
  ft.nodes = 3;  // one leaf: no path crosses the spine, as on a star
  CHECK(choose_fold(ft).period_nodes == 1);

  CHECK_FALSE(choose_fold(preset("dgx-h100")).folds());
}

TEST_CASE("folded routes: an edge leaving the period re-enters it through the same kinds of links",
          "[scalable][fold]") {
  auto ft = preset("dgx-h100-x2048");  // 4 nodes per leaf, 8 NICs per node
  ft.nodes = 16;
  const auto fold = choose_fold(ft);
  // Node 3 (leaf 0) to node 4 (leaf 1): NIC up, leaf 0 up, leaf 1 down, NIC down; folded, the
  // destination is node 0 and the leaf is leaf 0 (its down direction).
  const auto r = route_between(ft, 3 * 8 + 7, 4 * 8 + 0, fold);
  REQUIRE(r.size() == 4);
  CHECK((r[0].kind == LinkKind::nic && r[0].index == 3 * 8 + 7 && r[0].up));
  CHECK((r[1].kind == LinkKind::leaf_uplink && r[1].index == 0 && r[1].up));
  CHECK((r[2].kind == LinkKind::leaf_uplink && r[2].index == 0 && !r[2].up));
  CHECK((r[3].kind == LinkKind::nic && r[3].index == 0 && !r[3].up));
  // Unfolded, the same edge keeps its own links.
  const auto u = route_between(ft, 3 * 8 + 7, 4 * 8 + 0, choose_fold(ft, false));
  CHECK(u[2].index == 1);
  CHECK(u[3].index == 4 * 8);
  CHECK(route_latency_s(ft, r) == Approx((4.0 + 1.0) * 1e-6));
}

TEST_CASE("fair sharing follows SimGrid CM02: shares inversely proportional to route latency", "[scalable][sharing]") {
  // Two flows on one NIC uplink of 50 GB/s, one crossing the spine (latency 5 us) and one not
  // (4 us): rates in the ratio 5:4 and together the whole link.
  auto ft = preset("dgx-h100-x2048");
  ft.nodes = 8;
  ft.inter.nics_per_node = 1;
  RouteTable routes(ft);
  const auto fold = choose_fold(ft, false);
  const auto near = routes.between(0, 8, fold);  // node 0 -> node 1, same leaf
  const auto far = routes.between(1, 40, fold);  // node 0 -> node 5, other leaf, same NIC
  const auto rates = fair_rates(routes, {near, far});
  CHECK(rates[0] + rates[1] == Approx(50e9));
  CHECK(rates[0] / rates[1] == Approx(5.0 / 4.0));
  // One round of 1 MB each: the link is busy for 2 MB / 50 GB/s once both have started.
  CHECK(fluid_round_s(routes, {near, far}, 1e6) == Approx(4e-6 + 2e6 / 50e9).epsilon(0.02));
}

TEST_CASE("folding does not change what the scalable fidelity predicts", "[scalable][fold]") {
  const auto trace = load_trace(REDSIM_SOURCE_DIR "/traces/resnet50.json");
  auto star = preset("dgx-h100-x2");
  star.nodes = 8;
  auto ft = preset("dgx-h100-x16");
  ft.nodes = 8;
  ft.inter.nodes_per_leaf = 2;
  ft.inter.nics_per_node = 2;
  ft.inter.oversubscription = 8;
  for (const auto* cluster : {&star, &ft}) {
    for (const char* strategy : {"bucketed", "zero"}) {
      for (auto algorithm : {Algorithm::ring, Algorithm::hierarchical}) {
        CAPTURE(cluster->inter.topology == InterTopology::star, strategy, algorithm_name(algorithm));
        Knobs knobs;
        knobs.strategy = strategy;
        knobs.algorithm = algorithm;
        knobs.channels = 2;
        auto plan = make_strategy(strategy)->plan(trace, *cluster, knobs);
        auto folded = summarize(plan, simulate(plan, *cluster, SimOptions{false, Fidelity::scalable, true}));
        auto whole = summarize(plan, simulate(plan, *cluster, SimOptions{false, Fidelity::scalable, false}));
        // Rings are periodic and fold exactly. Chains (the buffer broadcast before forward,
        // ZeRO's reduces) have a head and a tail that break the symmetry: the fold extrapolates
        // one lap of the period's edges over the whole chain.
        CHECK(folded.step_time_s == Approx(whole.step_time_s).epsilon(std::string(strategy) == "zero" ? 0.005 : 0.001));
        CHECK(folded.bytes_sent_per_rank == whole.bytes_sent_per_rank);
      }
    }
  }
}

TEST_CASE("the flows simulated for a ring plan do not grow with the world", "[scalable][scale]") {
  // Bucketed GPT-2 XL on the 2,048-node preset and smaller copies: the fold keeps the flows per
  // bucket at one leaf's ring edges, whatever the number of leaves.
  const auto trace = load_trace(REDSIM_SOURCE_DIR "/traces/gpt2-xl.json");
  auto cluster = preset("dgx-h100-x2048");
  std::int64_t flows_at_64 = 0;
  for (int nodes : {8, 128, 2048}) {
    CAPTURE(nodes);
    cluster.nodes = nodes;
    auto plan = make_strategy("bucketed")->plan(trace, cluster, Knobs{});
    const auto stats = count_scalable_activities(plan, cluster);
    int buckets = 0;
    for (const auto& op : plan.ops) buckets += op.kind == OpKind::allreduce ? 1 : 0;
    // One stage of 32 flows (4 nodes x 8 ring edges) per bucket.
    CHECK(stats.flows == 32LL * buckets);
    if (nodes == 8) flows_at_64 = stats.flows;
    CHECK(stats.flows == flows_at_64);
  }
}

TEST_CASE("the scalable fidelity is deterministic", "[scalable]") {
  const auto trace = load_trace(REDSIM_SOURCE_DIR "/traces/resnet50.json");
  auto cluster = preset("dgx-h100-x16");
  Knobs knobs;
  knobs.channels = 2;
  knobs.algorithm = Algorithm::tree;
  auto plan = make_strategy("bucketed")->plan(trace, cluster, knobs);
  auto a = simulate(plan, cluster, SimOptions{false, Fidelity::scalable});
  auto b = simulate(plan, cluster, SimOptions{false, Fidelity::scalable});
  CHECK(a.serialize() == b.serialize());
}
