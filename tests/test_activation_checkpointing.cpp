// Activation checkpointing (--activation-checkpointing blocks): each repeated block keeps its
// input, recomputes its forward right before its backward, and what is held at once follows.
// Every expected number below is worked out by hand from the trace's layers.
#include <catch2/catch.hpp>

#include <algorithm>

#include "core/chrome_trace.h"
#include "sim/sim_engine.h"
#include "strategies/checkpointing.h"
#include "strategies/fsdp_units.h"
#include "strategies/strategy.h"
#include "tests/test_support.h"

using namespace redsim;

namespace {

// embed, two blocks of two layers, head. Activations (saved) and inputs (given), bytes:
//   embed 100 / 8, blocks.0.norm 1000 / 200, blocks.0.mlp 500 / 300,
//   blocks.1.norm 1000 / 200, blocks.1.mlp 500 / 300, head 50 / 200.
// Forward times 1, 2, 3, 4, 5, 6 ms.
ModelTrace two_block_trace() {
  auto t = testing::uniform_trace(6, 1 << 16, 1e-3, 2e-3, 1e-4);
  const char* names[] = {"embed", "blocks.0.norm", "blocks.0.mlp", "blocks.1.norm", "blocks.1.mlp", "head"};
  const std::int64_t saved[] = {100, 1000, 500, 1000, 500, 50}, given[] = {8, 200, 300, 200, 300, 200};
  for (std::size_t l = 0; l < 6; ++l) {
    t.layers[l].name = names[l];
    t.layers[l].activation_bytes = saved[l];
    t.layers[l].input_bytes = given[l];
    t.layers[l].forward_s = 1e-3 * static_cast<double>(l + 1);
  }
  for (auto& p : t.params) p.name = t.layers[p.layer].name + ".weight";
  return t;
}

// Without checkpointing everything saved is held when forward ends: 100 + 1500 + 1500 + 50.
constexpr std::int64_t kPlainPeak = 3150;
// With it, forward ends holding embed 100, the two block inputs 200 + 200 and head 50 (550); the
// peak is block 1's recompute: embed 100 + block 0's input 200 + block 1's 1500 (its input is the
// norm's saved input, counted once) = 1800.
constexpr std::int64_t kCheckpointedPeak = 1800;

Knobs knobs_for(const std::string& strategy, ActivationCheckpointing c) {
  Knobs k;
  k.strategy = strategy;
  k.activation_checkpointing = c;
  k.microbatches = strategy == "accumulate" ? 3 : 1;
  k.localsgd_period = strategy == "localsgd" ? 2 : 1;
  return k;
}

}  // namespace

TEST_CASE("checkpointed blocks: a name's prefix up to its first numeric component, consecutive layers", "[strategies][memory][checkpointing]") {
  auto t = two_block_trace();
  t.layers[5].name = "layer4.2.downsample.0";  // a torchvision-style name: its own block
  const auto c = checkpoint_blocks(t, ActivationCheckpointing::blocks);
  REQUIRE(c.blocks.size() == 3);
  CHECK(c.blocks[0].name == "blocks.0");
  CHECK(c.blocks[1].name == "blocks.1");
  CHECK(c.blocks[2].name == "layer4.2");
  CHECK(c.blocks[1].first_layer == 3);
  CHECK(c.blocks[1].last_layer == 4);
  CHECK(c.blocks[1].input_bytes == 200);
  CHECK(c.blocks[1].forward_s == Approx(4e-3 + 5e-3));
  CHECK(c.block_of_layer == std::vector<int>{-1, 0, 0, 1, 1, 2});
  CHECK_FALSE(checkpoint_blocks(t, ActivationCheckpointing::none).on());
}

TEST_CASE("checkpointing keeps the blocks' inputs: every strategy's activation peak follows by hand", "[strategies][memory][checkpointing]") {
  const auto t = two_block_trace();
  const auto cluster = testing::ideal_star(4, 1.25e9, 1e-5);
  for (const auto& name : strategy_names()) {
    INFO(name);
    const auto plain = make_strategy(name)->plan(t, cluster, knobs_for(name, ActivationCheckpointing::none)).memory;
    const auto ckpt = make_strategy(name)->plan(t, cluster, knobs_for(name, ActivationCheckpointing::blocks)).memory;
    CHECK(plain.activation_bytes == kPlainPeak);
    CHECK(ckpt.activation_bytes == kCheckpointedPeak);
    if (name != "fsdp" && name != "hsdp") CHECK(ckpt.model_state_bytes() == plain.model_state_bytes());
  }
}

TEST_CASE("a checkpointed block's recompute costs its forward once more, right before its backward", "[strategies][checkpointing]") {
  const auto t = two_block_trace();
  const auto cluster = testing::ideal_star(4, 1.25e9, 1e-5);
  // Block 0 forwards in 2 + 3 ms, block 1 in 4 + 5: a step on the compute stream takes 14 ms more.
  const double recompute_s = 14e-3;
  for (const std::string name : {"flat", "bucketed", "zero", "fsdp"}) {
    INFO(name);
    const auto plain = make_strategy(name)->plan(t, cluster, knobs_for(name, ActivationCheckpointing::none));
    const auto ckpt = make_strategy(name)->plan(t, cluster, knobs_for(name, ActivationCheckpointing::blocks));
    const auto r1 = testing::op_index(ckpt, "recompute:blocks.1");
    CHECK(ckpt.ops[r1].duration_s == Approx(9e-3));
    CHECK(ckpt.ops[r1].kind == OpKind::backward);
    // On the compute stream the recompute is the op before the block's last layer's backward.
    std::vector<std::size_t> compute;
    for (std::size_t i = 0; i < ckpt.ops.size(); ++i)
      if (ckpt.ops[i].stream == ckpt.ops[r1].stream) compute.push_back(i);
    const auto at = std::find(compute.begin(), compute.end(), r1);
    REQUIRE(at + 1 != compute.end());
    CHECK(*(at + 1) == testing::op_index(ckpt, "bwd:blocks.1.mlp"));
    double plain_compute_s = 0, ckpt_compute_s = 0;
    for (const auto& op : plain.ops)
      if (op.kind == OpKind::forward || op.kind == OpKind::backward) plain_compute_s += op.duration_s;
    for (const auto& op : ckpt.ops)
      if (op.kind == OpKind::forward || op.kind == OpKind::backward) ckpt_compute_s += op.duration_s;
    CHECK(ckpt_compute_s - plain_compute_s == Approx(recompute_s));
  }
  // flat: one allreduce after backward, so the step grows by exactly the recompute, in both fidelities.
  for (auto fidelity : {Fidelity::exact, Fidelity::scalable}) {
    const SimOptions options{false, fidelity};
    const auto plain = make_strategy("flat")->plan(t, cluster, knobs_for("flat", ActivationCheckpointing::none));
    const auto ckpt = make_strategy("flat")->plan(t, cluster, knobs_for("flat", ActivationCheckpointing::blocks));
    CHECK(testing::end_of(simulate(ckpt, cluster, options)) - testing::end_of(simulate(plain, cluster, options)) ==
          Approx(recompute_s).epsilon(1e-6));
  }
}

TEST_CASE("the timeline's activations counter peaks at the checkpointed peak and returns to 0", "[strategies][memory][checkpointing][chrome_trace]") {
  const auto t = two_block_trace();
  const auto cluster = testing::ideal_star(4, 1.25e9, 1e-5);
  for (const std::string name : {"bucketed", "accumulate", "fsdp"}) {
    INFO(name);
    const auto plan = make_strategy(name)->plan(t, cluster, knobs_for(name, ActivationCheckpointing::blocks));
    const auto events = timeline_to_chrome_trace(plan, simulate(plan, cluster));  // kept: the loop reads into it
    std::vector<std::int64_t> held;
    for (const auto& e : events["traceEvents"])
      if (e["ph"] == "C" && e["pid"] == 0 && e["name"] == "activations held (model)")
        held.push_back(e["args"]["bytes"].get<std::int64_t>());
    REQUIRE(held.size() > 2);
    CHECK(*std::max_element(held.begin(), held.end()) == kCheckpointedPeak);
    CHECK(std::count(held.begin(), held.end(), std::int64_t{550}) >= 1);  // forward's end: 100 + 200 + 200 + 50
    CHECK(held.back() == 0);
  }
}

TEST_CASE("fsdp: a block spanning units gathers the earlier ones again for its recompute", "[strategies][fsdp][checkpointing]") {
  const auto t = two_block_trace();  // one FSDP unit per layer (--fsdp-wrap 0)
  const auto cluster = testing::ideal_star(4, 1.25e9, 1e-5);
  auto k = knobs_for("fsdp", ActivationCheckpointing::blocks);
  const auto plan = make_strategy("fsdp")->plan(t, cluster, k);
  // Blocks span units 1-2 and 3-4: units 1 and 3 are gathered a third time, for the recompute.
  int recompute_gathers = 0;
  for (const auto& op : plan.ops) recompute_gathers += op.name.rfind("allgather:recompute:", 0) == 0 ? 1 : 0;
  CHECK(recompute_gathers == 2);
  testing::op_index(plan, "allgather:recompute:unit1");
  testing::op_index(plan, "allgather:recompute:unit3");
  // SHARD_GRAD_OP keeps every unit gathered since forward: nothing to gather again.
  k.reshard_after_forward = false;
  for (const auto& op : make_strategy("fsdp")->plan(t, cluster, k).ops) CHECK(op.name.rfind("allgather:recompute:", 0) != 0);
}

TEST_CASE("checkpointing a trace without input bytes or without blocks is bad input", "[strategies][checkpointing][bad_input]") {
  auto t = two_block_trace();
  const auto cluster = testing::ideal_star(4, 1.25e9, 1e-5);
  const auto k = knobs_for("bucketed", ActivationCheckpointing::blocks);
  for (auto& l : t.layers) l.input_bytes.reset();
  CHECK_THAT(testing::error_of([&] { make_strategy("bucketed")->plan(t, cluster, k); }),
             Catch::StartsWith("--activation-checkpointing blocks: the trace gives no input_bytes"));
  t = two_block_trace();
  for (auto& l : t.layers) l.activation_bytes.reset();
  CHECK_THAT(testing::error_of([&] { make_strategy("bucketed")->plan(t, cluster, k); }),
             Catch::StartsWith("--activation-checkpointing blocks: the trace gives no activation_bytes"));
  t = two_block_trace();
  for (std::size_t l = 0; l < t.layers.size(); ++l) t.layers[l].name = "layer_" + std::string(1, static_cast<char>('a' + l));
  CHECK_THAT(testing::error_of([&] { make_strategy("bucketed")->plan(t, cluster, k); }),
             Catch::Contains("no layer of the trace belongs to a repeated block"));
  // Without checkpointing the same traces plan as before.
  CHECK(testing::error_of([&] { make_strategy("bucketed")->plan(t, cluster, Knobs{}); }).empty());
}

TEST_CASE("checkpointing only the first blocks: the others keep everything", "[strategies][memory][checkpointing]") {
  const auto t = two_block_trace();
  const auto cluster = testing::ideal_star(4, 1.25e9, 1e-5);
  auto k = knobs_for("bucketed", ActivationCheckpointing::blocks);
  k.checkpointed_blocks = 1;
  // Block 0 checkpointed, block 1 not: forward ends holding embed 100 + block 0's input 200 +
  // block 1's 1500 + head 50 = 1850, the peak (block 0's recompute comes after block 1 has freed
  // its 1500: 100 + 200 + 1300 = 1600).
  const auto plan = make_strategy("bucketed")->plan(t, cluster, k);
  CHECK(plan.memory.activation_bytes == 1850);
  int recomputes = 0;
  for (const auto& op : plan.ops) recomputes += op.name.rfind("recompute:", 0) == 0 ? 1 : 0;
  CHECK(recomputes == 1);
  testing::op_index(plan, "recompute:blocks.0");
  k.checkpointed_blocks = 2;  // both: as all
  CHECK(make_strategy("bucketed")->plan(t, cluster, k).memory.activation_bytes == kCheckpointedPeak);
  k.checkpointed_blocks = 3;
  CHECK_THAT(testing::error_of([&] { make_strategy("bucketed")->plan(t, cluster, k); }),
             Catch::StartsWith("--checkpointed-blocks 3: the trace has 2 repeated blocks"));
  k.activation_checkpointing = ActivationCheckpointing::none;
  k.checkpointed_blocks = 1;
  CHECK_THAT(testing::error_of([&] { make_strategy("bucketed")->plan(t, cluster, k); }),
             Catch::StartsWith("--checkpointed-blocks 1: needs --activation-checkpointing blocks"));
}

TEST_CASE("fsdp --fsdp-wrap blocks: a unit per block, the layers between blocks units of their own", "[strategies][fsdp][checkpointing]") {
  const auto t = two_block_trace();  // embed, blocks.0.{norm,mlp}, blocks.1.{norm,mlp}, head
  const auto units = fsdp_block_units(t, 4);
  REQUIRE(units.size() == 4);
  CHECK(units[0].layers == std::vector<std::size_t>{0});
  CHECK(units[1].layers == std::vector<std::size_t>{1, 2});
  CHECK(units[2].layers == std::vector<std::size_t>{3, 4});
  CHECK(units[3].layers == std::vector<std::size_t>{5});
  // Every parameter in exactly one unit.
  std::vector<int> seen(t.params.size(), 0);
  for (const auto& u : units)
    for (const auto& f : u.flats)
      for (auto p : f.params) ++seen[p];
  CHECK(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));

  const auto cluster = testing::ideal_star(4, 1.25e9, 1e-5);
  auto k = knobs_for("fsdp", ActivationCheckpointing::blocks);
  k.fsdp_wrap_blocks = true;
  const auto plan = make_strategy("fsdp")->plan(t, cluster, k);
  // Each unit gathered before forward and before backward; a block's recompute lies inside its
  // own unit, so nothing is gathered again (per-layer units re-gather 2, the test above).
  int gathers = 0;
  for (const auto& op : plan.ops) {
    gathers += op.kind == OpKind::allgather ? 1 : 0;
    CHECK(op.name.rfind("allgather:recompute:", 0) != 0);
  }
  CHECK(gathers == 8);
  testing::op_index(plan, "allgather:fwd:unit1");
}
