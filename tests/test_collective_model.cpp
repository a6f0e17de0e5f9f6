// The collective model against hand computations from NCCL's published constants (NVIDIA/nccl
// v2.18.5 src/graph/tuning.cc, topo.h, search.cc; see collectives/nccl_constants.h), and the
// protocol mechanics against their closed forms in both fidelities.
#include <catch2/catch.hpp>

#include <cmath>

#include "collectives/collective_model.h"
#include "collectives/nccl_tuning.h"
#include "core/cluster_json.h"
#include "core/error.h"
#include "sim/collective_sweep.h"
#include "sim/sim_engine.h"
#include "tests/test_support.h"

using namespace redsim;

using testing::nccl_node;
using testing::nccl_nodes;

namespace {

nccl::Choice choose(const ClusterSpec& c, std::int64_t bytes, CollectiveRequest req = {}) {
  return nccl::Tuning(c, req.channels).choose(OpKind::allreduce, bytes, DType::fp32, ReduceOp::sum, req);
}

const SimOptions kExact{false, Fidelity::exact}, kScalable{false, Fidelity::scalable};

}  // namespace

TEST_CASE("NCCL's search gives 8 A100s 12 rings of 20 GB/s and 24 channels: 8 H100s 12 x 30 and 16 NVLS channels", "[collectives]") {
  // search.cc: A100 rings found at 6 x 40 GB/s (6 x 40 = 240 fills the port) are split in two;
  // H100 at 6 x 60 (= 360). connect.cc doubles them into execution channels.
  const auto a = nccl::topology_of(nccl_node(8.0, 240, false));
  CHECK(a.ring.channels == 12);
  CHECK(a.ring.bw_intra_GBps == 20);
  CHECK(a.comm_channels == 24);
  CHECK(a.ll128);
  CHECK_FALSE(a.nvls);
  const auto h = nccl::topology_of(nccl_node(9.0, 360, true));
  CHECK(h.ring.channels == 12);
  CHECK(h.ring.bw_intra_GBps == 30);
  // NVLS: one head per GPU, each port carrying (8 + 1) x 40 = 360 GB/s.
  CHECK(h.nvls_graph.channels == 8);
  CHECK(h.nvls_graph.bw_intra_GBps == 40);
  CHECK(h.nvls_channels == 16);
}

TEST_CASE("on 8 A100s NCCL's model switches LL -> LL128 near 1.2 MB and LL128 -> Simple near 24 MB", "[collectives]") {
  // Ring allreduce, 8 ranks (14 steps), hwLat NVLink and baseLat from tuning.cc:
  //   LL:     15.0 us + S / (min(87.7, 240/4) x 8/14 = 34.29 GB/s)
  //   LL128:  40.6 us + S / (min(0.92 x 240, 12 x 20) x 8/14 = 126.17 GB/s)
  //   Simple: 56.0 us + S / (240 x 8/14 = 137.14 GB/s)
  // LL = LL128 at S = 25.6 / (1/34.29e3 - 1/126.17e3) = 1.21e6 B; LL128 = Simple at
  // 15.4 / (1/126.17e3 - 1/137.14e3) = 24.3e6 B. Tree loses on one node (its LL is 0.2 us slower).
  const auto c = nccl_node(8.0, 240, false);
  CHECK(choose(c, 1 << 20).protocol == Protocol::ll);
  CHECK(choose(c, 2 << 20).protocol == Protocol::ll128);
  CHECK(choose(c, 16 << 20).protocol == Protocol::ll128);
  CHECK(choose(c, 32 << 20).protocol == Protocol::simple);
  for (std::int64_t s : {1024, 1 << 20, 1 << 30}) CHECK(choose(c, s).algorithm == Algorithm::ring);
  CHECK(choose(c, 1 << 20).model_time_us == Approx(15.0 + 1048576 / 34.2857e3).epsilon(1e-4));
}

TEST_CASE("on 8 H100s NCCL's model moves from ring LL to NVLS near 494 KB", "[collectives]") {
  // LL: 15.0 us + S / (87.7 x 8/14 = 50.11 GB/s); NVLS: 23 us + S / (8 x 40 x 5/6 = 266.7 GB/s):
  // equal at S = 8 / (1/50.11e3 - 1/266.7e3) = 4.94e5 B.
  const auto c = nccl_node(9.0, 360, true);
  CHECK(choose(c, 256 << 10).algorithm == Algorithm::ring);
  CHECK(choose(c, 512 << 10).algorithm == Algorithm::nvls);
  CHECK(choose(c, 512 << 10).channels == 16);
}

TEST_CASE("NCCL uses fewer channels for small collectives", "[collectives]") {
  // Ring LL: a channel per 512 threads x 8 x 8 ranks = 32 KiB (enqueue.cc getAlgoInfo).
  const auto c = nccl_node(8.0, 240, false);
  CHECK(choose(c, 32 << 10).channels == 1);
  CHECK(choose(c, 64 << 10).channels == 2);
  CHECK(choose(c, 512 << 10).channels == 16);
  CHECK(choose(c, 1 << 20).channels == 24);
}

TEST_CASE("a request NCCL cannot run on the cluster is bad input", "[collectives]") {
  const auto a100 = nccl_node(8.0, 240, false);
  CHECK_THROWS_AS(choose(a100, 1 << 20, {Algorithm::nvls, std::nullopt, 0}), InputError);
  CHECK_THROWS_AS(choose(a100, 1 << 20, {Algorithm::collnet_direct, std::nullopt, 0}), InputError);
  auto pcie = a100;
  pcie.intra.fabric = IntraFabric::pcie;
  CHECK_THROWS_AS(choose(pcie, 1 << 20, {std::nullopt, Protocol::ll128, 0}), InputError);  // LL128 needs NVLink
  // Forced values are followed where NCCL can.
  CHECK(choose(a100, 1 << 30, {std::nullopt, Protocol::ll, 0}).protocol == Protocol::ll);
  CHECK(choose(a100, 1024, {Algorithm::tree, std::nullopt, 0}).algorithm == Algorithm::tree);
}

TEST_CASE("ring LL: 2(N-1) steps of max(hop latency) + payload at the LL channel cap, both fidelities", "[collectives][protocol]") {
  // One channel (pinned), 8 A100s, 256 KiB: one loop of 32 KiB per step. LL's cap is the model's
  // bus bandwidth per channel: min(87.7, 240/4) = 60 GB/s; its wire bytes (x2) at 240 GB/s
  // would take less. A step lasts max(0.6 us NVLink ring LL hwLat, 0.5 us route) + 32768 / 60e9
  // (LL pays hwLat alone: nccl_constants.h, kSimpleHopFenceUs).
  const auto c = nccl_node(8.0, 240, false);
  auto plan = testing::single_allreduce_plan(8, 256 << 10, 1);
  plan.ops[0].request = {Algorithm::ring, Protocol::ll, 1};
  choose_collectives(plan, c);
  REQUIRE(plan.ops[0].channels == 1);
  const double expected = 6.6e-6 + 14 * (0.6e-6 + 32768 / 60e9);
  CHECK(testing::end_of(simulate(plan, c, kExact)) == Approx(expected).epsilon(0.01));
  CHECK(testing::end_of(simulate(plan, c, kScalable)) == Approx(expected).epsilon(0.01));
}

TEST_CASE("ring LL128: a step smaller than a pass of the channel's warps lasts a whole pass, both fidelities", "[collectives][protocol]") {
  // One channel (pinned), 8 A100s, allgather: 7 steps, each moving the buffer / 8. A pass of the
  // channel's 640 threads is 20 warps x 1,920 data bytes (32 threads x 8 words, 1 in 16 a flag:
  // NCCL's prims_ll128.h) = 38,400 B, and a step runs as whole passes. LL128's cap is the model's
  // bus bandwidth for one channel: min(240 x 0.92, 20 x 12) = 220.8 GB/s (its wire bytes, x16/15,
  // at 240 GB/s would take less). A step lasts max(1.9 us NVLink ring LL128 hwLat, 0.5 us route)
  // + passes x 38,400 / 220.8e9; base latency 14 us.
  const auto c = nccl_node(8.0, 240, false);
  auto run = [&](std::int64_t bytes, const SimOptions& how) {
    auto plan = testing::single_collective_plan(8, OpKind::allgather, Algorithm::ring, bytes, 1);
    plan.ops[0].request = {Algorithm::ring, Protocol::ll128, 1};
    choose_collectives(plan, c);
    REQUIRE(plan.ops[0].channels == 1);
    return testing::end_of(simulate(plan, c, how));
  };
  const double pass_s = 38400 / 220.8e9;
  const double one_pass = 14e-6 + 7 * (1.9e-6 + pass_s), two_passes = 14e-6 + 7 * (1.9e-6 + 2 * pass_s);
  for (const auto& how : {kExact, kScalable}) {
    CHECK(run(8 * 7680, how) == Approx(one_pass).epsilon(0.01));  // 4 warps' slices: still a pass
    CHECK(run(8 * 38400, how) == Approx(one_pass).epsilon(0.01));
    CHECK(run(8 * 38400 + 8 * 1920, how) == Approx(two_passes).epsilon(0.01));
  }
}

TEST_CASE("ring Simple: loops of 2 MiB chunks sent as 2 slices, each a synchronised step", "[collectives][protocol]") {
  // One channel, 8 ranks, 32 MiB: two loops (8 x 2 MiB each); each of the 14 steps of a loop
  // sends 2 slices of 1 MiB, each max(6 us measured hop, 3.4 us hwLat, 0.5 us route) + 1 MiB at
  // 240 GB/s. Base latency 8.4 us.
  const auto c = nccl_node(8.0, 240, false);
  auto plan = testing::single_allreduce_plan(8, 32 << 20, 1);
  plan.ops[0].request = {Algorithm::ring, Protocol::simple, 1};
  choose_collectives(plan, c);
  const double expected = 8.4e-6 + 2 * 14 * 2 * (6e-6 + 1048576 / 240e9);
  CHECK(testing::end_of(simulate(plan, c, kExact)) == Approx(expected).epsilon(0.01));
  CHECK(testing::end_of(simulate(plan, c, kScalable)) == Approx(expected).epsilon(0.01));
}

TEST_CASE("NVLS: the switch reduces and multicasts, and busbw exceeds the port's rate", "[collectives][protocol]") {
  // One channel, 8 H100s (360 GB/s ports), 64 MiB: 128 KiB chunks, 64 loops of 8 x 128 KiB.
  // A loop's reduce stage moves its slice and its piece (slice/8) each way: 1.125 MiB. The
  // pipeline's three stages (scatter, reduce, gather) make 64 + 2 steps, the copy stages at the
  // reduce stage's pace: 66 x 1.125 = 74.25 MiB at 360 GB/s after NCCL's 5/6 efficiency (x 1.2
  // bytes), each of the 66 steps also crossing the port's 0.25 us; base latency 23 us.
  const auto c = nccl_node(9.0, 360, true);
  auto plan = testing::single_allreduce_plan(8, 64 << 20, 1);
  plan.ops[0].request = {Algorithm::nvls, std::nullopt, 1};
  choose_collectives(plan, c);
  REQUIRE(plan.ops[0].algorithm == Algorithm::nvls);
  const double expected = 23e-6 + 74.25 * 1048576 * 1.2 / 360e9 + 66 * 0.25e-6;
  const auto tl = simulate(plan, c, kExact);
  CHECK(testing::end_of(tl) == Approx(expected).epsilon(0.01));
  const auto scalable = simulate(plan, c, kScalable);
  CHECK(testing::end_of(scalable) == Approx(expected).epsilon(0.01));
  // The copy stages pace the pipeline but are not traffic: a device sends and receives its 64
  // loops' slice and piece, 72 MiB of payload, 1.2 x that on the wire, in both fidelities.
  const auto wire = std::llround(64.0 * (9 << 17) * 1.2);
  for (const Timeline* t : {&tl, &scalable})
    for (int r : {0, 7}) {
      CHECK(t->at(r, 0).bytes_sent == wire);
      CHECK(t->at(r, 0).bytes_received == wire);
    }
  const double busbw = (64 << 20) / testing::end_of(tl) * 2 * 7 / 8;
  CHECK(busbw > 360e9);
}

TEST_CASE("NVLS before NCCL 2.20 runs a small buffer on its first channels and heads: from 2.20 on all", "[collectives][protocol]") {
  // 8 H100s, 16 NVLS channels (checked above). A channel moves at most its share of NCCL's NVLS
  // algorithm bandwidth: 8 graph channels x 40 GB/s x 5/6 over 16 channels = 16.67 GB/s of
  // slice. Below 8 MiB the chunk is 16 KiB (enqueue.cc), so a channel's block is 8 x 16 KiB.
  const double cap_Bps = 8 * 40e9 * 5 / 6 / 16;
  const double step_lat_s = 0.25e-6;  // device to switch
  auto run = [](const ClusterSpec& c, std::int64_t bytes, const SimOptions& o) {
    auto plan = testing::single_allreduce_plan(8, bytes, 1);
    plan.ops[0].request = {Algorithm::nvls, std::nullopt, 0};
    choose_collectives(plan, c);
    REQUIRE(plan.ops[0].channels == 16);
    return simulate(plan, c, o);
  };
  auto v218 = nccl_node(9.0, 360, true);
  REQUIRE(v218.nccl_version == 21805);
  auto v220 = v218;
  v220.nccl_version = 22005;
  for (const SimOptions* o : {&kExact, &kScalable}) {
    // 2.18.5, 128 KiB: channel 0's one block, one loop of three stages, each its 128 KiB slice at
    // the cap (the port, alone, would take 0.48 us a step): 23 us + 3 x (0.25 + 7.86) us.
    const double one_block_s = 23e-6 + 3 * (step_lat_s + 131072 / cap_Bps);
    CHECK(testing::end_of(run(v218, 128 << 10, *o)) == Approx(one_block_s).epsilon(0.01));
    // 1 MiB is eight channels' blocks side by side: as long as one block, as the shared H100
    // table measured it flat from 128 KiB to 1 MiB (~42 us; bench/fidelity).
    CHECK(testing::end_of(run(v218, 1 << 20, *o)) == Approx(one_block_s).epsilon(0.01));
    // 64 KiB: half a block, so heads 0-3 reduce a 16 KiB chunk each and heads 4-7 nothing.
    const auto half = run(v218, 64 << 10, *o);
    CHECK(testing::end_of(half) == Approx(23e-6 + 3 * (step_lat_s + 65536 / cap_Bps)).epsilon(0.01));
    CHECK(half.at(0, 0).bytes_sent == std::llround((65536 + 16384) * 1.2));
    CHECK(half.at(7, 0).bytes_sent == std::llround(65536 * 1.2));
    // 2.20.5 splits 128 KiB over the 16 channels: 8 KiB slices, 1 KiB pieces.
    CHECK(testing::end_of(run(v220, 128 << 10, *o)) == Approx(23e-6 + 3 * (step_lat_s + 8192 / cap_Bps)).epsilon(0.01));
    CHECK(run(v220, 64 << 10, *o).at(7, 0).bytes_sent == std::llround(16 * (4096 + 512) * 1.2));
  }
}

TEST_CASE("NCCL's tree pays every hop's latency twice: a chain through the node, a network hop", "[collectives][protocol]") {
  // 2 nodes of 8, 8 bytes, LL: up 7 NVLink hops (hwLat NVLink tree LL 0.6 us) and one
  // network hop (hwLat NET tree LL 5.0 us), then the same down; base latency 6.8 us.
  const auto c = nccl_nodes(2);
  auto plan = testing::single_allreduce_plan(16, 8, 1);
  plan.ops[0].request = {Algorithm::tree, Protocol::ll, 1};
  choose_collectives(plan, c);
  const double expected = 6.8e-6 + 2 * (7 * 0.6e-6 + 5.0e-6);
  CHECK(testing::end_of(simulate(plan, c, kExact)) == Approx(expected).epsilon(0.02));
  CHECK(testing::end_of(simulate(plan, c, kScalable)) == Approx(expected).epsilon(0.02));
}

TEST_CASE("An NCCL ring allreduce shares its buffer among channels in NCCL's grains", "[collectives][protocol]") {
  // all_reduce.h runRing (2.18.5): LL128's grain is threads x 60 bytes / 2 = 640 x 30 = 19,200
  // bytes (4,800 floats), pieces laid chunk by chunk over the 24 channels. 2 MiB = 524,288
  // floats = 109 whole pieces and 1,088 floats: pieces 0-95 fill chunks 0-3 of every channel,
  // 96-108 chunk 4 of channels 0-12, piece 109 (channel 13) holds the rest.
  const auto a100 = nccl_node(8.0, 240, false);
  auto plan = testing::single_allreduce_plan(8, 2 << 20, 1);
  choose_collectives(plan, a100);
  REQUIRE(plan.ops[0].protocol == Protocol::ll128);
  REQUIRE(plan.ops[0].channels == 24);
  const auto m = mechanics_of(plan.ops[0], a100, 8);
  CHECK(m.ring_grain_elems == 4800);
  auto share = [&](const Mechanics& mm, std::int64_t bytes, int channels, int c) {
    std::int64_t sum = 0;
    for (auto v : ring_allreduce_chunks(mm, bytes, channels, c, 8)) sum += v;
    return sum;
  };
  CHECK(share(m, 2 << 20, 24, 0) == 5 * 19200);
  CHECK(share(m, 2 << 20, 24, 12) == 5 * 19200);
  CHECK(share(m, 2 << 20, 24, 13) == 4 * 19200 + 1088 * 4);
  CHECK(share(m, 2 << 20, 24, 23) == 4 * 19200);
  // Within a channel the share is split evenly over the ring positions.
  const auto ch0 = ring_allreduce_chunks(m, 2 << 20, 24, 0, 8);
  CHECK(ch0.front() == 12000);
  CHECK(ch0.back() == 12000);
  // LL's grain is 8 bytes a thread: at 1 MiB, 24 channels of 512 threads, 2 x 4,096 bytes a
  // piece, 128 pieces: chunks 0-4 of every channel and chunk 5 of channels 0-7.
  auto ll_plan = testing::single_allreduce_plan(8, 1 << 20, 1);
  choose_collectives(ll_plan, a100);
  REQUIRE(ll_plan.ops[0].protocol == Protocol::ll);
  const auto ll = mechanics_of(ll_plan.ops[0], a100, 8);
  CHECK(ll.ring_grain_elems == 1024);
  CHECK(share(ll, 1 << 20, 24, 7) == 6 * 8192);
  CHECK(share(ll, 1 << 20, 24, 8) == 5 * 8192);
  // Simple stays even (its channel-by-channel layout is not modelled).
  plan.ops[0].request = {Algorithm::ring, Protocol::simple, 0};
  choose_collectives(plan, a100);
  CHECK(mechanics_of(plan.ops[0], a100, 8).ring_grain_elems == 0);
  plan.ops[0].request = {};
  choose_collectives(plan, a100);
  // Conservation, and an ideal collective (no grain) or a buffer of several loops is even.
  std::int64_t total = 0;
  for (int c = 0; c < 24; ++c) total += share(m, 2 << 20, 24, c);
  CHECK(total == 2 << 20);
  CHECK(share(Mechanics{}, 2 << 20, 24, 0) == (2 << 20) / 24 + 1);
  CHECK(share(m, std::int64_t{200} << 20, 24, 0) == (std::int64_t{200} << 20) / 24 + 1);
  // Both fidelities run the channels so shared alike.
  const double exact = testing::end_of(simulate(plan, a100, kExact));
  CHECK(testing::end_of(simulate(plan, a100, kScalable)) == Approx(exact).epsilon(0.01));
}

TEST_CASE("A Simple ring across nodes holds only its network hops to the channel's cap", "[collectives][protocol]") {
  // dgx-a100-x2: NCCL's ring graph across nodes has 8 search channels of 24 GB/s (the NICs'
  // speed), 16 execution channels, so the bus bandwidth is 192 GB/s and a channel's cap 12 GB/s.
  // An NVLink hop copies at the channel's share of the device's 240 GB/s port: 15 GB/s.
  const auto c = load_cluster(REDSIM_SOURCE_DIR "/configs/dgx-a100-x2.json");
  auto plan = testing::single_allreduce_plan(c.world_size(), 64 << 20, 1);
  plan.ops[0].request = {Algorithm::ring, Protocol::simple, 0};
  choose_collectives(plan, c);
  REQUIRE(plan.ops[0].channels == 16);
  const auto m = mechanics_of(plan.ops[0], c, c.world_size());
  CHECK(m.channel_cap_Bps == Approx(12e9));
  CHECK(m.hop_cap_Bps(nccl::Hw::net) == Approx(12e9));
  CHECK(m.hop_cap_Bps(nccl::Hw::nvlink) == Approx(240e9 / 16));
  CHECK(m.hop_cap_time_s(nccl::Hw::nvlink, 15 << 20) == Approx(static_cast<double>(15 << 20) / 15e9));
  // LL's cap is its threads' own rate, on every hop; one node's ring keeps its cap too.
  plan.ops[0].request = {Algorithm::ring, Protocol::ll, 0};
  choose_collectives(plan, c);
  const auto ll = mechanics_of(plan.ops[0], c, c.world_size());
  CHECK(ll.hop_cap_Bps(nccl::Hw::nvlink) == ll.channel_cap_Bps);
  const auto node = load_cluster(REDSIM_SOURCE_DIR "/configs/dgx-a100.json");
  auto one = testing::single_allreduce_plan(8, 64 << 20, 1);
  one.ops[0].request = {Algorithm::ring, Protocol::simple, 0};
  choose_collectives(one, node);
  const auto m1 = mechanics_of(one.ops[0], node, 8);
  CHECK(m1.hop_cap_Bps(nccl::Hw::nvlink) == m1.channel_cap_Bps);
}

TEST_CASE("A Simple ring across a slow network gains from faster links inside its nodes", "[collectives][protocol]") {
  // HKBU's 8 x 4 RTX 2080 Ti over 10 GbE, NCCL's cap 0.6 GB/s a channel (1.2 GB/s of bus over 2
  // channels). A 1 MiB allreduce sends 2 x 31 steps of two 8 KiB slices a channel: 124 pieces,
  // each 13.65 us at the cap and 1.37 us at a channel's share of the 12 GB/s PCIe link. Held to
  // the cap, the PCIe hops' copies lasted as long as the network's and their synchronisation came
  // on top, piece after piece; at the link's share the ring saves most of the 12.3 us a piece
  // (checked: at least half), and stays above its network hop's pieces at the cap. With the
  // PCIe link at the cap's level (1.2 GB/s over 2 channels) it runs as before.
  auto c = load_cluster(REDSIM_SOURCE_DIR "/bench/fidelity/hkbu-2080ti-10gbe-x8.json");
  SweepOptions o;
  o.min_bytes = o.max_bytes = 1 << 20;
  o.iters = 1;
  o.request = {Algorithm::ring, Protocol::simple, 0};
  o.fidelity = Fidelity::exact;
  const auto fast = collective_sweep(c, o).front();
  REQUIRE(fast.channels == 2);
  c.intra.link_bandwidth_GBps = 1.2;
  const double slow_us = collective_sweep(c, o).front().time_us;
  const double at_cap_us = 8192 / 0.6e9 * 1e6, at_share_us = 8192 / 6e9 * 1e6;
  CHECK(slow_us - fast.time_us > 0.5 * 124 * (at_cap_us - at_share_us));
  CHECK(fast.time_us > 124 * at_cap_us);
}
