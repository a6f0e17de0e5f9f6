// The cluster's framework costs (DDP's per-bucket fixed cost and bucket copies at memory
// bandwidth) change a step by exactly their closed form, identically in both fidelities.
#include <catch2/catch.hpp>

#include "core/step_summary.h"
#include "sim/sim_engine.h"
#include "strategies/ddp_bucketing.h"
#include "strategies/strategy.h"
#include "tests/test_support.h"

using namespace redsim;

namespace {

double step_s(const Plan& plan, const ClusterSpec& c, Fidelity f) {
  return summarize(plan, simulate(plan, c, SimOptions{false, f})).step_time_s;
}

}  // namespace

TEST_CASE("framework costs add B x overhead + 4 x bytes / memory bandwidth to a compute-bound step",
          "[strategies][framework]") {
  // 8 layers of 1 MiB fp32 gradients, 2 MiB buckets; a network so fast the collectives hide
  // behind backward and take no time after it.
  auto trace = testing::uniform_trace(8, 262'144, 1e-3, 2e-3, 1e-3);
  auto cluster = testing::ideal_star(2, 1e15, 0);
  Knobs k;
  k.bucket_cap_bytes = 2 * 1024 * 1024;
  k.first_bucket_cap_bytes = 2 * 1024 * 1024;
  k.broadcast_buffers = false;
  const auto buckets = ddp_buckets(trace, k);
  const double B = static_cast<double>(buckets.size());
  double bytes = 0;
  for (const auto& b : buckets) bytes += static_cast<double>(b.bytes);
  REQUIRE(bytes == 8.0 * 262'144 * 4);

  const auto plain = make_strategy("bucketed")->plan(trace, cluster, k);
  auto costly = cluster;
  costly.framework.bucket_overhead_us = 50;
  costly.framework.bucket_copy = true;
  costly.device.memory_GBps = 1000;
  const auto with = make_strategy("bucketed")->plan(trace, costly, k);
  int framework_ops = 0;
  for (const auto& op : with.ops) framework_ops += op.kind == OpKind::framework ? 1 : 0;
  CHECK(framework_ops == static_cast<int>(buckets.size()) + 1);  // one per bucket, one copy-out

  // Copy in: read the gradients and write the bucket; copy out: read the bucket, write the gradients.
  const double expected_s = B * 50e-6 + 4.0 * bytes / 1000e9;
  for (Fidelity f : {Fidelity::exact, Fidelity::scalable}) {
    INFO((f == Fidelity::exact ? "exact" : "scalable"));
    CHECK(step_s(with, costly, f) - step_s(plain, cluster, f) == Approx(expected_s).epsilon(1e-6));
  }
}

TEST_CASE("no_sync micro-batches pay no bucket costs", "[strategies][framework][accumulate]") {
  auto trace = testing::uniform_trace(4, 262'144, 1e-3, 2e-3, 1e-3);
  auto cluster = testing::ideal_star(2, 1e15, 0);
  cluster.framework.bucket_overhead_us = 10;
  Knobs k;
  k.microbatches = 4;
  k.broadcast_buffers = false;
  const auto plan = make_strategy("accumulate")->plan(trace, cluster, k);
  const auto buckets = ddp_buckets(trace, k);
  int framework_ops = 0;
  for (const auto& op : plan.ops) framework_ops += op.kind == OpKind::framework ? 1 : 0;
  CHECK(framework_ops == static_cast<int>(buckets.size()));  // only the last micro-batch's buckets
}
