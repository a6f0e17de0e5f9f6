// validate's arithmetic: step error against the measured median, op errors as step fractions.
#include <catch2/catch.hpp>

#include "validate/ranking_check.h"
#include "validate/run_comparison.h"

using namespace redsim;

namespace {
Plan two_op_plan() {
  Plan p;
  p.world_size = 2;
  p.samples_per_step = 2;
  auto compute = p.stream_index("compute");
  auto comm = p.stream_index("comm0");
  PlanOp a;
  a.kind = OpKind::backward;
  a.stream = compute;
  p.add(a);
  PlanOp c;
  c.kind = OpKind::allreduce;
  c.stream = comm;
  c.bytes = 100;
  p.add(c);
  return p;
}
Timeline timeline(double comp_end, double comm_start, double comm_end) {
  Timeline t("x", 2, 2);
  for (int r = 0; r < 2; ++r) {
    t.mutable_at(r, 0) = {0, 0, comp_end, 0, 0};
    t.mutable_at(r, 1) = {comm_start, comm_start, comm_end, 0, 0};
  }
  return t;
}
}  // namespace

TEST_CASE("median of even and odd counts", "[core][compare]") {
  CHECK(median_of({3, 1, 2}) == 2);
  CHECK(median_of({4, 1, 3, 2}) == 2.5);
}

TEST_CASE("step error is relative to the measured median", "[core][compare]") {
  auto plan = two_op_plan();
  auto predicted = timeline(1.0, 1.0, 2.2);  // step 2.2 s
  auto c = compare_runs(plan, predicted, {2.0, 1.9, 2.1, 2.5}, nullptr);
  CHECK(c.measured_step_median_s == Approx(2.05));
  CHECK(c.measured_step_min_s == 1.9);
  CHECK(c.measured_step_max_s == 2.5);
  CHECK(c.step_error == Approx((2.2 - 2.05) / 2.05));
  CHECK_FALSE(c.has_op_timeline);
}

TEST_CASE("op errors and exposed communication from a measured timeline", "[core][compare]") {
  auto plan = two_op_plan();
  auto predicted = timeline(1.0, 1.0, 2.0);
  auto measured = timeline(1.2, 1.1, 2.5);
  auto c = compare_runs(plan, predicted, {2.5}, &measured);
  REQUIRE(c.has_op_timeline);
  CHECK(c.predicted_exposed_comm_s == Approx(1.0));
  CHECK(c.measured_exposed_comm_s == Approx(1.3));
  // Starts: 0 vs 0, 1.0 vs 1.1 -> errors 0 and 0.1/2.5; ends: 1.0 vs 1.2, 2.0 vs 2.5.
  CHECK(c.max_op_start_error == Approx(0.04));
  CHECK(c.median_op_start_error == Approx(0.02));
  CHECK(c.median_op_end_error == Approx((0.2 / 2.5 + 0.5 / 2.5) / 2));
  CHECK(c.max_op_end_error == Approx(0.2));
  Timeline other("x", 3, 2);
  CHECK_THROWS(compare_runs(plan, predicted, {2.5}, &other));
  CHECK_THROWS(compare_runs(plan, predicted, {}, nullptr));
}

TEST_CASE("ranking check: flips count only when the measurements tell the cases apart", "[core][ranking]") {
  // Three cases measured 100, 200, 300 ms with +-5 ms spread.
  std::vector<MeasuredCase> c = {{0.10, 0.100, 0.095, 0.105}, {0.20, 0.200, 0.195, 0.205}, {0.30, 0.300, 0.295, 0.305}};
  auto r = check_ranking(c);
  CHECK(r.pairs == 3);
  CHECK(r.flips == 0);
  CHECK(r.preserved());
  // Predicting the first case slowest flips two pairs, both measured far apart.
  c[0].predicted_s = 0.35;
  r = check_ranking(c);
  CHECK(r.flips == 2);
  CHECK(r.significant_flips == 2);
  CHECK_FALSE(r.preserved());
  // Two cases whose measured ranges overlap (198..210 and 195..205): a flip between them is noise.
  c = {{0.19, 0.202, 0.198, 0.210}, {0.20, 0.200, 0.195, 0.205}};
  r = check_ranking(c);
  CHECK(r.flips == 1);
  CHECK(r.significant_flips == 0);
  CHECK(r.preserved());
  // A predicted tie is not a flip.
  c[0].predicted_s = c[1].predicted_s;
  CHECK(check_ranking(c).flips == 0);
}
