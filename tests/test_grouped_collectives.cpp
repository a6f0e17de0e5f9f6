// Grouped collectives (hsdp): a reduce-scatter inside each node's group and an allreduce of the
// shard across the nodes, against the ring closed forms on an ideal cluster, in both fidelities.
#include <catch2/catch.hpp>

#include "collectives/cluster_subset.h"
#include "sim/grouped_collectives.h"
#include "sim/sim_engine.h"
#include "tests/test_support.h"

using namespace redsim;

namespace {

// A ring over n ranks: `steps` steps, each one latency plus S/n bytes at bandwidth B.
double ring_s(int n, int steps, double bytes, double bandwidth_Bps, double latency_s) {
  return steps * (latency_s + bytes / n / bandwidth_Bps);
}

}  // namespace

TEST_CASE("grouped collectives run per group at the ring closed form, every group at once", "[sim][grouped]") {
  const int nodes = 4, devices = 4;
  const double intra_Bps = 100e9, intra_a = 2e-6, inter_Bps = 12.5e9, inter_a = 10e-6;
  const std::int64_t S = 64LL * 1024 * 1024;
  auto cluster = testing::ideal_multi_node(nodes, devices, intra_Bps, intra_a, inter_Bps, inter_a);
  Plan plan = testing::single_collective_plan(nodes * devices, OpKind::reduce_scatter, Algorithm::ring, S, 1, 0);
  plan.ops[0].group_size = devices;  // one node's devices
  PlanOp ar = plan.ops[0];
  ar.name = "allreduce across groups";
  ar.kind = OpKind::allreduce;
  ar.bytes = S / devices;  // the shard each rank holds
  ar.group_size = nodes;   // the same local device of every node
  ar.group_stride = devices;
  ar.deps = {0};
  plan.add(ar);

  const double rs_s = ring_s(devices, devices - 1, static_cast<double>(S), intra_Bps, intra_a);
  const double ar_s = ring_s(nodes, 2 * (nodes - 1), static_cast<double>(S / devices), inter_Bps, inter_a);
  for (auto fidelity : {Fidelity::exact, Fidelity::scalable}) {
    CAPTURE(fidelity_name(fidelity));
    auto tl = simulate(plan, cluster, SimOptions{false, fidelity});
    for (int r = 0; r < nodes * devices; ++r) {
      CAPTURE(r);
      CHECK(tl.at(r, 0).end_s == Approx(rs_s).epsilon(0.01));
      CHECK(tl.at(r, 1).end_s - tl.at(r, 1).start_s == Approx(ar_s).epsilon(0.01));
      CHECK(tl.at(r, 1).end_s == Approx(rs_s + ar_s).epsilon(0.01));
      // A ring of n sends (n-1)/n of the buffer per pass: one pass, then two.
      CHECK(tl.at(r, 0).bytes_sent == (devices - 1) * S / devices);
      CHECK(tl.at(r, 1).bytes_sent == 2 * (nodes - 1) * (S / devices) / nodes);
    }
  }
}

TEST_CASE("a group's members and its place on the cluster", "[sim][grouped]") {
  PlanOp op;
  op.group_size = 4;
  op.group_stride = 8;  // rank r's group: r mod 8, r mod 8 + 8, ... in a world of 32
  CHECK(group_index(op, 13) == 5);
  CHECK(group_member_index(op, 13) == 1);
  CHECK(group_members(op, 32, 13) == std::vector<int>{5, 13, 21, 29});
  auto cluster = testing::ideal_multi_node(4, 8, 100e9, 2e-6, 12.5e9, 10e-6);
  const auto across = group_cluster(cluster, 4, 8);
  CHECK(across.nodes == 4);
  CHECK(across.devices_per_node == 1);
  const auto inside = group_cluster(cluster, 8, 1);
  CHECK(inside.nodes == 1);
  CHECK(inside.devices_per_node == 8);
  const auto halves = group_cluster(cluster, 16, 2);  // every other device of every node
  CHECK(halves.nodes == 4);
  CHECK(halves.devices_per_node == 4);
  CHECK_THROWS(group_cluster(cluster, 8, 3));  // 3 does not divide a node's 8 devices
}
