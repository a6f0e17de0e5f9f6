// NCCL's model by release: the constants and rules a cluster's nccl_version selects, against hand
// computations from each tag's src/graph/tuning.cc (NVIDIA/nccl v2.18.5-1, v2.19.3-1, v2.21.5-1,
// v2.23.4-1; collectives/nccl_releases.h).
#include <catch2/catch.hpp>

#include "collectives/collective_model.h"
#include "collectives/nccl_releases.h"
#include "collectives/nccl_topology.h"
#include "collectives/nccl_tuning.h"
#include "tests/test_support.h"

using namespace redsim;

namespace {

constexpr int v2_18_5 = 21805, v2_20_5 = 22005, v2_21_5 = 22105, v2_26_2 = 22602;

ClusterSpec at(ClusterSpec c, int version) {
  c.nccl_version = version;
  return c;
}

// Nodes (2 unless given) of 8 H100s on an NVSwitch with NVLS (18 x 20 GB/s), 50 GB/s NICs.
ClusterSpec h100_nodes(int version, int nodes = 2) {
  auto c = testing::ideal_multi_node(nodes, 8, 360e9, 0.5e-6, 50e9, 1e-6);
  c.library = CollectiveLibrary::nccl;
  c.device.compute_capability = 9.0;
  c.intra.nvls = true;
  return at(c, version);
}

nccl::Choice choose(const ClusterSpec& c, std::int64_t bytes) {
  return nccl::Tuning(c).choose(OpKind::allreduce, bytes, DType::fp32, ReduceOp::sum, {});
}

// An allreduce of `bytes` on 16 channels run as `a` with Simple, its algorithm already chosen.
PlanOp simple_allreduce(Algorithm a, std::int64_t bytes) {
  PlanOp op;
  op.kind = OpKind::allreduce;
  op.bytes = bytes;
  op.algorithm = a;
  op.protocol = Protocol::simple;
  op.channels = 16;
  return op;
}

}  // namespace

TEST_CASE("a cluster's NCCL version selects the newest release model not after it", "[collectives][releases]") {
  CHECK(std::string(nccl::release_of(20909).tag) == "v2.9.9-1");  // older releases: tests/test_nccl_releases_pre218.cpp
  CHECK(std::string(nccl::release_of(v2_18_5).tag) == "v2.18.5-1");
  CHECK(std::string(nccl::release_of(21901).tag) == "v2.19.3-1");
  CHECK(std::string(nccl::release_of(v2_20_5).tag) == "v2.19.3-1");
  CHECK(std::string(nccl::release_of(22203).tag) == "v2.21.5-1");
  CHECK(std::string(nccl::release_of(22304).tag) == "v2.23.4-1");
  CHECK(std::string(nccl::release_of(22403).tag) == "v2.24.3-1");  // PAT at 0.75 (tests/test_nccl_pat.cpp)
  CHECK(std::string(nccl::release_of(v2_26_2).tag) == "v2.25.1-1");  // Blackwell's rows (tests/test_nccl_blackwell.cpp)
  CHECK(std::string(nccl::release_of(22707).tag) == "v2.27.3-1");
  CHECK(std::string(nccl::release_of(22800).tag) == "v2.28.3-1");
  CHECK(std::string(nccl::release_of(22807).tag) == "v2.28.7-1");
  CHECK(std::string(nccl::release_of(22809).tag) == "v2.28.9-1");
  CHECK(std::string(nccl::release_of(22903).tag) == "v2.29.2-1");
  CHECK(std::string(nccl::release_of(22907).tag) == "v2.29.7-1");
}

TEST_CASE("from 2.21 a ring's LL bus bandwidth is half the graph's, under 141 GB/s on one Hopper node", "[collectives][releases]") {
  // 8 H100s: 12 rings x 30 GB/s = 360. 2.18.5: min(87.7, 360/4) = 87.7; 2.21.5: min(141, 360/2).
  // Algorithm bandwidth: x 8 ranks / 14 steps.
  const auto h100 = testing::nccl_node(9.0, 360, true);
  CHECK(nccl::Tuning(at(h100, v2_18_5)).entry(OpKind::allreduce, Algorithm::ring, Protocol::ll).bw_GBps ==
        Approx(87.7 * 8 / 14));
  CHECK(nccl::Tuning(at(h100, v2_21_5)).entry(OpKind::allreduce, Algorithm::ring, Protocol::ll).bw_GBps ==
        Approx(141.0 * 8 / 14));
  // 8 A100s (12 x 20 = 240): an allgather took a third before 2.21 (80 GB/s), then half under
  // the Ampere cap of 87.7; x 8 / 7.
  const auto a100 = testing::nccl_node(8.0, 240, false);
  CHECK(nccl::Tuning(at(a100, v2_18_5)).entry(OpKind::allgather, Algorithm::ring, Protocol::ll).bw_GBps == Approx(80.0 * 8 / 7));
  CHECK(nccl::Tuning(at(a100, v2_21_5)).entry(OpKind::allgather, Algorithm::ring, Protocol::ll).bw_GBps == Approx(87.7 * 8 / 7));
}

TEST_CASE("on 8 H100s under 2.21 the model moves from ring LL to NVLS near 1.16 MB, not 494 KB", "[collectives][releases]") {
  // Ring LL: 6.6 + 14 x 0.6 = 15.0 us + S / (141 x 8/14 = 80.57 GB/s). NVLS: the NVLink hop's
  // 25 us + S / (8 x 40 x 5/6 = 266.7 GB/s): equal at S = 10 / (1/80.57e3 - 1/266.7e3) = 1.155e6 B.
  // LL128 (40.6 us + S / 189.3 GB/s) is slower than NVLS at every size.
  const auto c = at(testing::nccl_node(9.0, 360, true), v2_21_5);
  CHECK(nccl::Tuning(c).entry(OpKind::allreduce, Algorithm::nvls, Protocol::simple).latency_us == Approx(25.0));
  CHECK(choose(c, 768 << 10).algorithm == Algorithm::ring);
  CHECK(choose(c, 1 << 20).algorithm == Algorithm::ring);
  CHECK(choose(c, 1 << 20).protocol == Protocol::ll);
  CHECK(choose(c, 2 << 20).algorithm == Algorithm::nvls);
  CHECK(choose(at(c, v2_18_5), 768 << 10).algorithm == Algorithm::nvls);  // 2.18.5: past 494 KB
}

TEST_CASE("NVLSTree and ring latencies across 2 nodes follow each release's rules", "[collectives][releases]") {
  // NVLSTree: 2.18.5 base 23 + 2 (nodes - 1) x 19 (network) = 61 us; 2.19.3 the NVLink hop 23 +
  // 2 log2(nodes) x 14 = 51; 2.21.5 25 + 28 = 53.
  auto nvls_tree_us = [](int v) {
    return nccl::Tuning(h100_nodes(v)).entry(OpKind::allreduce, Algorithm::nvls_tree, Protocol::simple).latency_us;
  };
  CHECK(nvls_tree_us(v2_18_5) == Approx(61.0));
  CHECK(nvls_tree_us(v2_20_5) == Approx(51.0));
  CHECK(nvls_tree_us(v2_21_5) == Approx(53.0));
  // Ring LL allreduce over 16 ranks, 30 steps: 2.18.5 counts 2 x nodes = 4 network steps at 2.7 us,
  // 2.23.4 2 x (nodes - 1) = 2; the others pay max(0.6, the 1 us network post overhead).
  auto ring_ll_us = [](int v) {
    return nccl::Tuning(h100_nodes(v)).entry(OpKind::allreduce, Algorithm::ring, Protocol::ll).latency_us;
  };
  CHECK(ring_ll_us(v2_18_5) == Approx(6.6 + 26 * 1.0 + 4 * 2.7));
  CHECK(ring_ll_us(v2_26_2) == Approx(6.6 + 28 * 1.0 + 2 * 2.7));
}

TEST_CASE("from 2.19 NVLSTree converts bus to algorithm bandwidth at 5/6", "[collectives][releases]") {
  // Two nodes: 2.18.5 reads the speed inside and takes 0.7 x 2 / (2 x 1) = 0.7; 2.19.3 the lesser
  // of inside and across, x 5/6.
  const auto old_c = h100_nodes(v2_18_5), new_c = h100_nodes(v2_20_5);
  const nccl::Tuning t_old(old_c), t_new(new_c);
  const auto& g = t_new.topology().nvls_graph;
  REQUIRE(g.channels > 0);
  CHECK(t_old.entry(OpKind::allreduce, Algorithm::nvls_tree, Protocol::simple).bw_GBps ==
        Approx(g.channels * g.bw_intra_GBps * 0.7));
  CHECK(t_new.entry(OpKind::allreduce, Algorithm::nvls_tree, Protocol::simple).bw_GBps ==
        Approx(g.channels * std::min(g.bw_intra_GBps, g.bw_inter_GBps) * 5.0 / 6.0));
}

TEST_CASE("the engines pay NVLS the latency of the cluster's release", "[collectives][releases]") {
  // 2.18.5 and 2.20: 23 us (baseLat, then the NVLink hop); from 2.21 25 us.
  auto base_s = [](int v) {
    return mechanics_of(simple_allreduce(Algorithm::nvls, 1 << 20), at(testing::nccl_node(9.0, 360, true), v), 8)
        .base_latency_s;
  };
  CHECK(base_s(v2_18_5) == Approx(23e-6));
  CHECK(base_s(v2_20_5) == Approx(23e-6));
  CHECK(base_s(v2_26_2) == Approx(25e-6));
}

TEST_CASE("the engines pay NVLSTree's network hop the latency of the cluster's release", "[collectives][releases]") {
  // hwLat[NET][NVLS_TREE][SIMPLE]: 19 us in v2.18.5-1 src/graph/tuning.cc, 14 us from v2.19.3-1
  // (to v2.28.7-1), where the model's NVLSTree latency also became the NVLink hop plus
  // 2 log2(nodes) of these; 20.9 us from v2.28.9-1.
  auto net_hop_s = [](int version) {
    return mechanics_of(simple_allreduce(Algorithm::nvls_tree, 8 << 20), h100_nodes(version, 2), 16)
        .hop_latency(nccl::Hw::net);
  };
  CHECK(net_hop_s(v2_18_5) == Approx(19e-6));
  CHECK(net_hop_s(v2_20_5) == Approx(14e-6));
  CHECK(net_hop_s(v2_26_2) == Approx(14e-6));
  CHECK(net_hop_s(22807) == Approx(14e-6));
  CHECK(net_hop_s(22809) == Approx(20.9e-6));
}

TEST_CASE("from 2.28 NVLS runs at 0.85 of the switch's speed, twice for allreduce, at a ring's ratio", "[collectives][releases]") {
  // One node of 8 H100s on 360 GB/s ports: the NVLS graph has 8 heads at 40 GB/s inside ((8 + 1)
  // x 40 = 360) and 60 across (pass 2 raises it while under 2 x 40). v2.28.3-1 tuning.cc: a
  // channel min(40 x 0.85 x 7/8 x 2 = 59.5, 60), bus 8 x 59.5 = 476, x 8 / 14 = 272 GB/s; 2.23.4:
  // 8 x min(40, 60) x 5/6 = 266.7. Latency unchanged: the NVLink hop's 25 us.
  const auto node = testing::nccl_node(9.0, 360, true);
  const nccl::Tuning t28(at(node, 22803)), t23(at(node, v2_26_2));
  const auto& g = t28.topology().nvls_graph;
  REQUIRE(g.channels == 8);
  REQUIRE(g.bw_intra_GBps == Approx(40.0));
  CHECK(g.bw_inter_GBps == Approx(60.0));
  const auto e28 = t28.entry(OpKind::allreduce, Algorithm::nvls, Protocol::simple);
  CHECK(e28.bus_bw_GBps == Approx(476.0));
  CHECK(e28.bw_GBps == Approx(476.0 * 8 / 14));
  CHECK(e28.latency_us == Approx(25.0));
  CHECK(t23.entry(OpKind::allreduce, Algorithm::nvls, Protocol::simple).bw_GBps == Approx(320.0 * 5 / 6));
  // NVLSTree: the speed across doubled on 2 nodes, then Hopper's per-channel cap (57.7 on 2
  // nodes, 45.5 on 4 or more) binds; bus to algorithm bandwidth as a ring's, 16 / 30 and 32 / 62.
  for (int nodes : {2, 4}) {
    const nccl::Tuning t(h100_nodes(22809, nodes));
    const auto& gn = t.topology().nvls_graph;
    REQUIRE(gn.channels == 8);
    const double across = gn.bw_inter_GBps * (nodes == 2 ? 2 : 1);
    const double channel = std::min({40.0 * 0.85 * 7 / 8 * 2, across, nodes == 2 ? 57.7 : 45.5});
    const int n = 8 * nodes;
    INFO(nodes << " nodes, across " << across);
    CHECK(t.entry(OpKind::allreduce, Algorithm::nvls_tree, Protocol::simple).bw_GBps ==
          Approx(8 * channel * n / (2.0 * (n - 1))));
  }
}

TEST_CASE("NVLSTree's chunk starts at a Simple step before 2.21, at 128 KiB from it, 64 KiB from 4 nodes", "[collectives][releases]") {
  // 16 channels x 8 heads = 128 concurrent chunks. 2.18.5 starts at 512 KiB and cuts to 256 KiB
  // below 32 x 128 x 512 KiB (2 GiB), to 128 KiB below 16 x 128 x 256 KiB (512 MiB), to 64 KiB
  // below 4 x 128 x 128 KiB (64 MiB). 2.21 starts at NCCL_NVLS_CHUNKSIZE (128 KiB), on 4 nodes or
  // more at NCCL_NVLS_TREE_MAXCHUNKSIZE's default of 64 KiB, and cuts by the same rules.
  auto chunk = [](int version, int nodes, std::int64_t bytes) {
    return mechanics_of(simple_allreduce(Algorithm::nvls_tree, bytes), h100_nodes(version, nodes), 8 * nodes).chunk_bytes;
  };
  const std::int64_t MiB = 1 << 20;
  CHECK(chunk(v2_18_5, 2, 1024 * MiB) == 256 * 1024);
  CHECK(chunk(v2_18_5, 2, 64 * MiB) == 128 * 1024);
  CHECK(chunk(v2_20_5, 2, 1024 * MiB) == 256 * 1024);
  CHECK(chunk(v2_21_5, 2, 1024 * MiB) == 128 * 1024);
  CHECK(chunk(v2_26_2, 2, 64 * MiB) == 128 * 1024);
  CHECK(chunk(v2_26_2, 4, 64 * MiB) == 64 * 1024);
  CHECK(chunk(v2_18_5, 4, 64 * MiB) == 128 * 1024);
  // Small buffers are cut alike: below 128 x 64 KiB (8 MiB) to 32 KiB.
  CHECK(chunk(v2_18_5, 2, 4 * MiB) == 32 * 1024);
  CHECK(chunk(v2_26_2, 4, 4 * MiB) == 32 * 1024);
}

TEST_CASE("several Hopper nodes double their execution channels as each release's connect.cc says", "[collectives][releases]") {
  // 8 NICs of 50 GB/s: rings of 8 channels at 48 GB/s (one a NIC, not split: 48 < 50 with more
  // than 4 channels), 16 execution channels. 2.18.1-2.19 double them while 2 x 16 <= MAXCHANNELS
  // (32); from 2.20.3 only under 16; 2.17 never.
  CHECK(nccl::topology_of(h100_nodes(21701)).comm_channels == 16);
  CHECK(nccl::topology_of(h100_nodes(v2_18_5)).comm_channels == 32);
  CHECK(nccl::topology_of(h100_nodes(v2_20_5)).comm_channels == 16);
  CHECK(nccl::topology_of(h100_nodes(v2_26_2)).comm_channels == 16);
  // 4 NICs: 4 rings at 48 GB/s are split (no more than 4) into 8 of 24, 16 execution channels,
  // too slow (not above 45) for any release to double.
  auto four = h100_nodes(v2_18_5);
  four.inter.nics_per_node = 4;
  CHECK(nccl::topology_of(four).ring.bw_intra_GBps == Approx(24.0));
  CHECK(nccl::topology_of(four).comm_channels == 16);
}

TEST_CASE("with several nodes the LL cap and the network post overhead are the host CPU's", "[collectives][releases]") {
  // 2 x 8 A100s, one 25 GB/s NIC a GPU: 8 rings at 24 GB/s, 192 GB/s; 2.18.5's LL takes a quarter
  // (48) under the cap of the host's row for 2 nodes: Intel 39, AMD 22.5 (tuning.cc llMaxBws);
  // algorithm bandwidth x 16 / 30.
  auto c = testing::nccl_nodes(2);
  const auto ll = [](const ClusterSpec& x) { return nccl::Tuning(x).entry(OpKind::allreduce, Algorithm::ring, Protocol::ll); };
  CHECK(ll(c).bw_GBps == Approx(39.0 * 16 / 30));
  const double intel_lat = ll(c).latency_us;
  c.host_cpu_vendor = CpuVendor::amd;
  CHECK(ll(c).bw_GBps == Approx(22.5 * 16 / 30));
  // Of a ring's 2 x 15 = 30 steps, 2.18.5 counts 2 x 2 nodes across; the other 26 cost at least
  // the network post overhead: 1 us on Intel, 2 on AMD (above LL's 0.6 us NVLink hop).
  CHECK(ll(c).latency_us - intel_lat == Approx(26 * (2.0 - 1.0)));
}
