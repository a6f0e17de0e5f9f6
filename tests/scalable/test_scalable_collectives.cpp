// The scalable fidelity against the closed-form alpha-beta costs of every collective algorithm,
// on ideal platforms (the same formulas tests/test_collectives.cpp holds the exact fidelity
// to), including worlds large enough that the cluster is folded onto one period, and byte counts
// per rank that must equal the exact fidelity's rank by rank.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/pipeline.h"
#include "sim/sim_engine.h"
#include "tests/test_support.h"

using namespace redsim;
using testing::end_of;
using testing::sent_by_all;

namespace {
const double B = 1e10;      // 10 GB/s per direction
const double alpha = 4e-6;  // one-way latency per route

const SimOptions kScalable{false, Fidelity::scalable};
}  // namespace

TEST_CASE("scalable ring allreduce matches 2(N-1)a + 2(N-1)/N S/B, folded or not", "[scalable][ring]") {
  const std::int64_t S = 64LL * 1024 * 1024;
  // Up to 1,024 single-device nodes on a star: the fold simulates one node's links.
  for (int n : {2, 8, 64, 1024}) {
    for (int channels : {1, 2}) {
      CAPTURE(n, channels);
      auto tl = simulate(testing::single_allreduce_plan(n, S, channels), testing::ideal_star(n, B, alpha), kScalable);
      const double expected = 2.0 * (n - 1) * alpha + 2.0 * (n - 1) / n * static_cast<double>(S) / B;
      CHECK(end_of(tl) == Approx(expected).epsilon(0.001));
      CHECK(sent_by_all(tl) == 2LL * (n - 1) * S);
    }
  }
}

TEST_CASE("scalable reduce-scatter and allgather cost (N-1)a + (N-1)/N S/B", "[scalable][ring]") {
  const std::int64_t S = 64LL * 1024 * 1024;
  for (auto kind : {OpKind::reduce_scatter, OpKind::allgather}) {
    for (int n : {2, 16, 128}) {
      CAPTURE(op_kind_name(kind), n);
      auto tl = simulate(testing::single_collective_plan(n, kind, Algorithm::ring, S, 1), testing::ideal_star(n, B, alpha),
                         kScalable);
      CHECK(end_of(tl) == Approx((n - 1) * alpha + (n - 1.0) / n * S / B).epsilon(0.001));
      CHECK(sent_by_all(tl) == (n - 1) * S);
    }
  }
}

TEST_CASE("scalable uneven reduce-scatter: every step costs the largest chunk in flight", "[scalable][ring]") {
  auto plan = testing::single_collective_plan(4, OpKind::reduce_scatter, Algorithm::ring, 30'000'000, 1);
  plan.ops[0].shard_bytes = {0, 20'000'000, 10'000'000, 0};
  auto tl = simulate(plan, testing::ideal_star(4, B, alpha), kScalable);
  CHECK(end_of(tl) == Approx(3 * (alpha + 20e6 / B)).epsilon(0.001));
  CHECK(sent_by_all(tl) == 3 * 30'000'000);
}

TEST_CASE("scalable uneven shards on a folded cluster: the ring follows its largest chunk", "[scalable][ring]") {
  // 16 nodes of 4 devices (NVSwitch 40 GB/s, 2 us inside; 5 GB/s NICs, 6 us between), two
  // owners of 10 MB at ranks 9 and 10. A ring step waits only for its neighbours, so the ring
  // lasts as long as its heaviest path through the steps; the scalable fidelity takes the path
  // that follows the largest chunk (the first, at ring position 10): of its 63 steps, the 16
  // with k = 1 mod 4 cross a node boundary. The fold simulates one node and must count the same.
  const double Bi = 4e10, ai = 2e-6, Be = 5e9, ae = 6e-6;
  auto cluster = testing::ideal_multi_node(16, 4, Bi, ai, Be, ae);
  const int n = 64;
  auto plan = testing::single_collective_plan(n, OpKind::reduce_scatter, Algorithm::ring, 20'000'000, 1);
  plan.ops[0].shard_bytes.assign(n, 0);
  plan.ops[0].shard_bytes[9] = 10'000'000;
  plan.ops[0].shard_bytes[10] = 10'000'000;
  const double follow = 16 * (ae + 10e6 / Be) + 47 * (ai + 10e6 / Bi);
  auto scal = simulate(plan, cluster, kScalable);
  CHECK(end_of(scal) == Approx(follow).epsilon(0.001));
  // The exact fidelity's heaviest path also picks up some of the second chunk's slow steps: the
  // path is a lower bound, here within 5% (sim/README.md, where scalable departs from exact).
  auto exact = simulate(plan, cluster);
  CHECK(end_of(exact) >= follow * 0.999);
  CHECK(end_of(exact) <= follow * 1.05);
  CHECK(sent_by_all(scal) == sent_by_all(exact));
}

TEST_CASE("scalable chains: (N+P-2)(a + S/(PB)) for reduce and broadcast", "[scalable][chain]") {
  const std::int64_t S = 16 * kPipelineChunkBytes;  // P = 16
  for (auto kind : {OpKind::reduce, OpKind::broadcast}) {
    for (int n : {2, 8, 32, 256}) {
      for (int root : {0, n - 1}) {
        CAPTURE(op_kind_name(kind), n, root);
        auto tl = simulate(testing::single_collective_plan(n, kind, Algorithm::ring, S, 1, root),
                           testing::ideal_star(n, B, alpha), kScalable);
        const int P = 16;
        CHECK(end_of(tl) == Approx((n + P - 2) * (alpha + static_cast<double>(S) / (P * B))).epsilon(0.001));
        CHECK(sent_by_all(tl) == (n - 1) * S);
      }
    }
  }
}

TEST_CASE("scalable chain: each rank ends once it has passed the last chunk on", "[scalable][chain]") {
  // Broadcast from rank 0 along 8 ranks with one chunk: rank i has it after i hops.
  const int n = 8;
  const std::int64_t S = 1000;
  auto tl = simulate(testing::single_collective_plan(n, OpKind::broadcast, Algorithm::ring, S, 1, 0),
                     testing::ideal_star(n, B, alpha), kScalable);
  const double hop = alpha + S / B;
  for (int r = 0; r < n; ++r) {
    CAPTURE(r);
    // The head and every middle rank finish when they have forwarded; the tail when it received.
    CHECK(tl.at(r, 0).end_s == Approx(std::min(r + 1, n - 1) * hop).epsilon(1e-6));
  }
}

TEST_CASE("scalable tree allreduce: 2 log2(N) latency terms, and 2D(a + 2S/B) on a full tree", "[scalable][tree]") {
  for (int n : {2, 8, 64}) {
    for (int channels : {1, 2}) {
      CAPTURE(n, channels);
      auto tl = simulate(testing::single_collective_plan(n, OpKind::allreduce, Algorithm::tree, 8 * channels, channels),
                         testing::ideal_star(n, B, alpha), kScalable);
      CHECK(end_of(tl) == Approx(2 * std::log2(n) * alpha).epsilon(0.01));
    }
  }
  const std::int64_t S = kPipelineChunkBytes;
  for (int depth : {1, 2, 3}) {
    const int n = (1 << (depth + 1)) - 1;
    CAPTURE(n);
    auto tl = simulate(testing::single_collective_plan(n, OpKind::allreduce, Algorithm::tree, S, 1),
                       testing::ideal_star(n, B, alpha), kScalable);
    CHECK(end_of(tl) == Approx(2 * depth * (alpha + 2.0 * S / B)).epsilon(0.01));
    CHECK(sent_by_all(tl) == 2 * static_cast<std::int64_t>(n - 1) * S);
  }
}

TEST_CASE("scalable tree allreduce pipelines its ways up and down at once", "[scalable][tree]") {
  // 15 ranks on a star (depth 3), 32 chunks of c. The first chunk climbs 3 levels (a + 2c/B:
  // two children share a parent's link), the other 31 move up and down together, a round
  // limited by an inner node's link carrying one chunk to its parent and one to each child
  // (a + 3c/B), and the last chunk descends 3 levels (a + 2c/B).
  const int n = 15, P = 32, D = 3;
  const double c = static_cast<double>(kPipelineChunkBytes);
  auto tl = simulate(testing::single_collective_plan(n, OpKind::allreduce, Algorithm::tree, P * kPipelineChunkBytes, 1),
                     testing::ideal_star(n, B, alpha), kScalable);
  CHECK(end_of(tl) == Approx(2 * D * (alpha + 2 * c / B) + (P - 1) * (alpha + 3 * c / B)).epsilon(0.01));
}

TEST_CASE("scalable hierarchical allreduce costs the sum of its three phases", "[scalable][hierarchical]") {
  const double Bi = 4e10, ai = 2e-6, Be = 5e9, ae = 6e-6;
  const std::int64_t S = 96'000'000;
  for (auto [nodes, dpn] : {std::pair{2, 4}, std::pair{4, 2}, std::pair{4, 8}, std::pair{64, 8}}) {
    for (int channels : {1, 2}) {
      CAPTURE(nodes, dpn, channels);
      auto tl = simulate(testing::single_collective_plan(nodes * dpn, OpKind::allreduce, Algorithm::hierarchical, S, channels),
                         testing::ideal_multi_node(nodes, dpn, Bi, ai, Be, ae), kScalable);
      const double intra = (dpn - 1) * (ai + static_cast<double>(S) / dpn / Bi);
      const double inter = 2.0 * (nodes - 1) * (ae + static_cast<double>(S) / dpn / nodes / Be);
      CHECK(end_of(tl) == Approx(2 * intra + inter).epsilon(0.001));
    }
  }
}

TEST_CASE("scalable: reduction time and launch overhead are charged as in exact", "[scalable]") {
  const int n = 8;
  const std::int64_t S = 80'000'000;
  auto cluster = testing::ideal_star(n, B, alpha);
  cluster.device.reduce_GBps = 20;
  cluster.collective_launch_us = 20;
  auto tl = simulate(testing::single_allreduce_plan(n, S, 1), cluster, kScalable);
  const double expected =
      20e-6 + 2 * (n - 1) * (alpha + static_cast<double>(S) / n / B) + (n - 1) * (S / n) / 20e9;
  CHECK(end_of(tl) == Approx(expected).epsilon(0.001));
}

TEST_CASE("scalable: oversubscribed fat-tree uplinks slow a cross-leaf ring", "[scalable][fat-tree]") {
  // 64 nodes, 2 per leaf, 4:1: the uplink has 2B/4 = B/2, so every ring step runs at B/2; the
  // fold simulates one leaf of 2 nodes.
  auto cluster = testing::ideal_star(64, B, 1e-6);
  cluster.inter.topology = InterTopology::fat_tree;
  cluster.inter.nodes_per_leaf = 2;
  cluster.inter.oversubscription = 4.0;
  const std::int64_t S = 400'000'000;
  auto tl = simulate(testing::single_allreduce_plan(64, S, 1), cluster, kScalable);
  CHECK(end_of(tl) == Approx(2.0 * 63 * 1e-6 + 2.0 * 63 / 64 * static_cast<double>(S) / (B / 2)).epsilon(0.001));
}

TEST_CASE("scalable: bytes each rank sends and receives equal the exact fidelity's", "[scalable][conservation]") {
  // Every collective kind and algorithm, sizes that do not divide evenly, uneven shards.
  auto cluster = testing::ideal_multi_node(4, 4, 4e10, 2e-6, 5e9, 6e-6);
  const int n = 16;
  struct Case {
    OpKind kind;
    Algorithm algorithm;
    int root;
  };
  for (auto c : {Case{OpKind::allreduce, Algorithm::ring, -1}, Case{OpKind::allreduce, Algorithm::tree, -1},
                 Case{OpKind::allreduce, Algorithm::hierarchical, -1}, Case{OpKind::reduce_scatter, Algorithm::ring, -1},
                 Case{OpKind::allgather, Algorithm::ring, -1}, Case{OpKind::reduce, Algorithm::ring, 5},
                 Case{OpKind::broadcast, Algorithm::ring, 11}}) {
    for (int channels : {1, 3}) {
      CAPTURE(op_kind_name(c.kind), algorithm_name(c.algorithm), channels);
      auto plan = testing::single_collective_plan(n, c.kind, c.algorithm, 3'333'337, channels, c.root);
      if (c.kind == OpKind::reduce_scatter) {
        plan.ops[0].shard_bytes.assign(n, 0);
        plan.ops[0].shard_bytes[3] = 3'000'000;
        plan.ops[0].shard_bytes[4] = 333'337;
      }
      auto exact = simulate(plan, cluster);
      auto scal = simulate(plan, cluster, kScalable);
      for (int r = 0; r < n; ++r) {
        CAPTURE(r);
        CHECK(scal.at(r, 0).bytes_sent == exact.at(r, 0).bytes_sent);
        CHECK(scal.at(r, 0).bytes_received == exact.at(r, 0).bytes_received);
      }
    }
  }
}
