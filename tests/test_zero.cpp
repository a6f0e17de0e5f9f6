// ZeRO (reduce-to-owner): shards, per-rank memory, and the cost of reducing to owners.
#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "core/step_summary.h"
#include "core/pipeline.h"
#include "sim/sim_engine.h"
#include "strategies/memory_model.h"
#include "strategies/strategy.h"
#include "strategies/zero_partition.h"
#include "tests/test_support.h"

using namespace redsim;

TEST_CASE("ZeRO partitions are contiguous, byte-balanced and on element boundaries", "[strategies][zero]") {
  auto t = testing::uniform_trace(5, 1001, 0, 0, 0);  // 5 x 4004 bytes = 20,020 bytes
  auto part = partition_parameters(t, 3);
  REQUIRE(part.bounds.size() == 4);
  CHECK(part.total_bytes == 20'020);
  for (int r = 0; r < 3; ++r) {
    CHECK(part.bounds[static_cast<std::size_t>(r)] % 4 == 0);
    // Within one element of an exact third.
    CHECK(std::abs(part.bounds[static_cast<std::size_t>(r) + 1] - part.bounds[static_cast<std::size_t>(r)] - 20'020 / 3) <= 4);
  }
}

TEST_CASE("every rank receives exactly its shard in the reduce phase and the rest in the allgather", "[strategies][zero]") {
  const int n = 4;
  auto trace = testing::uniform_trace(6, 300'000, 1e-4, 2e-4, 1e-4);  // 1.2 MB per layer
  auto cluster = testing::ideal_star(n, 1e10, 2e-6);
  Knobs k;
  k.strategy = "zero";
  k.bucket_cap_bytes = 2'500'000;  // two layers per bucket, so some buckets span owners
  k.allgather_bucket_bytes = 3'000'000;
  auto plan = make_strategy("zero")->plan(trace, cluster, k);
  // Byte-balanced owner ranges of the 6 x 1.2 MB of fp32 gradients: 7.2 MB in 4 equal shards of
  // 1.8 MB, each on an element boundary already.
  const std::int64_t total = 6 * 300'000 * 4, shard = total / n;

  std::vector<std::int64_t> reduced_into(n, 0), gathered(n, 0);
  std::map<int, std::set<int>> roots_of_bucket;
  for (const auto& op : plan.ops) {
    if (op.kind == OpKind::reduce) {
      reduced_into[static_cast<std::size_t>(op.root)] += op.bytes;
      roots_of_bucket[op.bucket].insert(op.root);
    }
    if (op.kind == OpKind::allgather)
      for (int r = 0; r < n; ++r) gathered[static_cast<std::size_t>(r)] += op.shard_bytes[static_cast<std::size_t>(r)];
  }
  // Some bucket spans two owners and is reduced to each of them (DeepSpeed's reduce_scatter).
  bool spans = false;
  for (const auto& [bucket, roots] : roots_of_bucket) spans = spans || roots.size() > 1;
  CHECK(spans);
  for (int r = 0; r < n; ++r) {
    CHECK(reduced_into[static_cast<std::size_t>(r)] == shard);
    CHECK(gathered[static_cast<std::size_t>(r)] == shard);
  }
  // In the simulated allgathers each rank receives everything but its own shard.
  auto tl = simulate(plan, cluster);
  for (int r = 0; r < n; ++r) {
    std::int64_t got = 0;
    for (const auto& op : plan.ops)
      if (op.kind == OpKind::allgather) got += tl.at(r, op.id).bytes_received;
    CHECK(got == total - shard);
  }
}

TEST_CASE("per-rank memory follows the ZeRO paper for stages 1 and 2", "[strategies][zero][memory]") {
  // Psi = 8,000,000 bf16 parameters on N = 8 ranks: 2 Psi + 2 Psi + 12 Psi without ZeRO.
  const std::int64_t psi = 8'000'000;
  auto trace = testing::uniform_trace(8, psi / 8, 0, 0, 0);
  for (auto& p : trace.params) p.dtype = DType::bf16;
  const int n = 8;
  auto none = model_state_memory(trace, n, 0, 0);
  CHECK(none.params_bytes == 2 * psi);
  CHECK(none.grads_bytes == 2 * psi);
  CHECK(none.optimizer_bytes == 12 * psi);
  auto s1 = model_state_memory(trace, n, 1, 0);
  CHECK(s1.params_bytes == 2 * psi);
  CHECK(s1.grads_bytes == 2 * psi);
  CHECK(s1.optimizer_bytes == 12 * psi / n);
  auto s2 = model_state_memory(trace, n, 2, 0);
  CHECK(s2.grads_bytes == 2 * psi / n);
  CHECK(s2.optimizer_bytes == 12 * psi / n);
  // fp32 parameters need no master copy: 4 + 4 + 8 bytes per parameter.
  auto fp32 = model_state_memory(testing::uniform_trace(8, psi / 8, 0, 0, 0), n, 0, 0);
  CHECK(fp32.total_bytes() == 16 * psi);

  Knobs k;
  k.zero_stage = 1;
  auto plan = make_strategy("zero")->plan(trace, testing::ideal_star(n, 1e10, 1e-6), k);
  CHECK(plan.memory.optimizer_bytes == 12 * psi / n);
  CHECK(plan.memory.grads_bytes == 2 * psi);
}

TEST_CASE("with overlap off, reduce-to-owner costs what N reduces cost", "[strategies][zero]") {
  // N layers of equal size on N ranks: each layer is exactly one rank's shard, each bucket one
  // layer, so the plan is N reduces, each to a different owner, all after backward.
  const int n = 4;
  const std::int64_t numel = 4 * 1024 * 1024;  // 16 MiB per layer: 32 pipeline chunks
  const double B = 1e10, alpha = 3e-6, bwd = 1e-3;
  auto trace = testing::uniform_trace(n, numel, 0, bwd, 0);
  auto cluster = testing::ideal_star(n, B, alpha);
  Knobs k;
  k.overlap_comm = false;
  k.bucket_cap_bytes = numel * 4;
  k.allgather_bucket_bytes = numel * 4;
  auto plan = make_strategy("zero")->plan(trace, cluster, k);
  int reduces = 0;
  for (const auto& op : plan.ops) reduces += op.kind == OpKind::reduce ? 1 : 0;
  REQUIRE(reduces == n);
  auto s = summarize(plan, simulate(plan, cluster));
  double reduce_end = 0;
  for (const auto& c : s.collectives)
    if (plan.ops[c.op].kind == OpKind::reduce) reduce_end = std::max(reduce_end, c.end_s);
  const double S = numel * 4.0;
  const int P = static_cast<int>(S / kPipelineChunkBytes);
  const double one_reduce = (n + P - 2) * (alpha + S / P / B);
  CHECK(reduce_end == Approx(n * bwd + n * one_reduce).epsilon(0.01));
}
