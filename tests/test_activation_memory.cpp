// Activations in the memory model: what autograd saves in one forward (the trace's per-layer
// activation_bytes) is added to every strategy's memory per rank, unsharded, and says when the
// trace does not give it.
#include <catch2/catch.hpp>

#include <algorithm>

#include "core/chrome_trace.h"
#include "core/plan_json.h"
#include "sim/sim_engine.h"
#include "strategies/strategy.h"
#include "tests/test_support.h"

using namespace redsim;

namespace {
constexpr int kLayers = 6;
constexpr std::int64_t kNumel = 1 << 16;

ModelTrace with_activations(ModelTrace t) {
  for (std::size_t l = 0; l < t.layers.size(); ++l) t.layers[l].activation_bytes = 1000 * static_cast<std::int64_t>(l + 1);
  return t;
}
}  // namespace

TEST_CASE("every strategy's memory per rank adds the trace's activations, once, to its model state", "[strategies][memory]") {
  const auto bare = testing::uniform_trace(kLayers, kNumel, 1e-4, 2e-4, 1e-4);
  const auto traced = with_activations(bare);
  // 1000 x (1 + 2 + ... + 6): every layer's saved tensors are live when forward ends.
  const std::int64_t activations = 1000 * kLayers * (kLayers + 1) / 2;
  const auto cluster = testing::ideal_star(4, 1.25e9, 1e-5);
  for (const auto& name : strategy_names()) {
    INFO(name);
    Knobs k;
    k.strategy = name;
    k.microbatches = name == "accumulate" ? 4 : 1;  // a micro-batch is the trace's batch: the same activations
    const auto without = make_strategy(name)->plan(bare, cluster, k).memory;
    const auto with = make_strategy(name)->plan(traced, cluster, k).memory;
    CHECK_FALSE(without.activations_known);
    CHECK(without.activation_bytes == 0);
    CHECK(without.total_bytes() == without.model_state_bytes() + without.step_buffer_bytes);
    CHECK(with.activations_known);
    CHECK(with.activation_bytes == activations);  // no ZeRO stage shards them: each rank runs its own samples
    CHECK(with.model_state_bytes() == without.model_state_bytes());
    // localsgd's averaging copy comes after backward: the larger of it and the activations counts.
    CHECK(with.total_bytes() == with.model_state_bytes() + std::max(activations, with.step_buffer_bytes));
    CHECK(memory_to_json(with)["activation_bytes"] == activations);
    CHECK(memory_to_json(without)["activation_bytes"].is_null());  // unknown, not zero
    CHECK(memory_to_json(with)["total_bytes"] == with.total_bytes());
  }
}

TEST_CASE("the Perfetto timeline counts the activations held, one micro-batch at a time", "[strategies][memory][chrome_trace]") {
  const auto traced = with_activations(testing::uniform_trace(kLayers, kNumel, 1e-4, 2e-4, 1e-4));
  const std::int64_t peak = 1000 * kLayers * (kLayers + 1) / 2;
  const auto cluster = testing::ideal_star(4, 1.25e9, 1e-5);
  for (const std::string name : {"bucketed", "accumulate", "fsdp"}) {
    INFO(name);
    Knobs k;
    k.strategy = name;
    const int microbatches = name == "accumulate" ? 3 : 1;
    k.microbatches = microbatches;
    const auto plan = make_strategy(name)->plan(traced, cluster, k);
    const auto trace = timeline_to_chrome_trace(plan, simulate(plan, cluster));
    std::vector<std::int64_t> held;  // rank 0's counter, in time order
    for (const auto& e : trace["traceEvents"])
      if (e["ph"] == "C" && e["pid"] == 0 && e["name"] == "activations held (model)")
        held.push_back(e["args"]["bytes"].get<std::int64_t>());
    REQUIRE(held.size() > 2);
    // Every layer's forward adds its bytes and its backward frees them: each micro-batch peaks at
    // the whole forward's and ends at nothing, so micro-batches never add up.
    CHECK(*std::max_element(held.begin(), held.end()) == peak);
    CHECK(held.back() == 0);
    CHECK(std::count(held.begin() + 1, held.end(), peak) == microbatches);
    CHECK(std::count(held.begin() + 1, held.end(), std::int64_t{0}) == microbatches);
  }
  const auto bare = testing::uniform_trace(kLayers, kNumel, 1e-4, 2e-4, 1e-4);
  Knobs k;
  const auto plan = make_strategy("bucketed")->plan(bare, cluster, k);
  // Kept in a variable: a range-for over a temporary's member would read a destroyed object.
  const auto events = timeline_to_chrome_trace(plan, simulate(plan, cluster));
  REQUIRE(events["traceEvents"].size() > 2);
  for (const auto& e : events["traceEvents"]) CHECK(e["ph"] != "C");
}

TEST_CASE("buffers held after backward count instead of the activations when larger", "[strategies][memory]") {
  // Six layers of 65,536 fp32 parameters (256 KiB each, 1.5 MiB in all) and 21,000 bytes of
  // activations. PeriodicModelAverager flattens every parameter into one copy (torch.cat);
  // accelerate's per-parameter average makes one parameter's copy at a time.
  const auto traced = with_activations(testing::uniform_trace(kLayers, kNumel, 1e-4, 2e-4, 1e-4));
  const auto cluster = testing::ideal_star(4, 1.25e9, 1e-5);
  const std::int64_t param_bytes = kNumel * 4, all_bytes = kLayers * param_bytes;
  Knobs k;
  k.strategy = "localsgd";
  k.localsgd_period = 2;
  auto m = make_strategy("localsgd")->plan(traced, cluster, k).memory;
  CHECK(m.comm_buffer_bytes == all_bytes);  // DDP's buckets, which PostLocalSGD keeps
  CHECK(m.step_buffer_bytes == all_bytes);
  CHECK(m.total_bytes() == 4 * all_bytes + 2 * all_bytes);  // params, grads, buckets, Adam's 8 B/elem; the copy
  CHECK(memory_to_json(m)["step_buffer_bytes"] == all_bytes);
  k.localsgd_averaging = Averaging::per_param;
  k.optimizer_impl = OptimizerImpl::fused;  // the optimizer's own temporaries: the next test
  m = make_strategy("localsgd")->plan(traced, cluster, k).memory;
  CHECK(m.step_buffer_bytes == param_bytes);
  CHECK(m.total_bytes() == 4 * all_bytes + 2 * all_bytes - all_bytes + param_bytes);

  // PowerSGD clones each compressed bucket in the hook and computes the new error feedback in
  // the callback while the old is held: all clones plus the largest bucket's new error. Layers of
  // 64 x 1024 matrices, buckets of 2 layers (first bucket too: 0.5 MiB), 3 buckets of 512 KiB.
  auto matrices = traced;
  for (auto& p : matrices.params) p.shape = std::vector<std::int64_t>{64, 1024};
  Knobs h;
  h.strategy = "bucketed";
  h.comm_hook = CommHook::powersgd;
  h.bucket_cap_bytes = h.first_bucket_cap_bytes = 512 * 1024;
  m = make_strategy("bucketed")->plan(matrices, cluster, h).memory;
  CHECK(m.step_buffer_bytes == all_bytes + 2 * param_bytes);
  // Error feedback (every bucket) and P, Q (64 + 1024 elements x rank 1 per matrix) are held.
  CHECK(m.comm_buffer_bytes == all_bytes + all_bytes + kLayers * (64 + 1024) * 4);
  CHECK(m.total_bytes() == m.model_state_bytes() + all_bytes + 2 * param_bytes);
  h.comm_hook = CommHook::fp16;  // its copies are held (comm buffers), nothing after backward
  h.optimizer_impl = OptimizerImpl::fused;
  CHECK(make_strategy("bucketed")->plan(matrices, cluster, h).memory.step_buffer_bytes == 0);
}

TEST_CASE("the optimizer's step holds temporaries as its implementation makes them", "[strategies][memory]") {
  // Six layers of 65,536 fp32 parameters, the last twice as large (131,072), 21,000 bytes of
  // activations. for-loop: Adam's exp_avg_sq.sqrt() / c of the largest tensor, two at once
  // (2 x 4 x 131,072); foreach: one fp32 temporary per element stepped (4 x 458,752); fused:
  // none, so the activations count.
  auto trace = with_activations(testing::uniform_trace(kLayers, kNumel, 1e-4, 2e-4, 1e-4));
  trace.params.back().numel = 2 * kNumel;
  const std::int64_t elems = (kLayers + 1) * kNumel, largest = 2 * kNumel;
  auto cpu = testing::ideal_star(4, 1.25e9, 1e-5);
  auto gpu = cpu;
  gpu.device.compute_capability = 9.0;
  Knobs k;
  for (const std::string name : {"flat", "bucketed", "accumulate"}) {
    INFO(name);
    k.strategy = name;
    k.optimizer_impl = OptimizerImpl::automatic;
    auto m = make_strategy(name)->plan(trace, cpu, k).memory;
    CHECK(m.step_buffer_bytes == 2 * 4 * largest);  // PyTorch's default on a CPU
    CHECK(m.total_bytes() == m.model_state_bytes() + 2 * 4 * largest);
    CHECK(make_strategy(name)->plan(trace, gpu, k).memory.step_buffer_bytes == 4 * elems);  // on CUDA
    k.optimizer_impl = OptimizerImpl::for_loop;
    CHECK(make_strategy(name)->plan(trace, gpu, k).memory.step_buffer_bytes == 2 * 4 * largest);
    k.optimizer_impl = OptimizerImpl::fused;
    m = make_strategy(name)->plan(trace, gpu, k).memory;
    CHECK(m.step_buffer_bytes == 0);
    CHECK(m.total_bytes() == m.model_state_bytes() + 1000 * kLayers * (kLayers + 1) / 2);
  }
  // ZeRO: DeepSpeed's FusedAdam by default; foreach over the rank's partition of 4 ranks.
  k.strategy = "zero";
  k.optimizer_impl = OptimizerImpl::automatic;
  CHECK(make_strategy("zero")->plan(trace, gpu, k).memory.step_buffer_bytes == 0);
  k.optimizer_impl = OptimizerImpl::foreach;
  CHECK(make_strategy("zero")->plan(trace, gpu, k).memory.step_buffer_bytes == 4 * ((elems + 3) / 4));
  // FSDP, one unit per layer: each rank steps a quarter of every unit (padded to 4 ranks).
  k.strategy = "fsdp";
  k.optimizer_impl = OptimizerImpl::automatic;
  CHECK(make_strategy("fsdp")->plan(trace, gpu, k).memory.step_buffer_bytes == 4 * elems / 4);
  k.optimizer_impl = OptimizerImpl::for_loop;
  CHECK(make_strategy("fsdp")->plan(trace, gpu, k).memory.step_buffer_bytes == 2 * 4 * largest / 4);
}
