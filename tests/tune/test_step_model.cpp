// The tuner's step model: a max-plus evaluation of a Plan with collective durations learnt from
// simulations. On an ideal platform a ring allreduce costs 2(N-1)a + 2(N-1)/N S/B, affine in S,
// so a model learnt from one simulation predicts other bucket sizes exactly.
#include <catch2/catch.hpp>

#include "core/step_summary.h"
#include "core/units.h"
#include "sim/sim_engine.h"
#include "strategies/strategy.h"
#include "tests/test_support.h"
#include "tune/step_model.h"

using namespace redsim;
using namespace redsim::tune;

namespace {
double simulated_end(const Plan& plan, const ClusterSpec& cluster) {
  return simulate(plan, cluster).last_end_s();
}
}  // namespace

TEST_CASE("a model learnt from one simulation predicts other bucket sizes exactly on an ideal ring",
          "[tune][model]") {
  // 12 parameters of 1 MiB; first bucket 1 MiB, then 3 MiB: buckets of 1, 3, 3, 3 and 2 MiB.
  const auto trace = testing::uniform_trace(12, 1 << 18, 1e-4, 2e-4, 1e-4);
  const auto cluster = testing::ideal_star(4, 1e9, 5e-6);
  Knobs k;
  k.bucket_cap_bytes = 3 * kMiB;
  const auto calib = make_strategy("bucketed")->plan(trace, cluster, k);
  CollectiveCostModel model;
  for (const auto& s : collective_samples(calib, simulate(calib, cluster))) model.add(s);
  model.finish();

  // The learnt curve is the closed form.
  const auto cls = collective_class(calib.ops[calib.ops.size() - 2]);
  for (std::int64_t bytes : {kMiB, 2 * kMiB, 3 * kMiB, 6 * kMiB, 12 * kMiB}) {
    const double closed = 2 * 3 * 5e-6 + 2.0 * 3 / 4 * static_cast<double>(bytes) / 1e9;
    CHECK(model.predict(cls, bytes) == Approx(closed).epsilon(1e-9));
  }
  for (std::int64_t cap : {2 * kMiB, 4 * kMiB, 6 * kMiB, 12 * kMiB}) {
    k.bucket_cap_bytes = cap;
    const auto plan = make_strategy("bucketed")->plan(trace, cluster, k);
    const auto c = compact_plan(plan, 4);
    CHECK(predict_end(c, model) == Approx(simulated_end(plan, cluster)).epsilon(1e-9));
    // The objective scale: one step of 4 samples (batch 1 x 4 ranks).
    CHECK(c.objective_per_end == Approx(1.0));
    // The compute floor: forward + backward + optimizer.
    CHECK(c.compute_floor == Approx(12 * 3e-4 + 1e-4));
  }
}

TEST_CASE("timing keys tell apart exactly the plans that simulate differently", "[tune][model]") {
  const auto trace = testing::uniform_trace(6, 1 << 18, 1e-4, 2e-4, 1e-4);
  const auto cluster = testing::ideal_star(4, 1e9, 5e-6);
  auto key = [&](const Knobs& k) { return timing_key(make_strategy(k.strategy)->plan(trace, cluster, k)); };
  Knobs z;
  z.strategy = "zero";
  z.zero_stage = 1;
  Knobs z2 = z;
  z2.zero_stage = 2;  // memory only
  CHECK(key(z) == key(z2));
  Knobs b;
  Knobs b16 = b, bb16 = b;
  b16.wire_dtype = DType::fp16;
  bb16.wire_dtype = DType::bf16;  // same bytes on the wire
  CHECK(key(b16) == key(bb16));
  CHECK_FALSE(key(b) == key(b16));
  Knobs c2 = b;
  c2.channels = 2;
  CHECK_FALSE(key(b) == key(c2));
  Knobs t = b;
  t.algorithm = Algorithm::tree;
  CHECK_FALSE(key(b) == key(t));
  Knobs big = b, bigger = b;
  big.bucket_cap_bytes = 64 * kMiB;  // both hold the whole 6 MiB model in one bucket
  bigger.bucket_cap_bytes = 128 * kMiB;
  CHECK(key(big) == key(bigger));
}

TEST_CASE("class maps carry a plan's classes to another channel count and algorithm", "[tune][model]") {
  PlanOp ar;
  ar.kind = OpKind::allreduce;
  ar.algorithm = Algorithm::ring;
  ar.channels = 2;
  PlanOp ag = ar;
  ag.kind = OpKind::allgather;
  ClassMap m{2, 8, Algorithm::ring, Algorithm::tree};
  PlanOp ar2 = ar, ag2 = ag;
  ar2.channels = ag2.channels = 8;
  ar2.algorithm = Algorithm::tree;
  ag2.algorithm = Algorithm::tree;  // allgather runs rings whatever the algorithm
  CHECK(m(collective_class(ar)) == collective_class(ar2));
  CHECK(m(collective_class(ag)) == collective_class(ag2));
  CHECK(collective_class(ag2) == collective_class(ag) - 2 + 8);
  CHECK(ClassMap{}(collective_class(ar)) == collective_class(ar));
}

TEST_CASE("the cost model interpolates and extrapolates along its samples", "[tune][model]") {
  CollectiveCostModel m;
  m.add({7, 1000, 1.0});
  m.add({7, 3000, 2.0});
  m.add({7, 3000, 4.0});  // averaged: 3.0
  m.finish();
  CHECK(m.knows(7));
  CHECK_FALSE(m.knows(8));
  CHECK(m.predict(7, 3000) == Approx(3.0));
  CHECK(m.predict(7, 2000) == Approx(2.0));
  CHECK(m.predict(7, 5000) == Approx(5.0));
  CHECK(m.predict(7, 500) == Approx(0.5));
  CHECK(m.predict(8, 500) == 0.0);
}
