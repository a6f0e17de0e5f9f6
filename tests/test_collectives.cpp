// Every simulated collective algorithm against its closed-form alpha-beta cost on an ideal
// platform (no contention beyond what the formula states), and its byte volume.
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
}  // namespace

TEST_CASE("ring reduce-scatter and allgather cost (N-1)a + (N-1)/N S/B", "[sim][collectives]") {
  const std::int64_t S = 64LL * 1024 * 1024;
  for (auto kind : {OpKind::reduce_scatter, OpKind::allgather}) {
    for (int n : {2, 8, 16}) {
      for (int channels : {1, 2}) {
        CAPTURE(op_kind_name(kind), n, channels);
        auto tl = simulate(testing::single_collective_plan(n, kind, Algorithm::ring, S, channels),
                           testing::ideal_star(n, B, alpha));
        CHECK(end_of(tl) == Approx((n - 1) * alpha + (n - 1.0) / n * S / B).epsilon(0.01));
        // Every shard crosses N-1 links.
        CHECK(sent_by_all(tl) == (n - 1) * S);
      }
    }
  }
}

TEST_CASE("uneven reduce-scatter shards: the largest shard sets the pace", "[sim][collectives]") {
  // 4 ranks, only ranks 1 and 2 own data (a ZeRO bucket spanning two owners).
  auto plan = testing::single_collective_plan(4, OpKind::reduce_scatter, Algorithm::ring, 30'000'000, 1);
  plan.ops[0].shard_bytes = {0, 20'000'000, 10'000'000, 0};
  auto tl = simulate(plan, testing::ideal_star(4, B, alpha));
  // Each shard travels N-1 hops and the ring moves one chunk per step in lockstep, so each of
  // the 3 steps costs the largest chunk in flight: 20 MB.
  CHECK(end_of(tl) == Approx(3 * (alpha + 20e6 / B)).epsilon(0.01));
  CHECK(sent_by_all(tl) == 3 * 30'000'000);
}

TEST_CASE("ring reduce and broadcast are pipelined chains: (N+P-2)(a + S/(PB))", "[sim][collectives]") {
  const std::int64_t S = 16 * kPipelineChunkBytes;  // P = 16 chunks per channel with one channel
  for (auto kind : {OpKind::reduce, OpKind::broadcast}) {
    for (int n : {2, 8, 32}) {
      for (int root : {0, n - 1}) {
        CAPTURE(op_kind_name(kind), n, root);
        auto tl = simulate(testing::single_collective_plan(n, kind, Algorithm::ring, S, 1, root),
                           testing::ideal_star(n, B, alpha));
        const int P = 16;
        CHECK(end_of(tl) == Approx((n + P - 2) * (alpha + static_cast<double>(S) / (P * B))).epsilon(0.01));
        CHECK(sent_by_all(tl) == (n - 1) * S);  // every byte crosses N-1 links
      }
    }
  }
}

TEST_CASE("tree allreduce pays 2 log2(N) latency terms", "[sim][collectives][tree]") {
  for (int n : {2, 8, 64}) {
    for (int channels : {1, 2}) {
      CAPTURE(n, channels);
      // 8 bytes: latency-bound (the bandwidth terms are below 0.01% of the latency).
      auto tl = simulate(testing::single_collective_plan(n, OpKind::allreduce, Algorithm::tree, 8 * channels, channels),
                         testing::ideal_star(n, B, alpha));
      CHECK(end_of(tl) == Approx(2 * std::log2(n) * alpha).epsilon(0.01));
    }
  }
}

TEST_CASE("tree allreduce on a full binary tree: 2D(a + 2S/B)", "[sim][collectives][tree]") {
  const std::int64_t S = kPipelineChunkBytes;  // one chunk
  for (int depth : {1, 2, 3}) {
    const int n = (1 << (depth + 1)) - 1;  // 3, 7, 15 ranks
    CAPTURE(n);
    auto tl = simulate(testing::single_collective_plan(n, OpKind::allreduce, Algorithm::tree, S, 1),
                       testing::ideal_star(n, B, alpha));
    // Two children share a parent's link going up; a parent feeds two children coming down.
    CHECK(end_of(tl) == Approx(2 * depth * (alpha + 2.0 * S / B)).epsilon(0.01));
    // Every rank but the root sends S up; every inner node sends S to each child.
    CHECK(sent_by_all(tl) == 2 * static_cast<std::int64_t>(n - 1) * S);
  }
}

TEST_CASE("tree allreduce pipelines its ways up and down at once", "[sim][collectives][tree]") {
  // As NCCL's TreeUpDown: 15 ranks on a star (depth 3), 32 chunks of c. The first chunk climbs
  // 3 levels (a + 2c/B: two children share a parent's link), the other 31 move up and down
  // together, a round limited by an inner node's link carrying one chunk to its parent and one
  // to each child (a + 3c/B), and the last chunk descends 3 levels (a + 2c/B).
  const int n = 15, P = 32, D = 3;
  const double c = static_cast<double>(kPipelineChunkBytes);
  auto tl = simulate(testing::single_collective_plan(n, OpKind::allreduce, Algorithm::tree, P * kPipelineChunkBytes, 1),
                     testing::ideal_star(n, B, alpha));
  CHECK(end_of(tl) == Approx(2 * D * (alpha + 2 * c / B) + (P - 1) * (alpha + 3 * c / B)).epsilon(0.01));
}

TEST_CASE("hierarchical allreduce costs the sum of its three phases", "[sim][collectives][hierarchical]") {
  const double Bi = 4e10, ai = 2e-6, Be = 5e9, ae = 6e-6;
  const std::int64_t S = 96'000'000;
  for (auto [nodes, dpn] : {std::pair{2, 4}, std::pair{4, 2}, std::pair{4, 8}}) {
    for (int channels : {1, 2}) {
      CAPTURE(nodes, dpn, channels);
      auto tl = simulate(testing::single_collective_plan(nodes * dpn, OpKind::allreduce, Algorithm::hierarchical, S, channels),
                         testing::ideal_multi_node(nodes, dpn, Bi, ai, Be, ae));
      const double intra = (dpn - 1) * (ai + static_cast<double>(S) / dpn / Bi);
      const double inter = 2.0 * (nodes - 1) * (ae + static_cast<double>(S) / dpn / nodes / Be);
      CHECK(end_of(tl) == Approx(2 * intra + inter).epsilon(0.01));
    }
  }
}

TEST_CASE("an element type's own reduce throughput replaces the device's, at both fidelities", "[sim][collectives]") {
  // Gloo sums fp16 element by element in software: an fp16 ring allreduce reduces its (N-1) S/N
  // incoming bytes at the fp16 rate, an fp32 one at reduce_GBps.
  const int n = 4;
  const std::int64_t S = 40'000'000;
  auto cluster = testing::ideal_star(n, B, alpha);
  cluster.device.reduce_GBps = 20;
  cluster.device.reduce_GBps_by_dtype[DType::fp16] = 0.5;
  const double wire = 2 * (n - 1) * (alpha + static_cast<double>(S) / n / B);
  for (auto fidelity : {Fidelity::exact, Fidelity::scalable}) {
    CAPTURE(static_cast<int>(fidelity));
    const SimOptions opts{false, fidelity};
    auto plan = testing::single_allreduce_plan(n, S, 1);
    plan.ops[0].dtype = DType::fp16;
    CHECK(end_of(simulate(plan, cluster, opts)) == Approx(wire + (n - 1) * (S / n) / 0.5e9).epsilon(0.001));
    plan.ops[0].dtype = DType::fp32;
    CHECK(end_of(simulate(plan, cluster, opts)) == Approx(wire + (n - 1) * (S / n) / 20e9).epsilon(0.001));
  }
}

TEST_CASE("reduction arithmetic is charged at the device's reduce throughput", "[sim][collectives]") {
  const int n = 8;
  const std::int64_t S = 80'000'000;
  auto cluster = testing::ideal_star(n, B, alpha);
  cluster.device.reduce_GBps = 20;  // 20 GB/s
  auto tl = simulate(testing::single_allreduce_plan(n, S, 1), cluster);
  // Ring allreduce reduces one chunk per reduce-scatter step: (N-1) * (S/N) / R in all.
  const double expected = 2 * (n - 1) * (alpha + static_cast<double>(S) / n / B) + (n - 1) * (S / n) / 20e9;
  CHECK(end_of(tl) == Approx(expected).epsilon(0.01));
}
