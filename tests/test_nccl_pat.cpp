// NCCL's PAT (2.23+; collectives/pat_rounds.h, nccl_tuning.cpp pat_entry): when NCCL's model runs
// it, what it predicts, and what both fidelities charge for it, worked by hand from tuning.cc's
// constants (v2.23.4-1 .. v2.29.7-1).
//
// The cluster: 8 nodes of one A100 (compute capability 8.0), one 25 GB/s NIC each, 1 us a hop.
// NCCL's search gives rings (and trees) of 1 channel at 24 GB/s (the inter-node speeds 48, 30,
// 28, 24: the first a NIC carries), 2 execution channels. With 8 nodes the model reads the
// speed across (24), and one GPU a node takes the tree's network latency for every algorithm
// (2.23: LL 5.0, LL128 8.5, Simple 14 us):
//   ring LL      6.6 + 7 x 5.0  = 41.6 us + S / (min(20.4, 24 / 2) x 8/7 = 13.714 GB/s)
//   ring LL128  14.0 + 7 x 8.5  = 73.5 us + S / (min(0.92 x 24, 1 x 20) x 8/7 = 22.857 GB/s)
//   ring Simple  8.4 + 7 x 14   = 106.4 us + S / (24 x 8/7 = 27.429 GB/s)
//   PAT          8 + 3 x 14 / 3.5 + 8 x 2.8 = 42.4 us + S / (1 x 24 x 0.75 = 18 GB/s; 0.85 = 20.4 in 2.23.4)
// Under 2.26.2: LL = PAT at 0.8 / (1/13.714e3 - 1/18e3) = 46.1 kB; PAT = LL128 at
// 31.1 / (1/18e3 - 1/22.857e3) = 2.63 MB; LL128 = Simple at 32.9 / (1/22.857e3 - 1/27.429e3) = 4.51 MB.
// Under 2.23.4: LL = PAT at 33.5 kB; PAT = Simple at 64 / (1/20.4e3 - 1/27.429e3) = 5.09 MB,
// before LL128 (5.9 MB).
#include <catch2/catch.hpp>

#include "collectives/collective_model.h"
#include "collectives/nccl_tuning.h"
#include "collectives/pat_rounds.h"
#include "core/error.h"
#include "sim/sim_engine.h"
#include "tests/test_support.h"

using namespace redsim;

namespace {

ClusterSpec pat_cluster(int nodes, int version) {
  auto c = testing::ideal_star(nodes, 25e9, 1e-6);
  c.library = CollectiveLibrary::nccl;
  c.device.compute_capability = 8.0;
  c.nccl_version = version;
  return c;
}

nccl::Choice choose(const ClusterSpec& c, OpKind kind, std::int64_t bytes, CollectiveRequest req = {},
                    ReduceOp op = ReduceOp::sum) {
  return nccl::Tuning(c).choose(kind, bytes, DType::fp32, op, req);
}

}  // namespace

TEST_CASE("PAT's model entry: the tree graph at 0.75 (0.85 in 2.23.4), 8 + log2(nodes) x 14 / 3.5 + 2.8 x ranks us",
          "[collectives][pat]") {
  const auto c = pat_cluster(8, 22602);
  const nccl::Tuning t(c);
  REQUIRE(t.topology().tree.channels == 1);
  REQUIRE(t.topology().tree.bw_inter_GBps == Approx(24));
  REQUIRE(t.topology().comm_channels == 2);
  const auto e = t.entry(OpKind::allgather, Algorithm::pat, Protocol::simple);
  CHECK(e.enabled);
  CHECK(e.bw_GBps == Approx(18.0));
  CHECK(e.latency_us == Approx(42.4));
  CHECK(t.time_us(OpKind::reduce_scatter, Algorithm::pat, Protocol::simple, 1 << 20) ==
        Approx(42.4 + 1048576 / 18e3).epsilon(1e-6));
  CHECK(nccl::Tuning(pat_cluster(8, 22304)).entry(OpKind::allgather, Algorithm::pat, Protocol::simple).bw_GBps == Approx(20.4));
  // 16 nodes: one more doubling (4 us) and 8 more ranks (22.4 us).
  CHECK(nccl::Tuning(pat_cluster(16, 22602)).entry(OpKind::allgather, Algorithm::pat, Protocol::simple).latency_us ==
        Approx(8 + 4 * 4.0 + 16 * 2.8));
  // A network plugin's latency enters as the tree's Simple hop does (twice: the flush).
  auto slow = pat_cluster(8, 22602);
  slow.inter.net_plugin_latency_us = 7;
  CHECK(nccl::Tuning(slow).entry(OpKind::allgather, Algorithm::pat, Protocol::simple).latency_us ==
        Approx(8 + 3 * (14 + 2 * 7) / 3.5 + 8 * 2.8));
}

TEST_CASE("NCCL's model moves allgather and reduce-scatter from ring LL to PAT near 46 kB and on near 2.6 MB",
          "[collectives][pat]") {
  const auto c = pat_cluster(8, 22602);
  for (auto kind : {OpKind::allgather, OpKind::reduce_scatter}) {
    CHECK(choose(c, kind, 32 << 10).algorithm == Algorithm::ring);
    CHECK(choose(c, kind, 32 << 10).protocol == Protocol::ll);
    CHECK(choose(c, kind, 64 << 10).algorithm == Algorithm::pat);
    CHECK(choose(c, kind, 64 << 10).protocol == Protocol::simple);
    CHECK(choose(c, kind, 2 << 20).algorithm == Algorithm::pat);
    CHECK(choose(c, kind, 4 << 20).protocol == Protocol::ll128);
    CHECK(choose(c, kind, 8 << 20).protocol == Protocol::simple);
    CHECK(choose(c, kind, 8 << 20).algorithm == Algorithm::ring);
  }
  // PAT runs on every execution channel at any size (NCCL has no PAT entry in maxThreads).
  CHECK(choose(c, OpKind::allgather, 64 << 10).channels == 2);
  CHECK(choose(c, OpKind::allgather, 64 << 10).threads == 640);
  // 2.23.4's larger share keeps PAT to 4 MiB, then Simple.
  const auto old = pat_cluster(8, 22304);
  CHECK(choose(old, OpKind::allgather, 32 << 10).algorithm == Algorithm::ring);
  CHECK(choose(old, OpKind::allgather, 64 << 10).algorithm == Algorithm::pat);
  CHECK(choose(old, OpKind::allgather, 4 << 20).algorithm == Algorithm::pat);
  CHECK(choose(old, OpKind::allgather, 8 << 20).protocol == Protocol::simple);
}

TEST_CASE("PAT only where NCCL enables it, and NCCL_ALGO pins it", "[collectives][pat]") {
  const CollectiveRequest pat{Algorithm::pat, std::nullopt, 0};
  const CollectiveRequest ring{Algorithm::ring, std::nullopt, 0};
  // Before 2.23, on several GPUs a node, for allreduce, with LL, for a reduce-scatter's avg.
  CHECK(choose(pat_cluster(8, 22105), OpKind::allgather, 1 << 20).algorithm == Algorithm::ring);
  CHECK(testing::error_of([&] { choose(pat_cluster(8, 22105), OpKind::allgather, 1 << 20, pat); })
            .find("has no PAT (from 2.23)") != std::string::npos);
  auto dgx = testing::nccl_nodes(2);
  dgx.nccl_version = 22602;
  CHECK(choose(dgx, OpKind::allgather, 64 << 10).algorithm == Algorithm::ring);
  CHECK(testing::error_of([&] { choose(dgx, OpKind::reduce_scatter, 64 << 10, pat); }).find("one GPU a node") !=
        std::string::npos);
  const auto c = pat_cluster(8, 22602);
  // An allreduce has no PAT: from 2.24 NCCL_ALGO=PAT is written for allgather and reduce-scatter
  // alone, leaving it NCCL's own choice (tests/test_nccl_algo_pin.cpp).
  CHECK(choose(c, OpKind::allreduce, 64 << 10, pat).algorithm == choose(c, OpKind::allreduce, 64 << 10).algorithm);
  CHECK_THROWS_AS(choose(c, OpKind::allgather, 64 << 10, {Algorithm::pat, Protocol::ll, 0}), InputError);
  CHECK(choose(c, OpKind::reduce_scatter, 64 << 10, {}, ReduceOp::avg).algorithm == Algorithm::ring);
  CHECK(choose(c, OpKind::allgather, 64 << 10, {}, ReduceOp::avg).algorithm == Algorithm::pat);
  // NCCL_ALGO=Ring keeps allgather off PAT; NCCL_ALGO=PAT puts it on at any size.
  CHECK(choose(c, OpKind::allgather, 64 << 10, ring).algorithm == Algorithm::ring);
  CHECK(choose(c, OpKind::allgather, 1 << 30, pat).algorithm == Algorithm::pat);
  CHECK(parse_algorithm("PAT") == Algorithm::pat);
  CHECK(nccl_algorithm_name(Algorithm::pat) == "PAT");
}

TEST_CASE("PAT's rounds: the allgather far to near (Bruck's dimensions reversed), n - 1 shares each way",
          "[collectives][pat]") {
  // 8 ranks: rank 0 sends its own share 4 away, then 2 shares (its own and 4's) 2 away, then 4
  // shares (0, 2, 4, 6) 1 away; reduce-scatter sends the transpose, near to far.
  const std::vector<std::int64_t> unit(8, 1);
  const auto ag = pat_rounds(OpKind::allgather, unit, 0);
  REQUIRE(ag.size() == 3);
  CHECK((ag[0].send_to == 4 && ag[0].send_bytes == 1 && ag[0].recv_from == 4));
  CHECK((ag[1].send_to == 6 && ag[1].send_bytes == 2 && ag[1].recv_from == 2));
  CHECK((ag[2].send_to == 7 && ag[2].send_bytes == 4 && ag[2].recv_from == 1));
  const auto rs = pat_rounds(OpKind::reduce_scatter, unit, 0);
  CHECK((rs[0].send_to == 1 && rs[0].send_bytes == 4 && rs[2].send_to == 4 && rs[2].send_bytes == 1));
  for (int n : {2, 3, 5, 6, 8, 13}) {
    std::vector<std::int64_t> shares;
    std::int64_t total = 0;
    for (int r = 0; r < n; ++r) shares.push_back(100 + 7 * r), total += 100 + 7 * r;
    for (auto kind : {OpKind::allgather, OpKind::reduce_scatter}) {
      // What r sends in a round is what its peer receives from it in that round.
      std::vector<std::vector<PatRound>> all;
      for (int r = 0; r < n; ++r) all.push_back(pat_rounds(kind, shares, r));
      for (int r = 0; r < n; ++r) {
        CAPTURE(n, r, static_cast<int>(kind));
        const auto& mine = all[static_cast<std::size_t>(r)];
        REQUIRE(static_cast<int>(mine.size()) == pat_round_count(n));
        std::int64_t sent = 0, got = 0;
        for (std::size_t k = 0; k < mine.size(); ++k) {
          const auto& peer = all[static_cast<std::size_t>(mine[k].send_to)][k];
          CHECK(peer.recv_from == r);
          CHECK(peer.recv_bytes == mine[k].send_bytes);
          sent += mine[k].send_bytes, got += mine[k].recv_bytes;
        }
        // Allgather: everyone's share but one's own arrives; reduce-scatter: partial sums of
        // every share but one's own leave.
        CHECK((kind == OpKind::allgather ? got : sent) == total - shares[static_cast<std::size_t>(r)]);
      }
    }
  }
  CHECK(pat_round_count(8) == 3);
  CHECK(pat_round_count(9) == 4);
}

TEST_CASE("PAT on an ideal star at both fidelities: its latency, 3 rounds of the fence, n-1 shares at the cap",
          "[sim][pat]") {
  // 8 MiB on 2 channels: each rank's share is 512 KiB a channel. The engines charge the model's
  // fixed and per-rank latency once (8 + 8 x 2.8 = 30.4 us), each round the model's log term
  // (14 / 3.5 = 4 us) but at least the Simple fence (6 us; the 1 us route is under it), and a
  // channel's transfer at 18 / 2 x 7/8 = 7.875 GB/s (two channels share the 25 GB/s NIC, 12.5
  // each, so the cap binds): 1 + 2 + 4 shares of 512 KiB in the three rounds (distances 4, 2, 1).
  const std::int64_t S = 8LL << 20;
  const double expected = 30.4e-6 + 3 * 6e-6 + 7 * 524288 / 7.875e9;
  for (auto kind : {OpKind::allgather, OpKind::reduce_scatter})
    for (auto fidelity : {Fidelity::exact, Fidelity::scalable}) {
      CAPTURE(static_cast<int>(kind), static_cast<int>(fidelity));
      auto plan = testing::single_collective_plan(8, kind, Algorithm::pat, S, 2);
      plan.ops[0].protocol = Protocol::simple;
      SimOptions o;
      o.fidelity = fidelity;
      const auto tl = simulate(plan, pat_cluster(8, 22602), o);
      CHECK(testing::end_of(tl) == Approx(expected).epsilon(0.01));
      CHECK(testing::sent_by_all(tl) == 7 * S);
    }
  // 6 ranks: rounds of 1, 1 and 3 shares (distances 4, 2, 1), 5/6 of the buffer from each rank.
  auto plan = testing::single_collective_plan(6, OpKind::allgather, Algorithm::pat, 6 << 20, 2);
  plan.ops[0].protocol = Protocol::simple;
  CHECK(testing::sent_by_all(simulate(plan, pat_cluster(6, 22602), SimOptions{})) == 5LL * (6 << 20));
}
