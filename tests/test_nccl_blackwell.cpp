// Blackwell (compute capability 10.0 and newer) in NCCL's model, against hand computations from
// NVIDIA/nccl's tags: the SM100 search speeds (v2.29.7-1 src/graph/search.cc), NVLS channels
// (src/transport/nvls.cc), the fourth row of tuning.cc's tables (from v2.25.1-1) and which
// compute capabilities run LL128 by default.
#include <catch2/catch.hpp>

#include "collectives/nccl_topology.h"
#include "collectives/nccl_tuning.h"
#include "tests/test_support.h"

using namespace redsim;

namespace {

constexpr int v2_23_4 = 22304, v2_25_1 = 22501, v2_26_2 = 22602, v2_27_3 = 22703, v2_28_3 = 22803, v2_28_9 = 22809,
              v2_29_2 = 22902, v2_29_7 = 22907;

// One node of 8 B200s: NVLS on a switch port of 18 x 40.1 GB/s (topo.h SM100_NVLINK_BW).
ClusterSpec b200_node(int version) {
  auto c = testing::nccl_node(10.0, 18 * 40.1, true);
  c.nccl_version = version;
  return c;
}

// `nodes` of them, one 50 GB/s NIC a GPU, PCIe Gen5 at NCCL's 48 GB/s.
ClusterSpec b200_nodes(int nodes, int version) {
  auto c = testing::ideal_multi_node(nodes, 8, 18 * 40.1e9, 0.5e-6, 50e9, 1e-6);
  c.library = CollectiveLibrary::nccl;
  c.device.compute_capability = 10.0;
  c.device.pcie_GBps = 48;
  c.intra.nvls = true;
  c.nccl_version = version;
  return c;
}

nccl::Entry entry(const ClusterSpec& c, Algorithm a, Protocol p) {
  return nccl::Tuning(c).entry(OpKind::allreduce, a, p);
}

bool runs(const ClusterSpec& c, Protocol p) {
  return nccl::Tuning(c).supported(OpKind::allreduce, Algorithm::ring, p, DType::fp32, ReduceOp::sum);
}

}  // namespace

TEST_CASE("one B200 node's graphs come from the SM100 search speeds", "[collectives][blackwell]") {
  // Rings: 721.8 GB/s a port takes 8 channels of 90 (720); every slower speed down to 45 fills no
  // more, and 90 >= 25 splits them into 16 of 45. Execution channels: twice that.
  const auto t = nccl::topology_of(b200_node(v2_29_7));
  CHECK(t.generation == 3);
  CHECK(t.ring.channels == 16);
  CHECK(t.ring.bw_intra_GBps == Approx(45.0));
  CHECK(t.comm_channels == 32);
  // NVLS: 8 heads at the fastest speed with (8 + 1) x s <= 721.8, 80; pass 2 raises the speed
  // across to the next one up, 90.
  CHECK(t.nvls_graph.channels == 8);
  CHECK(t.nvls_graph.bw_intra_GBps == Approx(80.0));
  CHECK(t.nvls_graph.bw_inter_GBps == Approx(90.0));
}

TEST_CASE("Blackwell runs NVLS on 24 channels within a node from 2.27, 32 before and across nodes", "[collectives][blackwell]") {
  CHECK(nccl::topology_of(b200_node(v2_29_7)).nvls_channels == 24);
  CHECK(nccl::topology_of(b200_node(v2_26_2)).nvls_channels == 32);
  CHECK(nccl::topology_of(b200_nodes(2, v2_29_7)).nvls_channels == 32);
  CHECK(nccl::topology_of(testing::nccl_node(9.0, 360, true)).nvls_channels == 16);  // Hopper
}

TEST_CASE("a Blackwell GPU reads Blackwell's rows from 2.25, Hopper's before", "[collectives][blackwell]") {
  // Ring LL128 on one node: min(16 x 45 x 0.92 = 662.4, 16 x the per-channel cap): Hopper's 36.7
  // (587.2) under 2.23.4, 2 x 36.7 under 2.25.1 (no cap), 34.5 under 2.29.2 (552), 40 under 2.29.7
  // (640). Algorithm bandwidth x 8 / 14.
  const double to_alg = 8.0 / 14;
  CHECK(entry(b200_node(v2_23_4), Algorithm::ring, Protocol::ll128).bw_GBps == Approx(16 * 36.7 * to_alg));
  CHECK(entry(b200_node(v2_25_1), Algorithm::ring, Protocol::ll128).bw_GBps == Approx(662.4 * to_alg));
  CHECK(entry(b200_node(v2_29_2), Algorithm::ring, Protocol::ll128).bw_GBps == Approx(16 * 34.5 * to_alg));
  CHECK(entry(b200_node(v2_29_7), Algorithm::ring, Protocol::ll128).bw_GBps == Approx(16 * 40.0 * to_alg));
  // Ring LL: half the graph's 720 under the one-node cap, Hopper's 141 before 2.25, 2 x 141 after.
  CHECK(entry(b200_node(v2_23_4), Algorithm::ring, Protocol::ll).bw_GBps == Approx(141.0 * to_alg));
  CHECK(entry(b200_node(v2_25_1), Algorithm::ring, Protocol::ll).bw_GBps == Approx(282.0 * to_alg));
}

TEST_CASE("NVLS on Blackwell: 2.19's min(inside, across), then 2.28's rule at 0.74 efficiency", "[collectives][blackwell]") {
  // 2.26.2: 8 channels x min(80, 90) = 640 GB/s bus, x 5/6 algorithm.
  CHECK(entry(b200_node(v2_26_2), Algorithm::nvls, Protocol::simple).bw_GBps == Approx(640.0 * 5 / 6));
  // 2.29.7: a channel at min(80 x 0.74 x 7/8 x 2 = 103.6, 90) = 90, 720 bus, x 8 / 14 as a ring.
  CHECK(entry(b200_node(v2_29_7), Algorithm::nvls, Protocol::simple).bw_GBps == Approx(720.0 * 8 / 14));
  // NVLSTree on 4 nodes: across 48 GB/s a channel (the NIC-bound ring speed), under the cap from 4
  // nodes, 43.1 in 2.28.3 and 43.8 from 2.28.9: 8 x cap, x 32 / 62.
  CHECK(entry(b200_nodes(4, v2_28_3), Algorithm::nvls_tree, Protocol::simple).bw_GBps == Approx(8 * 43.1 * 32 / 62));
  CHECK(entry(b200_nodes(4, v2_28_9), Algorithm::nvls_tree, Protocol::simple).bw_GBps == Approx(8 * 43.8 * 32 / 62));
  // On 2 nodes the speed across counts twice (96) and meets the 96 GB/s cap: 768 bus, x 16 / 30.
  CHECK(entry(b200_nodes(2, v2_29_7), Algorithm::nvls_tree, Protocol::simple).bw_GBps == Approx(768.0 * 16 / 30));
}

TEST_CASE("from 2.29.2 Blackwell's NVLSTree allreduce takes the tree's size correction", "[collectives][blackwell]") {
  const auto old_c = b200_nodes(4, v2_28_9), new_c = b200_nodes(4, v2_29_2);
  const double bw = 8 * 43.8 * 32 / 62;  // GB/s, as above
  const double lat = entry(new_c, Algorithm::nvls_tree, Protocol::simple).latency_us;
  const auto t = [](const ClusterSpec& c, std::int64_t bytes) {
    return nccl::Tuning(c).time_us(OpKind::allreduce, Algorithm::nvls_tree, Protocol::simple, bytes);
  };
  // 64 MiB: log2(2^26 / 64) = 20, Simple's factor 0.8; 512 MiB: 23, the longer table's 0.9;
  // 1 GiB: past it, none.
  const std::int64_t mib = 1 << 20;
  CHECK(t(old_c, 64 * mib) == Approx(lat + 64.0 * mib / (1000 * bw)));
  CHECK(t(new_c, 64 * mib) == Approx(lat + 64.0 * mib / (1000 * bw * 0.8)));
  CHECK(t(new_c, 512 * mib) == Approx(lat + 512.0 * mib / (1000 * bw * 0.9)));
  CHECK(t(new_c, 1024 * mib) == Approx(lat + 1024.0 * mib / (1000 * bw)));
}

TEST_CASE("which compute capabilities run LL128: 7.0/8.0/9.0, 10.0 and 12.0 from 2.25, any from 2.27", "[collectives][blackwell]") {
  CHECK_FALSE(runs(b200_node(v2_23_4), Protocol::ll128));
  CHECK(runs(b200_node(v2_25_1), Protocol::ll128));
  auto cc120 = b200_node(v2_25_1);
  cc120.device.compute_capability = 12.0;
  cc120.intra.nvls = false;
  CHECK(runs(cc120, Protocol::ll128));
  // 8.6 with NVLink (an RTX A6000 pair's bridge, say): only from 2.27.
  auto cc86 = testing::nccl_node(8.6, 112, false);
  cc86.nccl_version = v2_25_1;
  CHECK_FALSE(runs(cc86, Protocol::ll128));
  cc86.nccl_version = v2_27_3;
  CHECK(runs(cc86, Protocol::ll128));
  // The refusal names the release and the capability.
  const auto c = b200_node(v2_23_4);
  const auto why = nccl::unsupported_reason(c, nccl::Tuning(c), OpKind::allreduce, Algorithm::ring, Protocol::ll128,
                                            DType::fp32, ReduceOp::sum);
  CHECK(why.find("NCCL 2.23.4") != std::string::npos);
  CHECK(why.find("not 10.0") != std::string::npos);
}

TEST_CASE("Blackwell nodes double their execution channels from 2.25 as Hopper's do", "[collectives][blackwell]") {
  // 2 NICs of 100 GB/s: 2 rings at 96 GB/s (SM100's fastest speed across), split into 4 of 48;
  // 8 execution channels, doubled where the release doubles compute capability 10.0 (from 2.25.1;
  // 2.20-2.24 only 9.0 exactly).
  auto c = b200_nodes(2, v2_23_4);
  c.inter.nics_per_node = 2;
  c.inter.nic_bandwidth_gbps = 800;
  c.device.pcie_GBps = 0;
  const auto old_t = nccl::topology_of(c);
  CHECK(old_t.ring.channels == 4);
  CHECK(old_t.ring.bw_inter_GBps == Approx(48.0));
  CHECK(old_t.comm_channels == 8);
  c.nccl_version = v2_25_1;
  CHECK(nccl::topology_of(c).comm_channels == 16);
}
