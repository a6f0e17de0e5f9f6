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

// DDP with 2 MiB buckets (the first too) and no buffer broadcast.
Knobs two_mib_buckets() {
  Knobs k;
  k.bucket_cap_bytes = 2 * 1024 * 1024;
  k.first_bucket_cap_bytes = 2 * 1024 * 1024;
  k.broadcast_buffers = false;
  return k;
}

int framework_ops(const Plan& plan) {
  int n = 0;
  for (const auto& op : plan.ops) n += op.kind == OpKind::framework ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("framework costs add B x overhead + 4 x bytes / memory bandwidth to a compute-bound step",
          "[strategies][framework]") {
  // 8 layers of 1 MiB fp32 gradients, 2 MiB buckets; a network so fast the collectives hide
  // behind backward and take no time after it.
  auto trace = testing::uniform_trace(8, 262'144, 1e-3, 2e-3, 1e-3);
  auto cluster = testing::ideal_star(2, 1e15, 0);
  const Knobs k = two_mib_buckets();
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
  CHECK(framework_ops(with) == static_cast<int>(buckets.size()) + 1);  // one per bucket, one copy-out

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
  CHECK(framework_ops(plan) == static_cast<int>(buckets.size()));  // only the last micro-batch's buckets
}

namespace {

// The bucket test's platform: 8 layers of 1 MiB fp32 gradients, 2 MiB buckets, a network so fast
// the collectives take no time after backward; fp16 casts (memory_GBps) far slower than plain
// copies (copy_GBps), as calibrate measures a CPU.
struct CopyPlatform {
  ModelTrace trace = testing::uniform_trace(8, 262'144, 1e-3, 2e-3, 1e-3);
  ClusterSpec cluster = testing::ideal_star(2, 1e15, 0);
  Knobs k;
  double bytes = 8.0 * 262'144 * 4;
  CopyPlatform() {
    k.bucket_cap_bytes = 2 * 1024 * 1024;
    k.first_bucket_cap_bytes = 2 * 1024 * 1024;
    k.broadcast_buffers = false;
    cluster.device.memory_GBps = 1;
    cluster.device.copy_GBps = 1000;
  }
  ClusterSpec copying() const {
    auto c = cluster;
    c.framework.bucket_copy = true;
    return c;
  }
};

}  // namespace

TEST_CASE("DDP's bucket copies run at copy_GBps where the cluster measures it", "[strategies][framework]") {
  CopyPlatform p;
  const auto plain = make_strategy("bucketed")->plan(p.trace, p.cluster, p.k);
  const auto with = make_strategy("bucketed")->plan(p.trace, p.copying(), p.k);
  // 4 x the gradients' bytes (in and out, each read and written) at 1000 GB/s, not at the casts' 1.
  for (Fidelity f : {Fidelity::exact, Fidelity::scalable}) {
    INFO((f == Fidelity::exact ? "exact" : "scalable"));
    CHECK(step_s(with, p.copying(), f) - step_s(plain, p.cluster, f) == Approx(4.0 * p.bytes / 1000e9).epsilon(1e-6));
  }
}

TEST_CASE("PostLocalSGD's steps pay DDP's bucket copies, accelerate's per-parameter LocalSGD none",
          "[strategies][framework][localsgd]") {
  CopyPlatform p;
  p.k.localsgd_period = 2;
  const auto buckets = ddp_buckets(p.trace, p.k);
  for (Averaging a : {Averaging::flat, Averaging::bucketed, Averaging::per_param}) {
    p.k.localsgd_averaging = a;
    const auto plain = make_strategy("localsgd")->plan(p.trace, p.cluster, p.k);
    const auto with = make_strategy("localsgd")->plan(p.trace, p.copying(), p.k);
    // Every step (local or averaging) copies each bucket in and all of them out, under DDP;
    // accelerate runs its local steps under no_sync.
    const bool ddp = a != Averaging::per_param;
    CHECK(framework_ops(with) - framework_ops(plain) == (ddp ? 2 * (static_cast<int>(buckets.size()) + 1) : 0));
    const double per_step_s = ddp ? 4.0 * p.bytes / 1000e9 : 0.0;
    for (Fidelity f : {Fidelity::exact, Fidelity::scalable}) {
      INFO((f == Fidelity::exact ? "exact" : "scalable") << " averaging " << static_cast<int>(a));
      CHECK(step_s(with, p.copying(), f) - step_s(plain, p.cluster, f) == Approx(per_step_s).margin(1e-12));
    }
  }
}

TEST_CASE("PeriodicModelAverager's torch.cat over glibc's 32 MiB mmap ceiling runs at fresh_copy_GBps",
          "[strategies][framework][localsgd]") {
  // The cat reads and writes the parameters' bytes (2 x bytes), the division again (2 x bytes at
  // copy_GBps). glibc gives an allocation over 32 MiB (DEFAULT_MMAP_THRESHOLD_MAX on 64-bit,
  // mallopt(3)) fresh pages every time: exactly 32 MiB of parameters reuse memory, one fp32 more
  // faults it in at fresh_copy_GBps.
  auto cluster = testing::ideal_star(4, 1e10, 2e-6);
  cluster.device.copy_GBps = 2;
  Knobs k;
  k.broadcast_buffers = false;
  k.localsgd_period = 2;
  auto flatten_s = [&](std::int64_t per_layer, const ClusterSpec& c) {
    const auto plan = make_strategy("localsgd")->plan(testing::uniform_trace(4, per_layer, 1e-4, 2e-4, 1e-4), c, k);
    const auto& op = plan.ops[plan.ops.back().deps.front()];
    REQUIRE(op.name == "step1:average:flatten");
    return op.duration_s;
  };
  const double at_ceiling_bytes = 4.0 * 2'097'152 * 4, over_bytes = at_ceiling_bytes + 16;
  CHECK(at_ceiling_bytes == 32.0 * 1024 * 1024);
  CHECK(flatten_s(2'097'152, cluster) == Approx(4 * at_ceiling_bytes / 2e9).epsilon(1e-12));
  CHECK(flatten_s(2'097'153, cluster) == Approx(4 * over_bytes / 2e9).epsilon(1e-12));  // not measured: copy_GBps
  auto fresh = cluster;
  fresh.device.fresh_copy_GBps = 0.5;
  CHECK(flatten_s(2'097'152, fresh) == Approx(4 * at_ceiling_bytes / 2e9).epsilon(1e-12));
  CHECK(flatten_s(2'097'153, fresh) == Approx(2 * over_bytes / 0.5e9 + 2 * over_bytes / 2e9).epsilon(1e-12));
  // The step pays it once per H = 2 window, in both fidelities.
  const auto trace = testing::uniform_trace(4, 2'097'153, 1e-4, 2e-4, 1e-4);
  const auto warm_plan = make_strategy("localsgd")->plan(trace, cluster, k);
  const auto fresh_plan = make_strategy("localsgd")->plan(trace, fresh, k);
  for (Fidelity f : {Fidelity::exact, Fidelity::scalable}) {
    INFO((f == Fidelity::exact ? "exact" : "scalable"));
    CHECK((step_s(fresh_plan, fresh, f) - step_s(warm_plan, cluster, f)) * 2 ==
          Approx(2 * over_bytes / 0.5e9 - 2 * over_bytes / 2e9).epsilon(1e-6));
  }
}

TEST_CASE("DDP's copy back out of the buckets costs copy_out_us_per_tensor for every gradient tensor",
          "[strategies][framework]") {
  // 8 real parameters and 4 synthetic ones standing for 10 tensors each (an imported profile's).
  auto trace = testing::uniform_trace(8, 262'144, 1e-3, 2e-3, 1e-3);
  auto cluster = testing::ideal_star(2, 1e15, 0);
  const Knobs k = two_mib_buckets();
  auto costly = cluster;
  costly.framework.copy_out_us_per_tensor = 25;
  const auto plain = make_strategy("bucketed")->plan(trace, cluster, k);
  const auto with = make_strategy("bucketed")->plan(trace, costly, k);
  CHECK(framework_ops(with) == 1);  // the copy-out alone: no per-bucket cost is modelled
  auto standing = trace;
  for (std::size_t i = 0; i < standing.params.size(); i += 2) standing.params[i].tensors = 10;
  const auto synthetic = make_strategy("bucketed")->plan(standing, costly, k);
  for (Fidelity f : {Fidelity::exact, Fidelity::scalable}) {
    INFO((f == Fidelity::exact ? "exact" : "scalable"));
    // After the last allreduce and before the optimizer: 8 tensors, then 4 x 10 + 4 x 1.
    CHECK(step_s(with, costly, f) - step_s(plain, cluster, f) == Approx(8 * 25e-6).epsilon(1e-6));
    CHECK(step_s(synthetic, costly, f) - step_s(plain, cluster, f) == Approx(44 * 25e-6).epsilon(1e-6));
  }
  // With bucket_copy the bytes' time adds to it: 2 x bytes / bandwidth for the copy out.
  costly.framework.bucket_copy = true;
  costly.device.memory_GBps = 1000;
  const auto both = make_strategy("bucketed")->plan(trace, costly, k);
  const double bytes = 8.0 * 262'144 * 4;
  CHECK(step_s(both, costly, Fidelity::exact) - step_s(plain, cluster, Fidelity::exact) ==
        Approx(8 * 25e-6 + 4.0 * bytes / 1000e9).epsilon(1e-6));
}
