// The engine never returns a result it did not finish, and refuses work over the plan's limit
// before simulating (issue 15 items 9 and 10).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "core/error.h"
#include "sim/sim_engine.h"
#include "tests/test_support.h"

using namespace redsim;

namespace {
// One compute op of the given duration before a 4-rank allreduce of 1 MiB.
Plan compute_then_allreduce(double compute_s) {
  Plan plan = testing::single_allreduce_plan(4, 1 << 20, 1);
  PlanOp op;
  op.kind = OpKind::backward;
  op.name = "bwd:slow";
  op.stream = plan.stream_index("compute");
  op.duration_s = compute_s;
  const std::uint32_t id = plan.add(op);
  // The allreduce (op 0) stays first; a second allreduce waits for the compute op.
  PlanOp ar = plan.ops[0];
  ar.name = "allreduce:after";
  ar.deps = {id};
  plan.add(ar);
  return plan;
}
}  // namespace

TEST_CASE("a simulation that leaves an op unfinished is an error, never a result", "[sim][hardening]") {
  auto cluster = testing::ideal_star(4, 12.5e9, 5e-6);
  // A GPU's compute is a plain SimGrid execution, whose clock the 1e308 s below overflows (a CPU
  // rank's compute is timed by sim/interference.h instead).
  cluster.device.compute_capability = 8.0;
  // 1 s of compute finishes: every op has an end at or after its start.
  const Timeline ok = simulate(compute_then_allreduce(1.0), cluster);
  CHECK(ok.at(0, 1).end_s == Approx(1.0));
  // 1e308 s overflows SimGrid's clock: it used to report a deadlock and return zeros.
  CHECK_THROWS(simulate(compute_then_allreduce(1e308), cluster));

  Plan plan = compute_then_allreduce(1.0);
  Timeline tl("simulated", 4, plan.ops.size());
  for (int r = 0; r < 4; ++r)
    for (std::size_t i = 0; i < plan.ops.size(); ++i) tl.mutable_at(r, i) = {0.0, 0.0, 1.0, 0, 0};
  CHECK_NOTHROW(check_timeline_complete(plan, tl));
  tl.mutable_at(2, 1).end_s = std::numeric_limits<double>::quiet_NaN();
  CHECK_THROWS_WITH(check_timeline_complete(plan, tl), Catch::Contains("bwd:slow on rank 2"));
}

TEST_CASE("work over --max-ops is refused before simulating", "[sim][hardening]") {
  const auto cluster = testing::ideal_star(4, 12.5e9, 5e-6);
  Plan plan = compute_then_allreduce(1.0);
  // 3 ops on 4 ranks: 12 op instances at exact fidelity; at scalable the compute op and the two
  // ring allreduces end together on every rank, so 3 records.
  plan.max_ops = 12;
  CHECK(timeline_records(plan, Fidelity::exact) == 12);
  CHECK(timeline_records(plan, Fidelity::scalable) == 3);
  plan.max_ops = 11;
  CHECK_THROWS_AS(simulate(plan, cluster), InputError);
  CHECK_NOTHROW(check_sim_work(plan, cluster, Fidelity::scalable));
  plan.max_ops = 2;
  CHECK_THROWS_AS(check_sim_work(plan, cluster, Fidelity::scalable), InputError);
  // A tree allreduce ends by depth: on 4 ranks a record per rank at most.
  plan.ops[0].algorithm = Algorithm::tree;
  CHECK(timeline_records(plan, Fidelity::scalable) == 4 + 1 + 1);
  // On 4,096 ranks its index costs 2 bytes a rank (4096 / 20 records of 40 bytes, rounded up)
  // plus up to 64 distinct records, instead of 4,096 records.
  plan.world_size = 4096;
  CHECK(timeline_records(plan, Fidelity::scalable) == (4096 + 19) / 20 + 64 + 1 + 1);
  plan.world_size = 4;
  plan.ops[0].algorithm = Algorithm::ring;
  plan.max_ops = 12;
  // Exact: 2 ring allreduces of 2(N-1) steps on each of N = 4 ranks are 2 x 24 = 48 transfers
  // (one loop: 1 MiB per ring in one slice).
  plan.max_ops = 47;
  CHECK_THROWS_WITH(check_sim_work(plan, cluster, Fidelity::exact), Catch::Contains("transfers"));
  plan.max_ops = 48;
  CHECK_NOTHROW(check_sim_work(plan, cluster, Fidelity::exact));
}
