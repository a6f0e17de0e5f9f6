// Chains and trees as NCCL runs them (LL128 streaming, Simple store-and-forward, the tree's
// network hop, proxies on a ring's network hops) against closed forms in both fidelities, with
// constants from NVIDIA/nccl v2.18.5 (collectives/nccl_constants.h).
#include <catch2/catch.hpp>

#include <cmath>

#include "collectives/collective_model.h"
#include "collectives/nccl_tuning.h"
#include "core/cluster_json.h"
#include "sim/sim_engine.h"
#include "tests/test_support.h"

using namespace redsim;
using testing::nccl_node;
using testing::nccl_nodes;

namespace {

const SimOptions kExact{false, Fidelity::exact}, kScalable{false, Fidelity::scalable};

// `nodes` nodes of one A100 each on 25 GB/s NICs (1 us), as NCCL sees them: every hop crosses nodes.
ClusterSpec a100_per_node(int nodes) {
  auto c = testing::ideal_multi_node(nodes, 1, 240e9, 0.5e-6, 25e9, 1e-6);
  c.library = CollectiveLibrary::nccl;
  c.device.compute_capability = 8.0;
  return c;
}

// Both fidelities end `plan` on `c` within `epsilon` (relative) of `expected_s`.
void check_both_fidelities(const Plan& plan, const ClusterSpec& c, double expected_s, double epsilon) {
  CHECK(testing::end_of(simulate(plan, c, kExact)) == Approx(expected_s).epsilon(epsilon));
  CHECK(testing::end_of(simulate(plan, c, kScalable)) == Approx(expected_s).epsilon(epsilon));
}

// An allreduce of `bytes` on every rank of `c` forced onto a tree with protocol `p` on `channels`
// channels (0: NCCL's count), chosen as the model chooses, with its mechanics.
struct ForcedTree {
  Plan plan;
  Mechanics m;
};
ForcedTree forced_tree(const ClusterSpec& c, std::int64_t bytes, Protocol p, int channels) {
  const int world = c.world_size();
  ForcedTree t{testing::single_allreduce_plan(world, bytes, 1), {}};
  t.plan.ops[0].request = {Algorithm::tree, p, channels};
  choose_collectives(t.plan, c);
  REQUIRE(t.plan.ops[0].protocol == p);
  if (channels > 0) REQUIRE(t.plan.ops[0].channels == channels);
  t.m = mechanics_of(t.plan.ops[0], c, world);
  return t;
}

// The closed forms' premise: 16 KiB on one tree channel streams in 1 KiB pieces (16 KiB / 16,
// P = 16), and the channel's 16 KiB crosses a network hop as one step.
ForcedTree one_step_tree(const ClusterSpec& c, Protocol p) {
  auto t = forced_tree(c, 16 << 10, p, 1);
  REQUIRE(t.m.chunk_bytes == 1024);
  REQUIRE(t.m.stream_net_step_bytes == 16384);
  return t;
}

}  // namespace

TEST_CASE("LL128 chains stream: pieces after the first follow at the channel's cap, no latency each", "[collectives][protocol]") {
  // One channel, 8 A100s (240 GB/s ports, 0.5 us), broadcast and reduce of 4 MiB with LL128. A
  // chain streams in 4 KiB pieces (4 MiB / 16, at most 4 KiB): P = 1024. NCCL's sender runs up to
  // NCCL_STEPS steps ahead of its receiver (prims_ll128.h), far more than the route's latency
  // needs, so the first piece crosses the 7 hops, each max(1.9 us NVLink ring LL128 hwLat, 0.5 us
  // route) + 4096 B at the channel's cap, and the other 1023 follow one cap-time
  // apart. The cap is one channel's LL128 bus bandwidth: 240 GB/s x 0.92 (tuning.cc) = 220.8
  // GB/s, above the wire's 240 x 120/128 = 225 GB/s of payload. Base latency 14 us. Waiting a
  // route latency per piece would add 1022 x 0.5 us = 511 us.
  const auto c = nccl_node(8.0, 240, false);
  const double piece_s = 4096 / 220.8e9;
  const double expected = 14e-6 + 7 * (1.9e-6 + piece_s) + 1023 * piece_s;
  for (auto kind : {OpKind::broadcast, OpKind::reduce}) {
    CAPTURE(op_kind_name(kind));
    auto plan = testing::single_collective_plan(8, kind, Algorithm::ring, 4 << 20, 1, 3);
    plan.ops[0].request = {Algorithm::ring, Protocol::ll128, 1};
    choose_collectives(plan, c);
    REQUIRE(plan.ops[0].protocol == Protocol::ll128);
    const auto tl = simulate(plan, c, kExact);
    CHECK(testing::end_of(tl) == Approx(expected).epsilon(0.01));
    CHECK(testing::end_of(simulate(plan, c, kScalable)) == Approx(expected).epsilon(0.01));
    // Every byte crosses the 7 links once: streaming changes when, not what.
    std::int64_t sent = 0;
    for (int r = 0; r < 8; ++r) sent += tl.at(r, 0).bytes_sent;
    CHECK(sent == 7 * ((std::int64_t{4} << 20) * 128 / 120));  // in LL128's wire bytes
  }
}

TEST_CASE("Simple chains store and forward: a chunk waits for the previous one's route latency", "[collectives][protocol]") {
  // The same chain with Simple: 512 KiB chunks (a step, BROADCAST_CHUNKSTEPS 1), P = 8, each
  // hop a store and forward. The first chunk pays max(6 us measured, 3.4 us tree Simple hwLat)
  // a hop, the other 7 the route's 0.5 us each; 512 KiB at the port's 240 GB/s (Simple's bus
  // bandwidth for one channel is the ring's own). Base latency 8.4 us.
  const auto c = nccl_node(8.0, 240, false);
  const double chunk_s = 524288 / 240e9;
  const double expected = 8.4e-6 + 7 * (6e-6 + chunk_s) + 7 * (0.5e-6 + chunk_s);
  auto plan = testing::single_collective_plan(8, OpKind::broadcast, Algorithm::ring, 4 << 20, 1, 0);
  plan.ops[0].request = {Algorithm::ring, Protocol::simple, 1};
  choose_collectives(plan, c);
  check_both_fidelities(plan, c, expected, 0.01);
}

TEST_CASE("LL128 trees stream both ways: the network hop carries whole steps", "[collectives][protocol]") {
  // 2 nodes of 8 (240 GB/s NVLink, 0.5 us; 25 GB/s NICs, 1 us), allreduce of 16 KiB on one tree
  // channel with LL128: 1 KiB pieces (16 KiB / 16), P = 16. NCCL's tree is a chain of 7 NVLink
  // hops in each node and one network hop between the nodes' heads. Inside a node pieces stream:
  // each hop 1.25 us (NVLink tree LL128 hwLat; the route's 0.5 us is less) + 1024 B at the channel's
  // cap (its derivation is checked against NCCL's tuning above), the next piece one cap-time
  // behind. A network hop carries whole steps (net.cc: the proxy sends a step once all its lines
  // are in): here the channel's 16 KiB is one step (a tree LL128 step is at least 30,720 bytes of
  // payload, the next test), so the node head gathers all 16 pieces, sends them as one message
  // (8.5 us NET tree LL128 hwLat + 16 KiB x 128/120 at 25 GB/s). The leaves set the pieces' pace
  // (one cap-time apart) and the node head gathers them at that pace; a step that crossed the
  // network is passed on at the links' rate, not paced again (sim/stream_edge.h). Up: node 1's
  // chain, gather, network; the root sends the step down as it has it; down: network, node 1's
  // chain. Base latency 14 us.
  const auto c = nccl_nodes(2);
  const auto [plan, m] = one_step_tree(c, Protocol::ll128);
  const double piece_s = 1024 / m.channel_cap_Bps;
  const double chain_s = 7 * (1.25e-6 + piece_s), gather_s = 15 * piece_s;
  const double network_s = 8.5e-6 + 16384.0 * 128 / 120 / 25e9;
  const double expected = 14e-6 + 2 * (chain_s + network_s) + gather_s;
  check_both_fidelities(plan, c, expected, 0.01);
}

TEST_CASE("A tree's network step goes on at the links' rate: its cap is paid once, whatever the channels", "[collectives][protocol]") {
  // 4 nodes of 8 (240 GB/s NVLink, 0.5 us; 25 GB/s NICs, 1 us), LL allreduce of 16 KiB on one tree
  // channel: 1 KiB pieces (16 KiB / 16), P = 16, and the channel's 16 KiB is one network step. The
  // tree: a chain of 7 NVLink hops in each node, the nodes' heads a binary tree 2 network hops
  // deep. The leaves send their pieces one cap-time apart, the pace of the whole pipeline, so the
  // deepest node's head has the step 15 cap-times after the first piece; from there the step goes
  // whole: up 2 network hops, down 2, and down the 7 hops of that node's chain, passed on at the
  // links' rate (sim/stream_edge.h). Each NVLink hop 0.6 us (NVLink tree LL hwLat, above the
  // route's 0.5); each network hop 5.0 us (NET tree LL hwLat) and the step's 32 KiB of LL lines at
  // 25 GB/s; down the last chain the step's 32 KiB at 240 GB/s a hop. Base latency 6.8 us. Left
  // out: the first pieces' own transfers and the reductions, well under a microsecond; within 3%.
  const auto c = nccl_nodes(4);
  const auto [plan, m] = one_step_tree(c, Protocol::ll);
  const double network_s = 5.0e-6 + 32768 / 25e9;
  const double expected = 6.8e-6 + 14 * 0.6e-6 + 4 * network_s + 7 * 32768 / 240e9 + 15 * 1024 / m.channel_cap_Bps;
  check_both_fidelities(plan, c, expected, 0.03);
  // LL's cap is one bandwidth the channels share, so 32 channels of 4 KiB at 128 KiB take about
  // what one channel does: the cap is paid once either way. Paced again after every network hop,
  // a step of a channel's whole share cost its time at the channel's 1/32 of the cap at each of
  // the 4 network hops and 3 times more: 32 channels 1.8x slower than one (4 x 8 H100, 2.26.2).
  double one_channel_s = 0;
  for (const int channels : {1, 32}) {
    const auto wide = forced_tree(c, 128 << 10, Protocol::ll, channels).plan;
    const double exact_s = testing::end_of(simulate(wide, c, kExact));
    CHECK(testing::end_of(simulate(wide, c, kScalable)) == Approx(exact_s).epsilon(0.02));
    if (channels == 1) one_channel_s = exact_s;
    else CHECK(exact_s <= 1.02 * one_channel_s);
  }
}

TEST_CASE("A tree's LL128 step is the chunk NCCL sizes for the collective", "[collectives][protocol]") {
  // enqueue.cc (2.18.5, L1361-1369): from LL128's 614,400-byte step (flags included), halve while
  // a channel gets fewer than (1 + log2(nodes) + ppn/10) x 64/ppn chunks and the chunk is above
  // 131,072; then while it gets fewer than that x 16/ppn and is above 32,768. 120 bytes of every
  // 128 are payload. 2 nodes of 8: 2.8 x 8 = 22.4 and 5.6 chunks.
  //   256 KiB, 1 channel: 614,400 -> 307,200 -> 153,600 -> 76,800 (3 chunks) -> 38,400 (6): 36,000
  //   1 MiB, 16 channels: -> 76,800 (0) -> 38,400 (1) -> 19,200: 18,000
  //   16 MiB, 16 channels: -> 76,800 (13 chunks, enough): 72,000
  //   64 MiB, 16 channels: -> 307,200 (13) -> 153,600 (27, enough): 144,000
  // 4 nodes of 8: 3.8 x 8 = 30.4 and 7.6. 64 MiB, 16 channels: -> 153,600 (27) -> 76,800 (54): 72,000.
  // The network carries such steps, and a sender runs NCCL_STEPS (8) of them ahead.
  struct Case {
    int nodes;
    std::int64_t bytes;
    int channels;
    std::int64_t step;
  };
  for (const Case k : {Case{2, 256 << 10, 1, 36000}, Case{2, 1 << 20, 16, 18000}, Case{2, 16 << 20, 16, 72000},
                       Case{2, 64 << 20, 16, 144000}, Case{4, 64 << 20, 16, 72000}}) {
    CAPTURE(k.nodes, k.bytes, k.channels);
    const auto m = forced_tree(nccl_nodes(k.nodes), k.bytes, Protocol::ll128, k.channels).m;
    CHECK(m.stream_net_step_bytes == k.step);
    CHECK(m.stream_window_bytes == 8 * k.step);
  }
}

TEST_CASE("A tree's LL128 network hop pipelines NCCL's steps: both fidelities, every byte once", "[collectives][protocol]") {
  // 2 nodes of 8, 1 MiB on 16 channels: 64 KiB a channel, crossing the network in 18,000-byte
  // steps (above), so the node heads need not gather a channel's whole share before sending.
  // Storing and forwarding the whole share costs at least 2 x (64 KiB at the channel's cap) on
  // top of what streaming needs; the pipelined tree finishes sooner than that bound, both
  // fidelities agree, and each byte still crosses each tree edge once each way.
  const auto c = nccl_nodes(2);
  const auto [plan, m] = forced_tree(c, 1 << 20, Protocol::ll128, 16);
  REQUIRE(m.stream_net_step_bytes == 18000);
  const double share_s = 65536 / m.channel_cap_Bps;
  // The whole-share store and forward: base latency, the chain up and down (7 hops each way of
  // 1.25 us plus a piece), the network both ways (8.5 us + 64 KiB x 128/120 at the
  // NIC's 25 GB/s shared by 16 channels), and gathering the share three times (up at the head,
  // at the root, down at the head's peer).
  const double piece_s = static_cast<double>(m.chunk_bytes) / m.channel_cap_Bps;
  const double net_s = 8.5e-6 + 65536.0 * 128 / 120 / (25e9 / 16);
  const double store_forward_s = 14e-6 + 2 * (7 * (1.25e-6 + piece_s) + net_s) + 3 * share_s;
  const auto exact = simulate(plan, c, kExact);
  const double exact_s = testing::end_of(exact), scalable_s = testing::end_of(simulate(plan, c, kScalable));
  CHECK(exact_s < store_forward_s);
  CHECK(scalable_s == Approx(exact_s).epsilon(0.05));
  // 1 MiB crosses 15 tree edges up and 15 down, in LL128's wire bytes.
  std::int64_t sent = 0;
  for (int r = 0; r < 16; ++r) sent += exact.at(r, 0).bytes_sent;
  CHECK(sent == 2 * 15 * (std::int64_t{1} << 20) * 128 / 120);
}

TEST_CASE("A streamed tree pays its channel's cap once: long LL trees take NCCL's modelled time", "[collectives][protocol]") {
  // A tree's LL channel is capped at its share of NCCL's modelled bandwidth (tuning.cc: the
  // tree's bus bandwidth / 3.8, under llMaxBw), a throughput, not a rate each piece crosses a hop
  // at. Paid once, as the pace of the pieces, a tree of P pieces takes the hops' latencies plus
  // P pieces at the cap, which for P of tens and more is NCCL's own latency + bytes / bandwidth
  // to within the fill: 2 x 7 hops of about a microsecond against a few hundred us. Charging the cap again
  // on each hop's first piece and on each arrival made these trees 31-70% slower than the model.
  for (const bool hopper : {false, true}) {
    const auto c = hopper ? nccl_node(9.0, 360, false) : nccl_node(8.0, 240, false);
    for (const std::int64_t bytes : {std::int64_t{2} << 20, std::int64_t{4} << 20}) {
      CAPTURE(hopper, bytes);
      auto plan = testing::single_allreduce_plan(8, bytes, 1);
      plan.ops[0].request = {Algorithm::tree, Protocol::ll, 0};
      choose_collectives(plan, c);
      REQUIRE(plan.ops[0].protocol == Protocol::ll);
      REQUIRE(mechanics_of(plan.ops[0], c, 8).chunks(bytes / plan.ops[0].channels) >= 16);
      const double model_s = nccl::Tuning(c).time_us(OpKind::allreduce, Algorithm::tree, Protocol::ll, bytes) * 1e-6;
      check_both_fidelities(plan, c, model_s, 0.05);
    }
  }
}

TEST_CASE("A streamed chain over the network: steps leave at the cap's pace, arrive after the hop's latency", "[collectives][protocol]") {
  // 2 nodes of one A100 on 25 GB/s NICs (1 us), LL broadcast of 1 MiB from rank 0 on 2 channels:
  // 512 KiB a channel in pieces of chunk_bytes, sent over the network in steps of
  // stream_net_step_bytes (LL: 2 wire bytes per payload byte). The head holds all its data: it
  // sends its first step at once and each next one when the previous has had its time at the
  // channel's cap (M steps: (M - 1) x step / cap). A step arrives after max(NET LL hop latency,
  // route latency) and its wire bytes on the NIC, which the two channels' steps share (12.5
  // GB/s each); the receiver then takes the step's pieces one cap-time apart: 187.9 us. Holding
  // each arrival to the step's payload at the cap as well, as the engines did before, gave 193.6
  // (exact) and 203.2 us (scalable, whose later steps also shared the NIC with the first).
  const auto c = a100_per_node(2);
  auto plan = testing::single_collective_plan(2, OpKind::broadcast, Algorithm::ring, 1 << 20, 2, 0);
  plan.ops[0].request = {Algorithm::ring, Protocol::ll, 2};
  choose_collectives(plan, c);
  REQUIRE(plan.ops[0].channels == 2);
  const auto m = mechanics_of(plan.ops[0], c, 2);
  REQUIRE(m.stream_net_step_bytes > m.chunk_bytes);
  const double step = static_cast<double>(m.stream_net_step_bytes);
  const double steps = (512.0 * 1024) / step, pieces_per_step = step / static_cast<double>(m.chunk_bytes);
  const double piece_s = static_cast<double>(m.chunk_bytes) / m.channel_cap_Bps;
  const double hop_s = std::max(m.hop_latency(nccl::Hw::net), 1e-6);
  const double expected = m.base_latency_s + (steps - 1) * step / m.channel_cap_Bps + hop_s + 2 * step / 12.5e9 +
                          (pieces_per_step - 1) * piece_s;
  check_both_fidelities(plan, c, expected, 0.01);
}

TEST_CASE("A ring's network hops go through the proxies: a slice waits for the one a step back", "[collectives][protocol]") {
  // 4 nodes of one A100 (1 us NICs), a Simple reduce-scatter ring of 1 KiB on one channel:
  // 3 steps of 2 slices, every hop over the network. The proxies hold the receiver's buffer
  // slots posted and the sender's GPU does not wait for the network (NCCL 2.18.5
  // src/transport/net.cc), so a slice waits only for the slice a step back to arrive: each step
  // costs the NET hop's latency once (14 us, tuning.cc hwLat), the transfers a few ns:
  // base + 3 x 14 us = 50.4 us. Charging the latency on every slice, as both fidelities did,
  // gave base + 6 x 14 us = 92.4 us.
  const auto c = a100_per_node(4);
  auto plan = testing::single_collective_plan(4, OpKind::reduce_scatter, Algorithm::ring, 1024, 1);
  plan.ops[0].request = {Algorithm::ring, Protocol::simple, 1};
  choose_collectives(plan, c);
  REQUIRE(plan.ops[0].channels == 1);
  const auto m = mechanics_of(plan.ops[0], c, 4);
  REQUIRE(m.slices == 2);
  REQUIRE(m.hop_latency(nccl::Hw::net) == Approx(14e-6));
  const double expected = m.base_latency_s + 3 * m.hop_latency(nccl::Hw::net);
  check_both_fidelities(plan, c, expected, 0.01);
}

TEST_CASE("A Simple tree pays its channel's cap once: its first chunk crosses each hop at the links' rate", "[collectives][protocol]") {
  // One DGX A100 (NVLink 240 GB/s a GPU, 0.5 us), a Simple tree allreduce of 64 KiB, NCCL's
  // choice of channels: each channel's 32 KiB is one chunk, climbing the node's chain of 8
  // (7 hops, each reducing it) and coming down again. A hop costs its synchronisation latency
  // and the chunk at the links' rate; the channel's cap (its share of NCCL's tree bandwidth, a
  // throughput) paces later chunks and has none to pace. Charging the cap on every hop, as both
  // fidelities did, made the chunk cross each hop at 3.45 GB/s: 14 x 9.5 us more.
  const auto c = load_cluster(REDSIM_SOURCE_DIR "/configs/dgx-a100.json");
  auto plan = testing::single_collective_plan(8, OpKind::allreduce, Algorithm::tree, 64 << 10, 1);
  plan.ops[0].request = {Algorithm::tree, Protocol::simple, 0};
  choose_collectives(plan, c);
  const auto m = mechanics_of(plan.ops[0], c, 8);
  const double per_channel = static_cast<double>((64 << 10) / plan.ops[0].channels);
  REQUIRE(m.chunks(static_cast<std::int64_t>(per_channel)) == 1);
  REQUIRE(m.channel_cap_Bps > 0);
  const double hop_s = std::max(m.hop_latency(nccl::Hw::nvlink), 0.5e-6) + per_channel / 240e9;
  const double expected = c.launch_us(OpKind::allreduce) * 1e-6 + m.base_latency_s + 14 * hop_s +
                          7 * per_channel * m.reduce_s_per_byte;
  // The cap per hop would have cost at least half as much again.
  REQUIRE(14 * (per_channel / m.channel_cap_Bps) > 0.5 * expected);
  check_both_fidelities(plan, c, expected, 0.03);
}
