// accumulate (deferred sync) and localsgd (periodic parameter averaging), and what excluded
// parameters and buffers do to the bytes on the wire.
#include <utility>

#include <catch2/catch.hpp>

#include "core/cluster_json.h"
#include "core/step_summary.h"
#include "sim/sim_engine.h"
#include "strategies/strategy.h"
#include "tests/test_support.h"

using namespace redsim;

namespace {
std::int64_t sent(const Plan& plan, const ClusterSpec& cluster) {
  return summarize(plan, simulate(plan, cluster)).bytes_sent_per_rank;
}
int count_collectives(const Plan& plan) {
  int c = 0;
  for (const auto& op : plan.ops) c += op_kind_is_collective(op.kind) ? 1 : 0;
  return c;
}
}  // namespace

TEST_CASE("deferred sync sends 1/M of the naive baseline's bytes", "[strategies][accumulate]") {
  auto trace = testing::uniform_trace(6, 250'000, 1e-4, 2e-4, 1e-4);
  auto cluster = testing::ideal_star(4, 1e10, 2e-6);
  for (int m : {2, 4}) {
    Knobs k;
    k.microbatches = m;
    k.bucket_cap_bytes = 2'000'000;
    auto deferred = make_strategy("accumulate")->plan(trace, cluster, k);
    k.sync_every_microbatch = true;
    auto naive = make_strategy("accumulate")->plan(trace, cluster, k);
    CHECK(sent(naive, cluster) == m * sent(deferred, cluster));
    CHECK(count_collectives(naive) == m * count_collectives(deferred));
    CHECK(deferred.samples_per_step == 4 * m);
    // The saving is visible in time too.
    CHECK(summarize(deferred, simulate(deferred, cluster)).step_time_s <
          summarize(naive, simulate(naive, cluster)).step_time_s);
  }
}

TEST_CASE("accumulate with one micro-batch is bucketed", "[strategies][accumulate]") {
  auto trace = testing::uniform_trace(6, 250'000, 1e-4, 2e-4, 1e-4);
  auto cluster = testing::ideal_star(4, 1e10, 2e-6);
  Knobs k;
  k.bucket_cap_bytes = 2'000'000;
  auto a = make_strategy("accumulate")->plan(trace, cluster, k);
  auto b = make_strategy("bucketed")->plan(trace, cluster, k);
  REQUIRE(a.ops.size() == b.ops.size());
  for (std::size_t i = 0; i < a.ops.size(); ++i) CHECK(a.ops[i].name == b.ops[i].name);
  CHECK(summarize(a, simulate(a, cluster)).step_time_s == summarize(b, simulate(b, cluster)).step_time_s);
}

TEST_CASE("LocalSGD syncs once per H-step window", "[strategies][localsgd]") {
  auto trace = testing::uniform_trace(6, 250'000, 1e-4, 2e-4, 1e-4);
  auto cluster = testing::ideal_star(4, 1e10, 2e-6);
  Knobs k;
  k.bucket_cap_bytes = 2'000'000;
  k.broadcast_buffers = false;
  k.localsgd_averaging = Averaging::bucketed;
  auto bucketed = make_strategy("bucketed")->plan(trace, cluster, k);
  const int buckets = count_collectives(bucketed);
  double per_step_h1 = 0;
  for (int h : {1, 4, 8}) {
    k.localsgd_period = h;
    auto plan = make_strategy("localsgd")->plan(trace, cluster, k);
    CHECK(plan.steps == h);
    CHECK(count_collectives(plan) == buckets);  // one parameter sync, bucketed as DDP would
    int optimizers = 0;
    for (const auto& op : plan.ops) optimizers += op.kind == OpKind::optimizer ? 1 : 0;
    CHECK(optimizers == h);
    // The whole window moves exactly the bytes of one gradient allreduce of the same buckets
    // (for H = 1 that is the gradient allreduce's volume), so 1/H of it per step.
    CHECK(sent(plan, cluster) == sent(bucketed, cluster));
    // And the per-step time falls as the sync is amortised.
    const double per_step = summarize(plan, simulate(plan, cluster)).step_time_s;
    if (h == 1) per_step_h1 = per_step;
    else CHECK(per_step < per_step_h1);
  }
}

TEST_CASE("LocalSGD averages as PyTorch does: one flat allreduce of every reduced parameter",
          "[strategies][localsgd]") {
  // PeriodicModelAverager -> average_parameters: torch.cat of every parameter with a gradient,
  // one all_reduce, copied back. 6 layers x 250,000 fp32 = 6 MB in one op; per-param: 6 ops.
  const int n = 4;
  const double B = 1e10, alpha = 2e-6;
  auto trace = testing::uniform_trace(6, 250'000, 1e-4, 2e-4, 1e-4);
  auto cluster = testing::ideal_star(n, B, alpha);
  Knobs k;
  k.broadcast_buffers = false;
  k.localsgd_period = 4;
  REQUIRE(k.localsgd_averaging == Averaging::flat);  // PyTorch's way is the default
  auto flat = make_strategy("localsgd")->plan(trace, cluster, k);
  REQUIRE(count_collectives(flat) == 1);
  const PlanOp* avg = nullptr;
  for (const auto& op : flat.ops)
    if (op_kind_is_collective(op.kind)) avg = &op;
  const std::int64_t S = 6 * 250'000 * 4;
  CHECK(avg->bytes == S);
  CHECK(avg->slices.size() == 6);
  // Alone on the comm stream after the optimizer: its duration is the ring closed form.
  const auto tl = simulate(flat, cluster);
  const auto id = static_cast<std::size_t>(avg - flat.ops.data());
  const double ring_s = 2.0 * (n - 1) * (alpha + static_cast<double>(S) / n / B);
  CHECK(tl.at(0, id).end_s - tl.at(0, id).start_s == Approx(ring_s).epsilon(0.01));

  k.localsgd_averaging = Averaging::per_param;
  auto per_param = make_strategy("localsgd")->plan(trace, cluster, k);
  CHECK(count_collectives(per_param) == 6);
  CHECK(sent(per_param, cluster) == sent(flat, cluster));
  // Six latency-bound rounds instead of one: 5 x 2(n-1) alpha more.
  const auto sum_flat = summarize(flat, tl);
  const auto sum_pp = summarize(per_param, simulate(per_param, cluster));
  CHECK(sum_pp.step_time_s * 4 - sum_flat.step_time_s * 4 == Approx(5 * 2.0 * (n - 1) * alpha).epsilon(0.02));
}

TEST_CASE("PyTorch's averaging copies the parameters into one tensor and divides it at memory bandwidth",
          "[strategies][localsgd]") {
  // average_parameters: torch.cat reads and writes the 6 MB of parameters, the division by the
  // world size reads and writes them again: 4 x 6,000,000 bytes at 2 GB/s = 12 ms before the
  // allreduce, on the compute stream. The parameters then view the averaged tensor (no copy back).
  // A CPU rank pays them at its copy_GBps (calibrate's += rate) and nothing without it (its
  // memory_GBps is the casts' rate); a GPU at its datasheet HBM bandwidth.
  auto trace = testing::uniform_trace(6, 250'000, 1e-4, 2e-4, 1e-4);
  auto cluster = testing::ideal_star(4, 1e10, 2e-6);
  Knobs k;
  k.broadcast_buffers = false;
  k.localsgd_period = 2;
  cluster.device.memory_GBps = 2;
  const auto unknown = make_strategy("localsgd")->plan(trace, cluster, k);  // a CPU rank: free
  cluster.device.copy_GBps = 2;
  const auto flat = make_strategy("localsgd")->plan(trace, cluster, k);
  REQUIRE(flat.ops.size() == unknown.ops.size() + 1);
  const auto& flatten = flat.ops.back().deps;
  REQUIRE(flatten.size() == 1);
  const auto& op = flat.ops[flatten.front()];
  CHECK(op.name == "step1:average:flatten");
  CHECK(op.kind == OpKind::framework);
  CHECK(op.duration_s == Approx(4 * 6e6 / 2e9).epsilon(1e-9));
  for (auto f : {Fidelity::exact, Fidelity::scalable}) {
    SimOptions o;
    o.fidelity = f;
    const double before = summarize(unknown, simulate(unknown, cluster, o)).step_time_s;
    const double after = summarize(flat, simulate(flat, cluster, o)).step_time_s;
    CHECK((after - before) * 2 == Approx(0.012).epsilon(1e-6));  // per step over the H = 2 window
  }
  auto gpu = cluster;
  gpu.device.copy_GBps = 0;
  gpu.device.compute_capability = 8.0;  // an A100: 2,039 GB/s of HBM (NVIDIA's datasheet)
  const auto on_gpu = make_strategy("localsgd")->plan(trace, gpu, k);
  CHECK(on_gpu.ops[on_gpu.ops.back().deps.front()].duration_s == Approx(4 * 6e6 / 2039e9).epsilon(1e-9));
  k.localsgd_averaging = Averaging::per_param;  // allreduces the parameters themselves
  CHECK(make_strategy("localsgd")->plan(trace, cluster, k).ops.size() == unknown.ops.size() + 5);
}

TEST_CASE("micro-batches after the first add their gradients into .grad at memory bandwidth",
          "[strategies][accumulate]") {
  // AccumulateGrad with .grad set: grad += new reads both and writes one, 3 x 1 MB per layer of
  // 250,000 fp32 at an A100's 2,039 GB/s of HBM (NVIDIA's datasheet; a CPU rank's adds are left
  // free) = 1.471 us after each layer's backward in micro-batches 1 and 2 of 3 (the first finds
  // .grad unset, as the trace was timed): 12 x 3e6 / 2.039e12 = 17.66 us more a step, all on the
  // compute path.
  auto trace = testing::uniform_trace(6, 250'000, 1e-4, 2e-4, 1e-4);
  auto cluster = testing::ideal_star(4, 1e10, 2e-6);
  Knobs k;
  k.microbatches = 3;
  cluster.device.memory_GBps = 2;
  const auto free = make_strategy("accumulate")->plan(trace, cluster, k);
  cluster.device.compute_capability = 8.0;
  const auto paid = make_strategy("accumulate")->plan(trace, cluster, k);
  int adds = 0;
  for (const auto& op : paid.ops)
    if (op.name.find("framework:accumulate:") != std::string::npos) {
      ++adds;
      CHECK(op.name.rfind("mb0:", 0) != 0);
      CHECK(op.duration_s == Approx(3 * 1e6 / 2039e9).epsilon(1e-9));
    }
  CHECK(adds == 2 * 6);
  CHECK(paid.ops.size() == free.ops.size() + 12);
  auto cpu = cluster;  // a CPU rank with calibrate's += rate: 3 x 1 MB at 2 GB/s = 1.5 ms an add
  cpu.device.compute_capability = 0;
  cpu.device.copy_GBps = 2;
  for (const auto& op : make_strategy("accumulate")->plan(trace, cpu, k).ops)
    if (op.name.find("framework:accumulate:") != std::string::npos) CHECK(op.duration_s == Approx(1.5e-3).epsilon(1e-9));
  for (auto f : {Fidelity::exact, Fidelity::scalable}) {
    SimOptions o;
    o.fidelity = f;
    const double before = summarize(free, simulate(free, cluster, o)).step_time_s;
    const double after = summarize(paid, simulate(paid, cluster, o)).step_time_s;
    CHECK(after - before == Approx(12 * 3e6 / 2039e9).epsilon(1e-4));
  }
}

TEST_CASE("a cluster's copy_GBps and fresh_copy_GBps are read strictly and written back", "[core][cluster]") {
  for (auto [key, field] : {std::pair{"copy_GBps", &DeviceSpec::copy_GBps}, std::pair{"fresh_copy_GBps", &DeviceSpec::fresh_copy_GBps}}) {
    CAPTURE(key);
    auto j = cluster_to_json(testing::ideal_star(2, 1e10, 0));
    j["device"][key] = 9.5;
    const auto c = cluster_from_json(j, "c.json");
    CHECK(c.device.*field == 9.5);
    CHECK(cluster_from_json(cluster_to_json(c), "c.json").device.*field == 9.5);
    j["device"][key] = -1;
    CHECK(testing::error_of([&] { cluster_from_json(j, "c.json"); }).find(std::string("c.json: $.device.") + key) !=
          std::string::npos);
    j["device"][key] = "fast";
    CHECK(testing::error_of([&] { cluster_from_json(j, "c.json"); }).find(std::string("c.json: $.device.") + key) !=
          std::string::npos);
  }
}

TEST_CASE("excluded parameters are never reduced", "[strategies][excluded]") {
  auto trace = testing::uniform_trace(4, 1'000'000, 1e-4, 2e-4, 0);
  auto cluster = testing::ideal_star(4, 1e10, 2e-6);
  Knobs k;
  k.broadcast_buffers = false;
  for (const auto* name : {"flat", "bucketed", "accumulate", "localsgd", "zero"}) {
    CAPTURE(name);
    auto all = make_strategy(name)->plan(trace, cluster, k);
    auto t2 = trace;
    t2.params[1].excluded = true;  // one of four equal layers is model-parallel
    auto fewer = make_strategy(name)->plan(t2, cluster, k);
    std::int64_t all_bytes = 0, fewer_bytes = 0;
    for (const auto& op : all.ops) all_bytes += op.bytes;
    for (const auto& op : fewer.ops) fewer_bytes += op.bytes;
    // ZeRO moves every byte twice (reduce, then allgather); the others once.
    const int times = std::string(name) == "zero" ? 2 : 1;
    CHECK(all_bytes - fewer_bytes == times * 4'000'000);
    for (const auto& op : fewer.ops)
      for (const auto& s : op.slices) CHECK(s.param != 1);
  }
}

TEST_CASE("buffers are broadcast from rank 0 before forward", "[strategies][buffers]") {
  auto trace = testing::uniform_trace(3, 1'000'000, 1e-3, 2e-3, 0);
  trace.buffers.push_back({"bn.mean", 100'000, DType::fp32, true});
  trace.buffers.push_back({"bn.var", 100'000, DType::fp32, true});
  trace.buffers.push_back({"bn.count", 1, DType::int64, true});
  trace.buffers.push_back({"mask", 1'000'000, DType::fp32, false});
  const int n = 4;
  const double B = 1e10, alpha = 2e-6;
  auto cluster = testing::ideal_star(n, B, alpha);
  Knobs k;
  auto plan = make_strategy("bucketed")->plan(trace, cluster, k);
  std::int64_t broadcast_bytes = 0;
  std::vector<std::uint32_t> bcasts;
  for (const auto& op : plan.ops)
    if (op.kind == OpKind::broadcast) {
      CHECK(op.root == 0);
      broadcast_bytes += op.bytes;
      bcasts.push_back(op.id);
    }
  CHECK(bcasts.size() == 2);  // one per dtype, the non-broadcast mask left out
  CHECK(broadcast_bytes == 800'000 + 8);
  // The first forward waits for them.
  for (const auto& op : plan.ops)
    if (op.kind == OpKind::forward) {
      CHECK(op.deps == bcasts);
      break;
    }
  k.broadcast_buffers = false;
  auto without = make_strategy("bucketed")->plan(trace, cluster, k);
  auto with_s = summarize(plan, simulate(plan, cluster));
  auto without_s = summarize(without, simulate(without, cluster));
  // Broadcast is a pipelined chain: every rank but the last forwards the whole buffer.
  CHECK(with_s.bytes_sent_per_rank - without_s.bytes_sent_per_rank == 800'000 + 8);
  CHECK(with_s.step_time_s > without_s.step_time_s);
}
