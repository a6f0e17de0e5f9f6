// What a rank of a real run holds (issue 18 item 6): parameters, gradients and optimizer state
// sized from the trace's tensors and the shards the Plan gives the rank, checked against the
// ZeRO paper's per-rank formulas worked out here from element counts and dtype sizes, and the
// executor's allocation (its held() and its collective buffers) on 4 Gloo ranks.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "core/cluster_json.h"
#include "core/knobs.h"
#include "realexec/executor.h"
#include "realexec/exec_layout.h"
#include "realexec/gloo_backend.h"
#include "realexec/model_state.h"
#include "rank_threads.h"
#include "strategies/memory_model.h"
#include "strategies/strategy.h"

using namespace redsim;
using namespace redsim::realexec;

namespace {

constexpr int kRanks = 4;
constexpr std::int64_t kLayerElems = 4096;  // per layer: 4096 = 4 ranks x 1024, so shards are exact
constexpr int kLayers = 4;
constexpr std::int64_t kElems = kLayers * kLayerElems;  // Psi = 16,384 parameters

ModelTrace trace_of(DType dtype) {
  ModelTrace t;
  t.model = "four-layers";
  t.reference_device = "cpu";
  t.optimizer_s = 1e-4;
  for (int l = 0; l < kLayers; ++l) {
    t.layers.push_back({"l" + std::to_string(l), 1e-4, 2e-4, std::nullopt, std::nullopt, {}, {}});
    TraceParam p;
    p.name = "l" + std::to_string(l) + ".weight";
    p.numel = kLayerElems;
    p.dtype = dtype;
    p.layer = static_cast<std::size_t>(l);
    t.params.push_back(p);
  }
  t.grad_ready_order = derive_grad_ready_order(t);
  return t;
}

const ClusterSpec& cluster() {
  static const ClusterSpec c = load_cluster(std::string(REDSIM_SOURCE_DIR) + "/tests/realexec/data/local4.json");
  return c;
}

Knobs knobs_of(const std::string& strategy, int zero_stage = 2) {
  Knobs k;
  k.strategy = strategy;
  k.zero_stage = zero_stage;
  k.bucket_cap_bytes = 16 * 1024;  // several buckets, so ownership spans collectives
  k.first_bucket_cap_bytes = 16 * 1024;
  return k;
}

struct Expected {
  std::int64_t params, grads, optimizer;
};

// Psi elements of b bytes each, Adam's K bytes per element (8 for fp32: momentum and variance;
// 12 for 16-bit: an fp32 master copy too), N = 4 ranks. ZeRO: stage 1 divides the optimizer
// state by N, stage 2 the gradients too, stage 3 the parameters too.
Expected zero_formula(int stage, std::int64_t b, std::int64_t K, int N) {
  const std::int64_t P = kElems * b, G = kElems * b, O = kElems * K;
  return {stage >= 3 ? P / N : P, stage >= 2 ? G / N : G, stage >= 1 ? O / N : O};
}

void check_every_rank(const Plan& plan, const ModelStateSpec& spec, const Expected& e) {
  for (int r = 0; r < plan.world_size; ++r) {
    INFO("rank " << r);
    const HeldMemory h = model_state_bytes(plan, spec, r);
    CHECK(h.params_bytes == e.params);
    CHECK(h.grads_bytes == e.grads);
    CHECK(h.optimizer_bytes == e.optimizer);
  }
}

}  // namespace

TEST_CASE("held model state follows the ZeRO formulas for the tensors the plan shards", "[realexec][memory]") {
  for (const DType dtype : {DType::fp32, DType::fp16}) {
    const auto trace = trace_of(dtype);
    const std::int64_t b = dtype_size_bytes(dtype), K = dtype == DType::fp32 ? 8 : 12;
    INFO("params " << dtype_name(dtype));
    struct Case {
      Knobs knobs;
      int stage;
    };
    for (const auto& c : {Case{knobs_of("flat"), 0}, Case{knobs_of("bucketed"), 0}, Case{knobs_of("zero", 1), 1},
                          Case{knobs_of("zero", 2), 2}, Case{knobs_of("fsdp"), 3}}) {
      INFO(c.knobs.strategy << " stage " << c.stage);
      REQUIRE(model_state_stage(c.knobs) == c.stage);
      const Plan plan = make_strategy(c.knobs.strategy)->plan(trace, cluster(), c.knobs);
      check_every_rank(plan, model_state_spec(trace, c.stage), zero_formula(c.stage, b, K, kRanks));
    }
  }
  // hsdp in groups of 2: stage 3 over the group (N = 2), replicated across the two groups.
  const auto trace = trace_of(DType::fp32);
  Knobs k = knobs_of("hsdp");
  k.shard_group = 2;
  const Plan plan = make_strategy("hsdp")->plan(trace, cluster(), k);
  check_every_rank(plan, model_state_spec(trace, 3), zero_formula(3, 4, 8, 2));
}

TEST_CASE("frozen parameters hold neither gradient nor optimizer state", "[realexec][memory]") {
  auto trace = trace_of(DType::fp32);
  trace.params[1].trainable = false;
  trace.grad_ready_order = derive_grad_ready_order(trace);
  const Plan plan = make_strategy("bucketed")->plan(trace, cluster(), knobs_of("bucketed"));
  const HeldMemory h = model_state_bytes(plan, model_state_spec(trace, 0), 0);
  CHECK(h.params_bytes == kElems * 4);
  CHECK(h.grads_bytes == (kElems - kLayerElems) * 4);
  CHECK(h.optimizer_bytes == (kElems - kLayerElems) * 8);
}

TEST_CASE("the executor allocates the model state and a buffer per collective", "[realexec][memory]") {
  const auto trace = trace_of(DType::fp32);
  struct Case {
    Knobs knobs;
    std::int64_t buffer_bytes;  // from the collectives each strategy runs, in units of Psi x 4 bytes
  };
  // bucketed: every gradient in one allreduce bucket (1 x). zero-2: every gradient reduced to its
  // owner and every parameter all-gathered (2 x). fsdp FULL_SHARD: each unit gathered before
  // forward and again before backward, its gradients reduce-scattered: 3 x (1.5 x DDP's 2 Psi).
  const std::int64_t psi_bytes = kElems * 4;
  for (const auto& c : {Case{knobs_of("bucketed"), psi_bytes}, Case{knobs_of("zero", 2), 2 * psi_bytes},
                        Case{knobs_of("fsdp"), 3 * psi_bytes}}) {
    INFO(c.knobs.strategy);
    const Plan plan = plan_for_library(make_strategy(c.knobs.strategy)->plan(trace, cluster(), c.knobs));
    const int stage = model_state_stage(c.knobs);
    const Expected e = zero_formula(stage, 4, 8, kRanks);
    std::vector<HeldMemory> held(kRanks);
    const auto problems = testing::run_ranks(kRanks, [&](int rank, gloo::rendezvous::Store& st) {
      auto backend = make_gloo_backend(st, rank, kRanks, {"127.0.0.1", "", std::chrono::seconds(30)});
      ExecOptions eo;
      eo.hold = model_state_bytes(plan, model_state_spec(trace, stage), rank);
      Executor ex(plan, *backend, eo);
      ex.run_step(0);
      held[static_cast<std::size_t>(rank)] = ex.held();
      return std::vector<std::string>{};
    });
    for (const auto& p : problems) FAIL_CHECK(p);
    for (const auto& h : held) {
      CHECK(h.params_bytes == e.params);
      CHECK(h.grads_bytes == e.grads);
      CHECK(h.optimizer_bytes == e.optimizer);
      CHECK(h.buffer_bytes == c.buffer_bytes);
    }
  }
}

TEST_CASE("peak resident memory covers what the process has touched", "[realexec][memory]") {
  CHECK(peak_rss_bytes() > 0);
  // 64 MiB written and still resident: the high-water mark is at least that.
  std::vector<char> block(std::size_t{64} << 20, 1);
  CHECK(peak_rss_bytes() >= static_cast<std::int64_t>(block.size()));
  CHECK(block[12345] == 1);
}
