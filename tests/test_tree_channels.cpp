// A tree's per-channel cap on 2 nodes against a hand computation from NCCL's published
// constants (NVIDIA/nccl v2.18.5 src/graph/tuning.cc; collectives/nccl_constants.h).
#include <catch2/catch.hpp>

#include <algorithm>

#include "collectives/collective_model.h"
#include "collectives/nccl_constants.h"
#include "collectives/nccl_tuning.h"
#include "tests/test_support.h"

using namespace redsim;

using testing::nccl_nodes;

TEST_CASE("A tree across 2 nodes moves what the search gave its channels across nodes, as on 3 or more", "[collectives][protocol][tree]") {
  // NCCL's model reads a graph's bandwidth inside the node on up to 2 nodes (tuning.cc), so the
  // tree, whose search raises its speed inside the node, is chosen as if the NICs carried that.
  // The choice keeps the quirk; a tree channel's traffic crosses a NIC, so its cap is its share of
  // the model's tree bandwidth at the speed across nodes, as on 3 or more nodes: each way 1/2 x
  // 0.92 x channels x speed, under the per-channel tree cap (AWS p4d x2, NCCL 2.9.9 at 4 GiB:
  // 43.7 GB/s busbw measured, 68.9 predicted with the speed inside, 41.4 with this).
  const auto c = nccl_nodes(2);
  const nccl::Tuning t(c);
  const auto& topo = t.topology();
  REQUIRE(topo.tree.channels > 0);
  REQUIRE(topo.tree.bw_intra_GBps > topo.tree.bw_inter_GBps);  // the case where the two differ
  const std::int64_t bytes = std::int64_t{1} << 30;
  auto plan = testing::single_allreduce_plan(16, bytes, 1);
  plan.ops[0].request = {Algorithm::tree, Protocol::simple, 0};
  choose_collectives(plan, c);
  const auto m = mechanics_of(plan.ops[0], c, 16);
  const double bus_GBps = std::min(0.92 * topo.tree.channels * topo.tree.bw_inter_GBps,
                                   topo.tree.channels * nccl::kPerChMaxTreeGBps[1][1]);
  const double expected_Bps = bus_GBps / topo.comm_channels * 0.5 * nccl::tree_correction(Protocol::simple, bytes) * 1e9;
  CHECK(m.channel_cap_Bps == Approx(expected_Bps).epsilon(1e-9));
  // The choice still ranks the tree with the speed inside the node.
  CHECK(t.entry(OpKind::allreduce, Algorithm::tree, Protocol::simple).bus_bw_GBps >
        t.entry(OpKind::allreduce, Algorithm::tree, Protocol::simple, true).bus_bw_GBps);
}
