// The derived metrics: exposed communication, bus bandwidth and step time from a Timeline.
#include <catch2/catch.hpp>

#include "core/step_summary.h"

using namespace redsim;

TEST_CASE("exposed communication is comm time not covered by compute", "[core][summary]") {
  Plan p;
  p.world_size = 2;
  p.samples_per_step = 8;
  auto compute = p.stream_index("compute");
  auto comm = p.stream_index("comm0");
  PlanOp a;
  a.kind = OpKind::backward;
  a.stream = compute;
  p.add(a);
  p.add(a);
  PlanOp c;
  c.kind = OpKind::allreduce;
  c.stream = comm;
  c.bytes = 1'000'000'000;
  p.add(c);
  Timeline tl("test", 2, 3);
  for (int r = 0; r < 2; ++r) {
    tl.mutable_at(r, 0) = {0, 0, 1.0, 0, 0};
    tl.mutable_at(r, 1) = {1.0, 1.0, 2.0, 0, 0};
    tl.mutable_at(r, 2) = {1.5, 1.5, 3.0 + r, 0, 0};  // rank 1 finishes its comm later
  }
  auto s = summarize(p, tl);
  CHECK(s.step_time_s == 4.0);
  CHECK(s.compute_time_s == 2.0);
  CHECK(s.comm_time_s == 2.5);
  CHECK(s.exposed_comm_s == 2.0);  // rank 1: comm 1.5..4.0, compute until 2.0
  CHECK(s.time_per_sample_s == 0.5);
  REQUIRE(s.collectives.size() == 1);
  CHECK(s.collectives[0].algbw_GBps == Approx(1.0 / 2.5));
  CHECK(s.collectives[0].busbw_GBps == Approx(1.0 / 2.5));  // 2(n-1)/n = 1 for n = 2
}

TEST_CASE("bus factors follow nccl-tests", "[core][summary]") {
  CHECK(bus_factor(OpKind::allreduce, 8) == Approx(14.0 / 8));
  CHECK(bus_factor(OpKind::allgather, 8) == Approx(7.0 / 8));
  CHECK(bus_factor(OpKind::reduce_scatter, 4) == Approx(3.0 / 4));
  CHECK(bus_factor(OpKind::broadcast, 8) == 1.0);
}

TEST_CASE("ranks with repeated op times are summarised once, and every distinct rank counts", "[core][summary]") {
  // Six ranks in three patterns (A B A B A C); the summary takes each figure's maximum over ranks:
  // A: compute 0..1, comm 0.5..2 -> compute 1, comm 1.5, exposed 1, end 2;
  // B: compute 0..2, comm 0.5..2.5 -> compute 2, comm 2, exposed 0.5, end 2.5;
  // C, the last rank: compute 0..1, comm 0.5..3 -> compute 1, comm 2.5, exposed 2, end 3.
  Plan p;
  p.world_size = 6;
  p.samples_per_step = 6;
  PlanOp a;
  a.kind = OpKind::backward;
  a.stream = p.stream_index("compute");
  p.add(a);
  PlanOp c;
  c.kind = OpKind::allreduce;
  c.stream = p.stream_index("comm0");
  c.bytes = 1000;
  p.add(c);
  Timeline tl("test", 6, 2);
  const double compute_end[] = {1, 2, 1, 2, 1, 1}, comm_end[] = {2, 2.5, 2, 2.5, 2, 3};
  for (int r = 0; r < 6; ++r) {
    tl.mutable_at(r, 0) = {0, 0, compute_end[r], 0, 0};
    tl.mutable_at(r, 1) = {0.5, 0.5, comm_end[r], 0, 0};
  }
  const auto s = summarize(p, tl);
  CHECK(s.step_time_s == 3.0);
  CHECK(s.compute_time_s == 2.0);
  CHECK(s.comm_time_s == 2.5);
  CHECK(s.exposed_comm_s == 2.0);
}
