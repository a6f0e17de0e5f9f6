// Which link classes carry a rank's sends (collectives/send_classes.h), against the shapes worked
// out by hand: a ring leaves each node once per channel, a tree sends up and down its edges,
// hierarchical splits 2(d-1)/d of the buffer in the node against 2(m-1)/(m d) across nodes.
#include <catch2/catch.hpp>

#include "collectives/nccl_constants.h"
#include "collectives/send_classes.h"
#include "tests/test_support.h"

using namespace redsim;

namespace {

constexpr auto kNvlink = static_cast<std::size_t>(nccl::Hw::nvlink);
constexpr auto kPci = static_cast<std::size_t>(nccl::Hw::pci);
constexpr auto kNet = static_cast<std::size_t>(nccl::Hw::net);

PlanOp collective(Algorithm a, int channels) {
  PlanOp op;
  op.kind = OpKind::allreduce;
  op.algorithm = a;
  op.channels = channels;
  op.bytes = 1 << 20;
  return op;
}

}  // namespace

TEST_CASE("a ring's sends leave the node once per node and channel", "[collectives][send_classes]") {
  const auto cluster = testing::ideal_multi_node(2, 4, 1e11, 1e-6, 1e10, 5e-6);
  SendClasses sc(cluster);
  // One channel: ring 0 1 2 3 | 4 5 6 7; the node's last device sends across, the others in it.
  double net = 0;
  for (int r = 0; r < 8; ++r) {
    const auto s = sc.shares(collective(Algorithm::ring, 1), r);
    CHECK(s[kNvlink] + s[kPci] + s[kNet] == Approx(1.0));
    CHECK(s[kNet] == ((r == 3 || r == 7) ? 1.0 : 0.0));
    net += s[kNet];
  }
  CHECK(net == Approx(2.0));  // one exit per node
  // Four channels rotate the node's order by one each: every device leaves the node in exactly
  // one of them, a quarter of its bytes.
  for (int r = 0; r < 8; ++r) CHECK(sc.shares(collective(Algorithm::ring, 4), r)[kNet] == Approx(0.25));
  // A chain (reduce) takes the same ring.
  auto reduce = collective(Algorithm::ring, 1);
  reduce.kind = OpKind::reduce;
  reduce.root = 0;
  CHECK(sc.shares(reduce, 3)[kNet] == 1.0);
}

TEST_CASE("trees, NVLS, hierarchical, groups and PCIe boxes send where their shapes say", "[collectives][send_classes]") {
  const auto two = testing::ideal_multi_node(2, 4, 1e11, 1e-6, 1e10, 5e-6);
  SendClasses sc(two);
  // Hierarchical: 2(4-1)/4 = 1.5 in the node, 2(2-1)/2/4 = 0.25 across: net 0.25 / 1.75.
  for (int r = 0; r < 8; ++r) CHECK(sc.shares(collective(Algorithm::hierarchical, 1), r)[kNet] == Approx(1.0 / 7));
  CHECK(sc.shares(collective(Algorithm::nvls, 2), 5)[kNvlink] == 1.0);
  // A group of the 4 devices of a node (hsdp's shard group) stays on NVLink.
  auto grouped = collective(Algorithm::ring, 1);
  grouped.group_size = 4;
  for (int r = 0; r < 8; ++r) CHECK(sc.shares(grouped, r)[kNvlink] == 1.0);

  // One device per node: every tree edge crosses the network; the tree's sends add up to its
  // 2 (N - 1) edge directions.
  const auto star = testing::ideal_star(4, 1e10, 5e-6);
  SendClasses st(star);
  for (int r = 0; r < 4; ++r) CHECK(st.shares(collective(Algorithm::tree, 1), r)[kNet] == 1.0);

  // A PCIe box has no NVLink: its ring's hops are PCI.
  auto pcie = testing::ideal_nvswitch(4, 1e10, 1e-6);
  pcie.intra.fabric = IntraFabric::pcie;
  SendClasses pc(pcie);
  CHECK(pc.shares(collective(Algorithm::ring, 1), 2)[kPci] == 1.0);
  // One rank sends nothing.
  SendClasses one(testing::ideal_nvswitch(1, 1e10, 1e-6));
  const auto none = one.shares(collective(Algorithm::ring, 1), 0);
  CHECK(none[kNvlink] + none[kPci] + none[kNet] == 0.0);
}
