// NCCL's model before 2.18 (2.6.4 to 2.18.1): the constants and rules a cluster's nccl_version
// selects, against hand computations from each tag's src/graph/tuning.cc (NVIDIA/nccl v2.6.4-1,
// v2.7.8-1, v2.9.9-1,
// v2.10.3-1, v2.12.7-1, v2.14.3-1, v2.15.1-1, v2.17.1-1, v2.18.1-1; collectives/nccl_releases.h).
#include <catch2/catch.hpp>

#include "collectives/collective_model.h"
#include "collectives/nccl_releases.h"
#include "collectives/nccl_tuning.h"
#include "core/error.h"
#include "tests/test_support.h"

using namespace redsim;

namespace {

constexpr int v2_6_4 = 20604, v2_7_8 = 20708, v2_9_9 = 20909, v2_11_4 = 21104, v2_12_12 = 21212, v2_14_3 = 21403, v2_15_5 = 21505,
              v2_17_1 = 21701, v2_18_1 = 21801, v2_18_5 = 21805;

ClusterSpec at(ClusterSpec c, int version) {
  c.nccl_version = version;
  return c;
}

// One node of 8 A100s: 12 rings of 20 GB/s (240 GB/s of bus).
ClusterSpec a100(int version) { return at(testing::nccl_node(8.0, 240, false), version); }

nccl::Entry entry(const ClusterSpec& c, Algorithm a, Protocol p, OpKind kind = OpKind::allreduce) {
  return nccl::Tuning(c).entry(kind, a, p);
}

Protocol ring_protocol(const ClusterSpec& c, std::int64_t bytes) {
  CollectiveRequest req;
  req.algorithm = Algorithm::ring;
  return nccl::Tuning(c).choose(OpKind::allreduce, bytes, DType::fp32, ReduceOp::sum, req).protocol;
}

}  // namespace

TEST_CASE("releases from 2.6 on each rank with the model of the newest tag not after them", "[collectives][releases]") {
  auto tag = [](int v) { return std::string(nccl::release_of(v).tag); };
  CHECK(tag(20408) == "v2.5.7-1 without LL128");  // before 2.5: no model, no LL128
  CHECK(tag(20500) == "v2.5.7-1");
  CHECK(tag(20506) == "v2.5.7-1");
  CHECK(tag(20507) == "v2.5.7-1");
  CHECK(tag(20604) == "v2.6.4-1");
  CHECK(tag(20703) == "v2.7.8-1");
  CHECK(tag(20803) == "v2.9.9-1");  // 2.8.3's tuning.cc is 2.9.9's
  CHECK(tag(v2_9_9) == "v2.9.9-1");
  CHECK(tag(v2_11_4) == "v2.10.3-1");  // 2.11.4's tuning.cc is 2.10.3's
  CHECK(tag(v2_12_12) == "v2.12.7-1");
  CHECK(tag(21304) == "v2.12.7-1");
  CHECK(tag(v2_14_3) == "v2.14.3-1");
  CHECK(tag(21602) == "v2.15.1-1");
  CHECK(tag(v2_17_1) == "v2.17.1-1");
  CHECK(tag(v2_18_1) == "v2.18.1-1");
  CHECK(tag(21803) == "v2.18.5-1");
  CHECK(tag(v2_18_5) == "v2.18.5-1");
}

TEST_CASE("one A100 node under 2.9.9: 235 GB/s of bus, LL128 capped per collective, older latencies", "[collectives][releases]") {
  // 2.9.9: busBw = min(12 x 20, 235). Ring Simple: 235 x 8/14; LL128: min(235 x 0.92, 12 x 16.9
  // for allreduce) = 202.8; allgather: min(216.2, 12 x 18.3 = 219.6) x 8/7; LL: min(87.7, 235/4).
  const auto old_c = a100(v2_9_9), new_c = a100(v2_18_5);
  CHECK(entry(old_c, Algorithm::ring, Protocol::simple).bw_GBps == Approx(235.0 * 8 / 14));
  CHECK(entry(old_c, Algorithm::ring, Protocol::ll128).bw_GBps == Approx(12 * 16.9 * 8 / 14));
  CHECK(entry(old_c, Algorithm::ring, Protocol::ll128, OpKind::allgather).bw_GBps == Approx(235.0 * 0.92 * 8 / 7));
  CHECK(entry(old_c, Algorithm::ring, Protocol::ll).bw_GBps == Approx(235.0 / 4 * 8 / 14));
  // 2.18.5: no bus cap, LL128 min(240 x 0.92, 12 x 20).
  CHECK(entry(new_c, Algorithm::ring, Protocol::simple).bw_GBps == Approx(240.0 * 8 / 14));
  CHECK(entry(new_c, Algorithm::ring, Protocol::ll128).bw_GBps == Approx(240.0 * 0.92 * 8 / 14));
  // Latencies, 14 steps: baseLat + 14 x hwLat (NVLink). 2.9.9 ring LL 3.6 + 14 x 0.47, LL128 10 +
  // 14 x 1.9, tree LL 4.4 + 2 x 7 x 0.52; 2.18.5 ring LL 6.6 + 14 x 0.6.
  CHECK(entry(old_c, Algorithm::ring, Protocol::ll).latency_us == Approx(3.6 + 14 * 0.47));
  CHECK(entry(old_c, Algorithm::ring, Protocol::ll128).latency_us == Approx(10.0 + 14 * 1.9));
  CHECK(entry(old_c, Algorithm::tree, Protocol::ll).latency_us == Approx(4.4 + 2 * 7 * 0.52));
  CHECK(entry(new_c, Algorithm::ring, Protocol::ll).latency_us == Approx(6.6 + 14 * 0.6));
}

TEST_CASE("a ring allreduce on one A100 node leaves LL128 for Simple near 16.4 MB under 2.9.9, 24.3 MB under 2.18.5",
          "[collectives][releases]") {
  // 2.9.9: LL128 36.6 us + S / 115.9 GB/s, Simple 8.4 + 14 x 3.4 = 56 us + S / 134.3 GB/s: equal at
  // S = 19.4 / (1/115.886e3 - 1/134.286e3) = 16.4e6 B. 2.18.5: LL128 40.6 + S / 126.2, Simple 56 +
  // S / 137.1: S = 15.4 / (1/126.171e3 - 1/137.143e3) = 24.3e6 B.
  CHECK(ring_protocol(a100(v2_9_9), 15'000'000) == Protocol::ll128);
  CHECK(ring_protocol(a100(v2_9_9), 20'000'000) == Protocol::simple);
  CHECK(ring_protocol(a100(v2_18_5), 20'000'000) == Protocol::ll128);
  CHECK(ring_protocol(a100(v2_18_5), 26'000'000) == Protocol::simple);
}

TEST_CASE("two A100 nodes: LL hops inside at 1.8 x hwLat, network steps and the ring plateau by release",
          "[collectives][releases]") {
  // 16 ranks, 30 steps. 2.9.9: 2 (nodes - 1) = 2 network steps: 3.6 + 28 x 0.47 x 1.8 + 2 x 2.7.
  // 2.12.7: 2 x nodes = 4: 3.6 + 26 x 0.846 + 4 x 2.7; its ring Simple network hop 28 us, 9.6 again
  // in 2.14.3: 8.4 + 26 x 3.4 + 4 x 28 (or 9.6).
  auto two = [](int v) { return at(testing::nccl_nodes(2), v); };
  CHECK(entry(two(v2_9_9), Algorithm::ring, Protocol::ll).latency_us == Approx(3.6 + 28 * 0.47 * 1.8 + 2 * 2.7));
  CHECK(entry(two(v2_12_12), Algorithm::ring, Protocol::ll).latency_us == Approx(3.6 + 26 * 0.47 * 1.8 + 4 * 2.7));
  CHECK(entry(two(v2_12_12), Algorithm::ring, Protocol::simple).latency_us == Approx(8.4 + 26 * 3.4 + 4 * 28));
  CHECK(entry(two(v2_14_3), Algorithm::ring, Protocol::simple).latency_us == Approx(8.4 + 26 * 3.4 + 4 * 9.6));
  // The plateau (x 1.9 on the latency) starts at ranks / 16 x 64 KiB = 65,536 B before 2.18.
  const auto c = two(v2_14_3);
  const nccl::Tuning t(c);
  const auto e = t.entry(OpKind::allreduce, Algorithm::ring, Protocol::simple);
  auto lat_at = [&](std::int64_t s) {
    return t.time_us(OpKind::allreduce, Algorithm::ring, Protocol::simple, s) - static_cast<double>(s) / (1000 * e.bw_GBps);
  };
  CHECK(lat_at(65535) == Approx(e.latency_us));
  CHECK(lat_at(65536) == Approx(1.9 * e.latency_us));
}

TEST_CASE("Hopper before 2.15 reads Volta's rows without LL128, NVLS comes in 2.17 and NVLSTree in 2.18", "[collectives][releases]") {
  auto h100 = [](int v) { return at(testing::nccl_node(9.0, 360, true), v); };
  auto supported = [](const ClusterSpec& c, Algorithm a, Protocol p) {
    return nccl::Tuning(c).supported(OpKind::allreduce, a, p);
  };
  CHECK_FALSE(supported(h100(v2_14_3), Algorithm::ring, Protocol::ll128));
  CHECK(supported(h100(v2_15_5), Algorithm::ring, Protocol::ll128));
  CHECK_FALSE(supported(h100(v2_15_5), Algorithm::nvls, Protocol::simple));
  CHECK(supported(h100(v2_17_1), Algorithm::nvls, Protocol::simple));
  // A ring's LL on one node: Volta's 39 GB/s cap under 2.14.3, Ampere's 87.7 (Hopper's row) from 2.15.
  CHECK(entry(h100(v2_14_3), Algorithm::ring, Protocol::ll).bus_bw_GBps == Approx(39.0));
  CHECK(entry(h100(v2_15_5), Algorithm::ring, Protocol::ll).bus_bw_GBps == Approx(87.7));
  // 2.17.1's NVLS: the ring graph's 18 x 20 = 360 under the 370 Hopper cap, x 3/4; base 40 us.
  const auto nvls = entry(h100(v2_17_1), Algorithm::nvls, Protocol::simple);
  CHECK(nvls.bw_GBps == Approx(360.0 * 0.75));
  CHECK(nvls.latency_us == Approx(40.0));
  auto nodes = testing::ideal_multi_node(2, 8, 360e9, 0.5e-6, 50e9, 1e-6);
  nodes.library = CollectiveLibrary::nccl;
  nodes.device.compute_capability = 9.0;
  nodes.intra.nvls = true;
  CHECK_FALSE(supported(at(nodes, v2_17_1), Algorithm::nvls_tree, Protocol::simple));
  CHECK(supported(at(nodes, v2_18_1), Algorithm::nvls_tree, Protocol::simple));
}

TEST_CASE("2.9.9's tree LL128 correction differs from 512 KiB on", "[collectives][releases]") {
  // [floor(log2(bytes / 64))]: 16 MiB is index 18, 0.8 in 2.9.9 and 0.9 from 2.10; 4 MiB (16) 0.7 and 0.8.
  CHECK(nccl::tree_correction(nccl::release_of(v2_9_9), Protocol::ll128, 16 << 20) == Approx(0.8));
  CHECK(nccl::tree_correction(nccl::release_of(v2_18_5), Protocol::ll128, 16 << 20) == Approx(0.9));
  CHECK(nccl::tree_correction(nccl::release_of(v2_9_9), Protocol::ll128, 4 << 20) == Approx(0.7));
  CHECK(nccl::tree_correction(nccl::release_of(v2_11_4), Protocol::ll128, 4 << 20) == Approx(0.8));
}

TEST_CASE("2.6 and 2.7: no LL cap, trees under caps on the whole tree, 2.6's ring latency all at the network",
          "[collectives][releases]") {
  // A Volta node of 240 GB/s: a ring's LL is a quarter, 60 GB/s, under no cap before 2.8 (2.9.9: 39).
  const auto volta = testing::nccl_node(7.0, 240, false);
  CHECK(entry(at(volta, v2_7_8), Algorithm::ring, Protocol::ll).bus_bw_GBps == Approx(60.0));
  CHECK(entry(at(volta, v2_9_9), Algorithm::ring, Protocol::ll).bus_bw_GBps == Approx(39.0));
  // 2.6.4: LL128 on Volta only, at 120/128 of the bus under 100 GB/s for allreduce (the whole bus).
  CHECK(entry(at(volta, v2_6_4), Algorithm::ring, Protocol::ll128).bus_bw_GBps == Approx(100.0));
  CHECK_FALSE(nccl::Tuning(a100(v2_6_4)).supported(OpKind::allreduce, Algorithm::ring, Protocol::ll128));
  // Trees on one node: min(0.9 x bus, 110); 2.6's LL a third of that. On an A100 (235 after the
  // cap) 2.7's LL128 reads 130 instead, x 7/9, under 16.7 x 7/9 a channel.
  const nccl::Tuning t26(at(volta, v2_6_4)), t27(a100(v2_7_8));
  REQUIRE(t27.topology().tree.channels >= 8);
  REQUIRE(t27.topology().tree.channels * t27.topology().tree.bw_intra_GBps >= 145);
  CHECK(t26.entry(OpKind::allreduce, Algorithm::tree, Protocol::ll).bus_bw_GBps == Approx(110.0 / 3));
  CHECK(t27.entry(OpKind::allreduce, Algorithm::tree, Protocol::simple).bus_bw_GBps == Approx(110.0));
  CHECK(t27.entry(OpKind::allreduce, Algorithm::tree, Protocol::ll128).bus_bw_GBps == Approx(130.0 * 7 / 9));
  // 2.6.4 on two nodes: every one of a ring's 30 steps at the network's hwLat (LL 0.9, Simple 6.6
  // us), and no plateau.
  const auto two = at(testing::nccl_nodes(2), v2_6_4);
  CHECK(entry(two, Algorithm::ring, Protocol::ll).latency_us == Approx(3.6 + 30 * 0.9));
  const nccl::Tuning t(two);
  const auto e = t.entry(OpKind::allreduce, Algorithm::ring, Protocol::simple);
  CHECK(e.latency_us == Approx(8.4 + 30 * 6.6));
  const std::int64_t s = std::int64_t{1} << 30;
  CHECK(t.time_us(OpKind::allreduce, Algorithm::ring, Protocol::simple, s) ==
        Approx(e.latency_us + static_cast<double>(s) / (1000 * e.bw_GBps)));
}

TEST_CASE("before 2.17 only compute capability 8.0 reads Ampere's rows", "[collectives][releases]") {
  // An 8.6 node of 240 GB/s: a ring's LL is min(LL cap, a quarter of the bus). 2.15 reads Volta's
  // row (39, no bus cap); 2.17 Ampere's (87.7) and caps the bus at Ampere's 235: 58.75.
  const auto sm86 = testing::nccl_node(8.6, 240, false);
  CHECK(entry(at(sm86, v2_15_5), Algorithm::ring, Protocol::ll).bus_bw_GBps == Approx(39.0));
  CHECK(entry(at(sm86, v2_17_1), Algorithm::ring, Protocol::ll).bus_bw_GBps == Approx(235.0 / 4));
}

TEST_CASE("a network plugin's reported latency: ignored to 2.11, in place of hwLat to 2.17, added from 2.18",
          "[collectives][releases]") {
  // Two nodes of 8 A100s whose plugin reports 75 us (aws-ofi-nccl on p4d). Ring allreduce, 30
  // steps of which 2 (to 2.11) or 4 (2.12-2.22) cross nodes.
  auto two = [](int v) {
    auto c = at(testing::nccl_nodes(2), v);
    c.inter.net_plugin_latency_us = 75;
    return c;
  };
  CHECK(entry(two(v2_9_9), Algorithm::ring, Protocol::ll).latency_us == Approx(3.6 + 28 * 0.47 * 1.8 + 2 * 2.7));
  CHECK(entry(two(v2_14_3), Algorithm::ring, Protocol::ll).latency_us == Approx(3.6 + 26 * 0.47 * 1.8 + 4 * 75));
  // 2.18.5: hwLat + 75 a network step (Simple: + 2 x 75), inside steps at least the 1 us (Simple
  // 3 us) network overhead; the tree's one network hop each way likewise.
  CHECK(entry(two(v2_18_5), Algorithm::ring, Protocol::ll).latency_us == Approx(6.6 + 26 * 1.0 + 4 * (2.7 + 75)));
  CHECK(entry(two(v2_18_5), Algorithm::ring, Protocol::simple).latency_us == Approx(8.4 + 26 * 3.4 + 4 * (14 + 150)));
  CHECK(entry(two(v2_18_5), Algorithm::tree, Protocol::ll).latency_us == Approx(6.8 + 2 * (7 * 0.6 + (5 + 75))));
  // NVLSTree on 2 H100 nodes: 2.18.5 reads hwLat alone (23 + 2 x 19); 2.20.5 the plugin's too:
  // 23 + 2 log2(2) x (14 + 2 x 75).
  auto h100 = [](int v) {
    auto c = testing::ideal_multi_node(2, 8, 360e9, 0.5e-6, 50e9, 1e-6);
    c.library = CollectiveLibrary::nccl;
    c.device.compute_capability = 9.0;
    c.intra.nvls = true;
    c.inter.net_plugin_latency_us = 75;
    return at(c, v);
  };
  CHECK(entry(h100(v2_18_5), Algorithm::nvls_tree, Protocol::simple).latency_us == Approx(23.0 + 2 * 19));
  CHECK(entry(h100(22005), Algorithm::nvls_tree, Protocol::simple).latency_us == Approx(23.0 + 2 * (14 + 150)));
}

TEST_CASE("2.5.7: trees under 90 GB/s on one node and 70 from two, and no LL128 before 2.5", "[collectives][releases]") {
  // v2.5.7-1 tuning.cc: busBw = min(busBw x 0.9, nNodes > 1 ? 70 : 90) for trees (2.6.4: nNodes >
  // 2 ? 80 : 110), LL a third, LL128 7/9; the rest as 2.6.4.
  constexpr int v2_5_7 = 20507, v2_4_8 = 20408;
  const auto volta = testing::nccl_node(7.0, 240, false);
  REQUIRE(entry(at(volta, v2_6_4), Algorithm::tree, Protocol::simple).bus_bw_GBps == Approx(110.0));  // 0.9 x bus >= 110
  CHECK(entry(at(volta, v2_5_7), Algorithm::tree, Protocol::simple).bus_bw_GBps == Approx(90.0));
  CHECK(entry(at(volta, v2_5_7), Algorithm::tree, Protocol::ll).bus_bw_GBps == Approx(30.0));
  CHECK(entry(at(volta, v2_5_7), Algorithm::tree, Protocol::ll128).bus_bw_GBps == Approx(70.0));
  const auto two = testing::nccl_nodes(2);
  const double two_26 = entry(at(two, v2_6_4), Algorithm::tree, Protocol::simple).bus_bw_GBps;
  REQUIRE(two_26 >= 70.0);  // 2.6.4 keeps the one-node cap of 110 on two nodes
  CHECK(entry(at(two, v2_5_7), Algorithm::tree, Protocol::simple).bus_bw_GBps == Approx(70.0));
  // LL128 came with 2.5 (v2.4.8-1 has only LL and Simple): 2.4.8 refuses it where 2.5.7 runs it.
  CHECK(nccl::Tuning(at(volta, v2_5_7)).supported(OpKind::allreduce, Algorithm::ring, Protocol::ll128));
  CHECK_FALSE(nccl::Tuning(at(volta, v2_4_8)).supported(OpKind::allreduce, Algorithm::ring, Protocol::ll128));
  PlanOp op;
  op.kind = OpKind::allreduce;
  op.bytes = 16 << 20;
  op.request.protocol = Protocol::ll128;
  try {
    choose_collective(op, at(volta, v2_4_8));
    FAIL("LL128 under NCCL 2.4.8 was accepted");
  } catch (const InputError& e) {
    CHECK_THAT(e.what(), Catch::Contains("NCCL 2.4.8 has no LL128 (from 2.5)"));
  }
}
