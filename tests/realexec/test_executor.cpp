// The executor on real Gloo communicators, ranks as threads of this process: strategies' plans
// and a synthetic plan with every collective kind run, verify, and produce a Timeline with every
// op on every rank, in Plan order per stream, each op after its dependencies.
#include <catch2/catch.hpp>

#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "core/cluster_json.h"
#include "core/knobs.h"
#include "core/trace_json.h"
#include "realexec/executor.h"
#include "realexec/gloo_backend.h"
#include "realexec/measurement.h"
#include "rank_threads.h"
#include "strategies/strategy.h"

using namespace redsim;
using namespace redsim::realexec;

namespace {

const std::string kSrc = REDSIM_SOURCE_DIR;

// Runs `steps` steps of `plan` on n thread-ranks; returns the problems and the rank reports.
std::vector<std::string> run_plan(const Plan& plan, int n, int steps, std::vector<RankReport>* reports,
                                  ExecOptions options = {}) {
  reports->assign(static_cast<std::size_t>(n), RankReport{});
  return testing::run_ranks(n, [&](int rank, gloo::rendezvous::Store& st) {
    std::vector<std::string> out;
    auto backend = make_gloo_backend(st, rank, n, {"127.0.0.1", "", std::chrono::seconds(30)});
    Executor ex(plan, *backend, options);
    RankReport rep;
    rep.rank = rank;
    rep.host = host_identity();
    for (int s = 0; s < steps; ++s) {
      StepRecord rec = ex.run_step(s);
      rep.buffers_checked += rec.buffers_checked;
      rep.steps.push_back(std::move(rec));
    }
    (*reports)[static_cast<std::size_t>(rank)] = std::move(rep);
    return out;
  });
}

// The measured Timeline's invariants, for every rank and every step.
std::vector<std::string> check_timeline(const Plan& plan, const Timeline& tl) {
  std::vector<std::string> bad;
  if (tl.op_count != plan.ops.size()) bad.push_back("timeline has " + std::to_string(tl.op_count) + " ops");
  for (int r = 0; r < tl.world_size; ++r) {
    std::vector<double> stream_end(plan.streams.size(), -1.0);
    for (const auto& op : plan.ops) {
      const auto& t = tl.at(r, op.id);
      const std::string where = "rank " + std::to_string(r) + " op " + std::to_string(op.id) + " " + op.name;
      if (!(t.end_s > 0)) bad.push_back(where + " never ran");
      if (t.start_s < t.ready_s - 1e-9 || t.end_s < t.start_s) bad.push_back(where + " has ready/start/end out of order");
      // Plan order per stream: each op starts after the previous op of its stream ended.
      if (t.start_s < stream_end[op.stream] - 1e-9) bad.push_back(where + " started before its stream's previous op ended");
      stream_end[op.stream] = t.end_s;
      for (auto d : op.deps)
        if (t.start_s < tl.at(r, d).end_s - 1e-9)
          bad.push_back(where + " started before its dependency " + std::to_string(d) + " ended");
      if (op_kind_is_collective(op.kind) && op.bytes > 0 && tl.world_size > 1 && t.bytes_sent + t.bytes_received == 0)
        bad.push_back(where + " moved no bytes");
    }
  }
  return bad;
}

void check_run(const Plan& plan, int n, int steps) {
  std::vector<RankReport> reports;
  auto problems = run_plan(plan, n, steps, &reports);
  for (const auto& p : problems) FAIL_CHECK(p);
  REQUIRE(problems.empty());
  const auto m = assemble(plan, reports);
  CHECK(m.step_times_s.size() == static_cast<std::size_t>(steps));
  CHECK(m.shared_clock);
  std::size_t collectives = 0;
  for (const auto& op : plan.ops) collectives += op_kind_is_collective(op.kind) ? 1 : 0;
  CHECK(m.buffers_checked == static_cast<std::int64_t>(collectives * static_cast<std::size_t>(n * steps)));
  for (std::size_t s = 0; s < reports[0].steps.size(); ++s) {
    auto bad = check_timeline(plan, step_timeline(plan, reports, s, true));
    for (const auto& b : bad) FAIL_CHECK("step " << s << ": " << b);
  }
}

Plan strategy_plan(const std::string& strategy, int n, int channels, double bucket_mb) {
  const auto trace = load_trace(kSrc + "/tests/data/tiny_trace.json");
  const auto cluster = load_cluster(kSrc + "/tests/realexec/data/local" + std::to_string(n) + ".json");
  Knobs k;
  k.strategy = strategy;
  k.channels = channels;
  k.bucket_cap_bytes = static_cast<std::int64_t>(bucket_mb * 1024 * 1024);
  return make_strategy(strategy)->plan(trace, cluster, k);
}

}  // namespace

TEST_CASE("executor: every strategy's plan on 2 and 4 ranks runs and verifies", "[realexec][executor]") {
  for (const auto& name : strategy_names()) {
    for (int n : {2, 4}) {
      INFO(name << " on " << n << " ranks");
      check_run(strategy_plan(name, n, 1, 1.0), n, 2);
    }
  }
}

TEST_CASE("executor: bucketed plan with 3 channels (concurrent communicators)", "[realexec][executor]") {
  const Plan plan = strategy_plan("bucketed", 2, 3, 1.0);
  for (const auto& op : plan.ops)
    if (op_kind_is_collective(op.kind)) CHECK(op.channels == 3);
  check_run(plan, 2, 2);
}

namespace {

// Every collective kind, on two comm streams, with cross-stream dependencies, uneven shards,
// several channels, and every wire dtype: the executor must run it as it runs any strategy's.
Plan synthetic_plan(int n) {
  Plan p;
  p.strategy = "synthetic";
  p.world_size = n;
  p.stream_index("compute");
  const auto c0 = p.stream_index("comm0");
  const auto c1 = p.stream_index("comm1");
  auto compute = [&](OpKind k, const std::string& name, double d, std::vector<std::uint32_t> deps) {
    PlanOp op;
    op.kind = k;
    op.name = name;
    op.duration_s = d;
    op.deps = std::move(deps);
    return p.add(std::move(op));
  };
  auto coll = [&](OpKind k, const std::string& name, std::uint32_t stream, DType dt, ReduceOp rop, std::int64_t elems,
                  int channels, int root, std::vector<std::uint32_t> deps) {
    PlanOp op;
    op.kind = k;
    op.name = name;
    op.stream = stream;
    op.dtype = dt;
    op.reduce_op = rop;
    op.bytes = elems * dtype_size_bytes(dt);
    op.channels = channels;
    op.root = root;
    op.deps = std::move(deps);
    return p.add(std::move(op));
  };
  const auto f = compute(OpKind::forward, "fwd", 0.001, {});
  const auto bc = coll(OpKind::broadcast, "broadcast:buffers", c1, DType::fp32, ReduceOp::sum, 1000, 1, 0, {});
  const auto bi = coll(OpKind::broadcast, "broadcast:int64", c1, DType::int64, ReduceOp::avg, 333, 1, n - 1, {});
  const auto b1 = compute(OpKind::backward, "bwd1", 0.002, {f, bc, bi});
  const auto ar = coll(OpKind::allreduce, "allreduce:bf16", c0, DType::bf16, ReduceOp::avg, 30011, 2, -1, {b1});
  const auto b2 = compute(OpKind::backward, "bwd2", 0.001, {});
  const auto rd = coll(OpKind::reduce, "reduce:fp16", c1, DType::fp16, ReduceOp::max, 5003, 1, n - 1, {b2});
  PlanOp rs;
  rs.kind = OpKind::reduce_scatter;
  rs.name = "reduce_scatter:uneven";
  rs.stream = c0;
  rs.dtype = DType::fp32;
  rs.reduce_op = ReduceOp::sum;
  rs.channels = 2;
  rs.deps = {b2, ar};
  for (int r = 0; r < n; ++r) rs.shard_bytes.push_back(r == 1 ? 0 : 4 * (700 + 13 * r));
  for (auto b : rs.shard_bytes) rs.bytes += b;
  const auto rsid = p.add(std::move(rs));
  const auto prod = coll(OpKind::allreduce, "allreduce:prod", c1, DType::fp32, ReduceOp::prod, 777, 1, -1, {rd});
  const auto opt = compute(OpKind::optimizer, "optimizer", 0.0005, {rsid, prod});
  coll(OpKind::allgather, "allgather:params", c0, DType::fp16, ReduceOp::sum, 4099, 3, -1, {opt});
  return p;
}

}  // namespace

TEST_CASE("executor: every collective kind, dtype and cross-stream dependency", "[realexec][executor]") {
  for (int n : {2, 3}) {
    INFO(n << " ranks");
    check_run(synthetic_plan(n), n, 3);
  }
}

TEST_CASE("executor: a wrong result fails verification loudly, naming the op", "[realexec][executor]") {
  const Plan plan = synthetic_plan(2);
  for (const auto& op : plan.ops) {
    if (!op_kind_is_collective(op.kind)) continue;
    INFO(op.name);
    ExecOptions o;
    o.corrupt_op = static_cast<int>(op.id);
    o.corrupt_rank = op.kind == OpKind::reduce ? op.root : 0;
    std::vector<RankReport> reports;
    auto problems = run_plan(plan, 2, 1, &reports, o);
    REQUIRE(problems.size() == 1);
    CHECK_THAT(problems[0], Catch::Contains("rank " + std::to_string(o.corrupt_rank) + " threw"));
    CHECK_THAT(problems[0], Catch::Contains("\"" + op.name + "\""));
    CHECK_THAT(problems[0], Catch::Contains("is wrong"));
  }
}

TEST_CASE("executor: plans it cannot run are refused up front", "[realexec][executor]") {
  Plan p = synthetic_plan(2);
  CHECK_THROWS_WITH(check_plan_for_realexec(p, 3), Catch::Contains("plan is for 2 ranks"));
  p.ops[3].deps = {5};
  CHECK_THROWS_WITH(check_plan_for_realexec(p, 2), Catch::Contains("not earlier"));
}
