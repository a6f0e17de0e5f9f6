// fsdp and hsdp: communication volume out of the Plan against FSDP's closed forms, per-rank
// memory against the ZeRO paper's stage-3 formula, the dependencies FSDP's hooks impose.
#include <catch2/catch.hpp>

#include "core/plan_json.h"
#include "core/step_summary.h"
#include "sim/sim_engine.h"
#include "strategies/fsdp.h"
#include "strategies/strategy.h"
#include "tests/test_support.h"

using namespace redsim;

namespace {

// Bytes a rank sends for an op in a ring of its group: allreduce 2(G-1)/G S, reduce-scatter and
// all-gather (G-1)/G S (the ring-equivalent volume of the ZeRO paper's Section 7).
double ring_bytes(const PlanOp& op, int world) {
  const double g = group_ranks(op, world);
  const double factor = op.kind == OpKind::allreduce ? 2.0 * (g - 1) / g : (g - 1) / g;
  return factor * static_cast<double>(op.bytes);
}

double plan_ring_bytes(const Plan& plan) {
  double total = 0;
  for (const auto& op : plan.ops)
    if (op_kind_is_collective(op.kind)) total += ring_bytes(op, plan.world_size);
  return total;
}

int count(const Plan& plan, OpKind kind) {
  int n = 0;
  for (const auto& op : plan.ops) n += op.kind == kind ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("fsdp moves 3 Psi, 1.5x DDP's 2 Psi: SHARD_GRAD_OP moves 2 Psi", "[strategies][fsdp]") {
  const int n = 8, layers = 6;
  const std::int64_t numel = 800'000;  // divisible by 8: no padding
  auto trace = testing::uniform_trace(layers, numel, 1e-4, 2e-4, 1e-4);
  auto cluster = testing::ideal_star(n, 1e10, 2e-6);
  Knobs k;
  k.broadcast_buffers = false;
  const double psi_bytes = layers * numel * 4.0, ring = (n - 1.0) / n;
  auto fsdp = make_strategy("fsdp")->plan(trace, cluster, k);
  auto ddp = make_strategy("bucketed")->plan(trace, cluster, k);
  CHECK(count(fsdp, OpKind::allgather) == 2 * layers);  // before forward and again before backward
  CHECK(count(fsdp, OpKind::reduce_scatter) == layers);
  CHECK(plan_ring_bytes(fsdp) == Approx(3 * ring * psi_bytes));
  CHECK(plan_ring_bytes(ddp) == Approx(2 * ring * psi_bytes));
  CHECK(plan_ring_bytes(fsdp) / plan_ring_bytes(ddp) == Approx(1.5));
  // The simulated ring sends exactly that per rank.
  auto s = summarize(fsdp, simulate(fsdp, cluster));
  CHECK(static_cast<double>(s.bytes_sent_per_rank) == Approx(3 * ring * psi_bytes));

  k.reshard_after_forward = false;
  auto grad_op = make_strategy("fsdp")->plan(trace, cluster, k);
  CHECK(count(grad_op, OpKind::allgather) == layers);
  CHECK(plan_ring_bytes(grad_op) == Approx(2 * ring * psi_bytes));
}

TEST_CASE("fsdp pads each FlatParameter to a multiple of the world and wraps by size", "[strategies][fsdp]") {
  const int n = 8;
  auto trace = testing::uniform_trace(4, 1001, 0, 0, 0);
  auto cluster = testing::ideal_star(n, 1e10, 2e-6);
  Knobs k;
  auto plan = make_strategy("fsdp")->plan(trace, cluster, k);
  for (const auto& op : plan.ops)
    if (op.kind == OpKind::reduce_scatter || op.kind == OpKind::allgather) CHECK(op.bytes == 1008 * 4);
  // Units of at least 2,000 parameters: two layers each.
  k.fsdp_wrap_elems = 2000;
  auto wrapped = make_strategy("fsdp")->plan(trace, cluster, k);
  CHECK(count(wrapped, OpKind::reduce_scatter) == 2);
  for (const auto& op : wrapped.ops)
    if (op.kind == OpKind::reduce_scatter) CHECK(op.bytes == 2008 * 4);  // 2002 rounded up to 8
}

TEST_CASE("fsdp memory is the ZeRO-3 formula plus the live unsharded units", "[strategies][fsdp][memory]") {
  // Rajbhandari et al. 2020, Fig. 1: stage 3 holds (2 + 2 + K) Psi / N bytes, K = 12 for Adam.
  const std::int64_t psi = 8'000'000;
  const int n = 8, layers = 8;
  auto trace = testing::uniform_trace(layers, psi / layers, 0, 0, 0);
  for (auto& p : trace.params) p.dtype = DType::bf16;
  auto cluster = testing::ideal_star(n, 1e10, 1e-6);
  Knobs k;
  auto plan = make_strategy("fsdp")->plan(trace, cluster, k);
  const std::int64_t unit_bytes = psi / layers * 2;
  CHECK(plan.memory.params_bytes == 2 * psi / n);
  CHECK(plan.memory.grads_bytes == 2 * psi / n);
  CHECK(plan.memory.optimizer_bytes == 12 * psi / n);
  // BACKWARD_PRE: the unit computing and the one prefetched, plus one unsharded gradient.
  CHECK(plan.memory.comm_buffer_bytes == 2 * unit_bytes + unit_bytes);
  k.backward_prefetch = BackwardPrefetch::none;
  CHECK(make_strategy("fsdp")->plan(trace, cluster, k).memory.comm_buffer_bytes == 2 * unit_bytes);
  // SHARD_GRAD_OP keeps every unit unsharded from forward to backward.
  k.reshard_after_forward = false;
  CHECK(make_strategy("fsdp")->plan(trace, cluster, k).memory.comm_buffer_bytes == 2 * psi + unit_bytes);
}

TEST_CASE("fsdp's hooks: gather before compute, reduce-scatter after, prefetch per knob", "[strategies][fsdp]") {
  const int layers = 4;
  auto trace = testing::uniform_trace(layers, 1024, 1e-3, 2e-3, 0);
  auto cluster = testing::ideal_star(4, 1e10, 1e-6);
  Knobs k;
  auto plan = make_strategy("fsdp")->plan(trace, cluster, k);
  auto by_name = [&](const std::string& name) -> const PlanOp& { return plan.ops[testing::op_index(plan, name)]; };
  auto depends = [&](const PlanOp& op, const std::string& dep) {
    for (auto d : op.deps)
      if (plan.ops[d].name == dep) return true;
    return false;
  };
  CHECK(depends(by_name("fwd:l1"), "allgather:fwd:unit1"));
  CHECK(depends(by_name("bwd:l1"), "allgather:bwd:unit1"));
  CHECK(depends(by_name("reduce_scatter:unit1"), "bwd:l1"));
  // BACKWARD_PRE: unit 1's gather is issued when unit 2's backward starts (unit 3's ends).
  CHECK(depends(by_name("allgather:bwd:unit1"), "bwd:l3"));
  CHECK(plan.streams[by_name("allgather:fwd:unit0").stream] == "allgather");
  CHECK(plan.streams[by_name("reduce_scatter:unit0").stream] == "reduce_scatter");
  k.backward_prefetch = BackwardPrefetch::none;
  plan = make_strategy("fsdp")->plan(trace, cluster, k);
  CHECK(depends(by_name("allgather:bwd:unit1"), "bwd:l2"));
  CHECK(depends(by_name("allgather:bwd:unit1"), "reduce_scatter:unit2"));
}

TEST_CASE("fsdp prefetching never slows the step and the plan is deterministic", "[strategies][fsdp]") {
  auto trace = testing::uniform_trace(6, 2'000'000, 1e-3, 2e-3, 1e-4);
  auto cluster = testing::ideal_star(4, 1e10, 2e-6);
  Knobs k;
  k.forward_prefetch = true;
  auto pre = make_strategy("fsdp")->plan(trace, cluster, k);
  CHECK(plan_to_json(pre).dump() == plan_to_json(make_strategy("fsdp")->plan(trace, cluster, k)).dump());
  k.forward_prefetch = false;
  k.backward_prefetch = BackwardPrefetch::none;
  auto none = make_strategy("fsdp")->plan(trace, cluster, k);
  const double t_pre = summarize(pre, simulate(pre, cluster)).step_time_s;
  const double t_none = summarize(none, simulate(none, cluster)).step_time_s;
  CHECK(t_pre <= t_none);
  // Without any prefetch every gather is exposed: the step is at least compute plus the
  // 2 x 6 all-gathers of 8 MB, each (N-1)/N S / B on the ring.
  const double ag_s = 3.0 / 4 * 8e6 / 1e10;
  CHECK(t_none >= 6 * 3e-3 + 12 * ag_s);
}

TEST_CASE("hsdp reduce-scatters in the group and allreduces the shard across groups", "[strategies][hsdp]") {
  const int nodes = 4, per_node = 4, n = nodes * per_node, layers = 4;
  const std::int64_t numel = 1'600'000;
  auto trace = testing::uniform_trace(layers, numel, 0, 0, 0);
  auto cluster = testing::ideal_multi_node(nodes, per_node, 1e11, 1e-6, 1e10, 2e-6);
  Knobs k;
  auto plan = make_strategy("hsdp")->plan(trace, cluster, k);
  const double g = per_node, m = nodes, s = numel * 4.0;
  for (const auto& op : plan.ops) {
    if (op.kind == OpKind::reduce_scatter || op.kind == OpKind::allgather) {
      CHECK(op.group_size == per_node);
      CHECK(group_members(op, n, 5) == std::vector<int>{4, 5, 6, 7});
    }
    if (op.kind == OpKind::allreduce) {
      CHECK(op.bytes == numel * 4 / per_node);
      CHECK(group_members(op, n, 5) == std::vector<int>{1, 5, 9, 13});
    }
  }
  // Per unit: two gathers and a reduce-scatter in the group, an allreduce of 1/G across groups.
  const double expected = layers * (3 * (g - 1) / g * s + 2 * (m - 1) / m * s / g);
  CHECK(plan_ring_bytes(plan) == Approx(expected));
  // Model state sharded over the node's 4 ranks, not the world's 16.
  CHECK(plan.memory.params_bytes == layers * numel * 4 / per_node);
  k.shard_group = 3;
  CHECK_THAT(testing::error_of([&] { make_strategy("hsdp")->plan(trace, cluster, k); }),
             Catch::Contains("do not divide"));
}
