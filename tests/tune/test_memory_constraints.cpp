// Memory constraints exclude exactly the settings that do not fit. The expected per-rank memory
// is computed here from the ZeRO paper's accounting, for Psi fp32 parameters on N ranks:
// params 4 Psi, gradients 4 Psi (stage 2: 4 Psi / N), Adam state 8 Psi / N with ZeRO (8 Psi
// without), plus communication buffers: DDP's bucket copy of all gradients (4 Psi); ZeRO's
// largest reduce bucket and one allgather bucket (at most the whole model).
#include <catch2/catch.hpp>

#include <algorithm>

#include "core/error.h"
#include "core/units.h"
#include "tests/test_support.h"
#include "tune/tune_output.h"
#include "tune/tuner.h"

using namespace redsim;
using namespace redsim::tune;

namespace {

constexpr int kLayers = 16;
constexpr std::int64_t kNumel = 1 << 18;  // 1 MiB of fp32 per parameter
constexpr int kRanks = 4;

std::int64_t expected_memory(const Candidate& c) {
  const std::int64_t psi = kLayers * kNumel, p = 4 * kNumel;
  auto shard = [](std::int64_t x) { return (x + kRanks - 1) / kRanks; };
  // The DDP family: parameters, gradients, Adam, buckets; after backward, on this cluster of CPU
  // devices, the for-loop Adam's two temporaries of the largest tensor (kNumel elements, fp32),
  // or LocalSGD's copy of every parameter. DeepSpeed's ZeRO steps fused: nothing more.
  if (c.family != "zero") return 4 * psi + 4 * psi + 8 * psi + 4 * psi + (c.family == "localsgd" ? 4 * psi : 2 * p);
  // DeepSpeed's reduce buckets close before a gradient would overflow them.
  const std::int64_t per_bucket = std::max<std::int64_t>(1, c.knobs.bucket_cap_bytes / p);
  const std::int64_t largest = std::min<std::int64_t>(per_bucket, kLayers) * p;
  const std::int64_t grads = c.knobs.zero_stage >= 2 ? shard(4 * psi) : 4 * psi;
  return 4 * psi + grads + shard(8 * psi) + largest + std::min(c.knobs.allgather_bucket_bytes, 4 * psi);
}

struct Setup {
  ModelTrace trace = testing::uniform_trace(kLayers, kNumel, 1e-4, 2e-4, 1e-4);
  ClusterSpec cluster = testing::ideal_star(kRanks, 1.25e9, 1e-5);
  TuneConstraints constraints;
  SearchAxes axes;
  Setup() {
    constraints.strategies = {"bucketed", "zero"};
    axes = standard_axes(constraints);
    axes.channels = {1, 2};
    axes.algorithms = {Algorithm::ring};
    axes.allgather_bucket_bytes = {4 * kMiB, 8 * kMiB, 16 * kMiB, 64 * kMiB};
  }
};

// DDP alone (80 MiB of model state: 20 Psi), one channel, ring: its buckets are the grid.
Setup bucketed_only() {
  Setup s;
  s.constraints.strategies = {"bucketed"};
  s.axes = standard_axes(s.constraints);
  s.axes.channels = {1};
  s.axes.algorithms = {Algorithm::ring};
  return s;
}

}  // namespace

TEST_CASE("the memory limit excludes exactly the settings that do not fit", "[tune][memory]") {
  Setup s;
  s.constraints.memory_per_device_GB = 0.05;  // 50,000,000 bytes
  const std::int64_t limit = 50'000'000;
  const auto r = autotune(s.trace, s.cluster, s.constraints, s.axes, TuneOptions{});
  CHECK(r.memory_limit_bytes == limit);
  std::size_t fit = 0, zero_fit = 0, zero_out = 0;
  for (std::size_t p = 0; p < r.points.size(); ++p) {
    const auto& c = r.candidate(p);
    INFO(c.family << ": " << describe_knobs(c));
    CHECK(r.points[p].memory.total_bytes() == expected_memory(c));
    CHECK(r.points[p].fits == (expected_memory(c) <= limit));
    if (!r.points[p].fits) CHECK_FALSE(r.evaluated(p));  // never simulated
    fit += r.points[p].fits ? 1 : 0;
    if (c.family == "zero") (r.points[p].fits ? zero_fit : zero_out) += 1;
  }
  CHECK(r.feasible_points == fit);
  // The limit cuts through the ZeRO settings and excludes every DDP one (20 Psi = 83.9 MB).
  CHECK(zero_fit > 0);
  CHECK(zero_out > 0);
  CHECK(r.points[r.best].fits);
  CHECK(r.candidate(r.best).family == "zero");

  // The report says why, with the numbers.
  const auto groups = exclusion_groups(r);
  REQUIRE(groups.size() >= 2);
  CHECK(groups[0].family == "bucketed");
  CHECK(groups[0].excluded == groups[0].total);
  CHECK(groups[0].least.total_bytes() == 20 * kLayers * kNumel + 2 * 4 * kNumel);
  // In MiB: 20 Psi = 83,886,080 bytes = 80 MiB, plus the for-loop Adam's two 1 MiB temporaries;
  // the limit 5e7 / 2^20 = 47.68 MiB; the optimizer's 8 Psi (fp32 Adam moments) = 33,554,432
  // bytes = 32 MiB.
  CHECK(groups[0].reason.find("82.00 MiB per rank > 47.68 MiB") != std::string::npos);
  CHECK(groups[0].reason.find("optimizer 32.00 MiB") != std::string::npos);
  std::size_t grouped = 0;
  for (const auto& g : groups) grouped += g.excluded;
  CHECK(grouped == r.points.size() - fit);
}

TEST_CASE("the memory limit defaults to the cluster's device memory, and 0 means none", "[tune][memory]") {
  Setup s;
  s.cluster.device.memory_GB = 0.05;
  const auto a = autotune(s.trace, s.cluster, s.constraints, s.axes, TuneOptions{});
  CHECK(a.memory_limit_bytes == 50'000'000);
  CHECK(a.feasible_points < a.points.size());
  s.constraints.memory_per_device_GB = 0;
  const auto b = autotune(s.trace, s.cluster, s.constraints, s.axes, TuneOptions{});
  CHECK(b.memory_limit_bytes == 0);
  CHECK(b.feasible_points == b.points.size());
}

TEST_CASE("when nothing fits the error names the smallest requirement", "[tune][memory]") {
  Setup s;
  s.constraints.memory_per_device_GB = 0.001;
  const std::string what = testing::error_of([&] { autotune(s.trace, s.cluster, s.constraints, s.axes, TuneOptions{}); });
  REQUIRE_FALSE(what.empty());  // an InputError
  // 0.001 GB = 10^6 bytes = 10^6 / 2^20 = 0.954 MiB: memory prints in binary units everywhere.
  CHECK(what.find("no setting fits in 0.95 MiB per device") != std::string::npos);
  CHECK(what.find("zero") != std::string::npos);
  CHECK(what.find('\n') == std::string::npos);
}

TEST_CASE("the memory limit counts the trace's activations", "[tune][memory]") {
  Setup s = bucketed_only();
  // DDP holds 20 Psi = 80 MiB of model state (above); 1 MiB of saved activations per layer adds
  // 16 MiB. A 90 MiB limit fits the model state alone and nothing with the activations.
  s.constraints.memory_per_device_GB = 90.0 * kMiB / 1e9;
  const auto bare = autotune(s.trace, s.cluster, s.constraints, s.axes, TuneOptions{});
  CHECK(bare.feasible_points == bare.points.size());
  for (auto& l : s.trace.layers) l.activation_bytes = kMiB;
  const std::string what = testing::error_of([&] { autotune(s.trace, s.cluster, s.constraints, s.axes, TuneOptions{}); });
  REQUIRE_FALSE(what.empty());  // an InputError
  CHECK(what.find("needs 96.00 MiB") != std::string::npos);
  CHECK(what.find("activations 16.00 MiB") != std::string::npos);
}

TEST_CASE("tune checkpoints activations only where a setting does not fit without it", "[tune][memory][checkpointing]") {
  Setup s = bucketed_only();
  // 80 MiB of model state (above). Layers blk.0.a, blk.0.b, ..., blk.7.b: 8 blocks of two, each
  // layer saving 1 MiB and given 0.25 MiB. Without checkpointing 16 MiB are held (96 MiB in all).
  // With the first n blocks checkpointed forward ends holding (8 - n) x 2 + n x 0.25 MiB, and
  // block n-1's recompute holds (n - 1) x 0.25 + 2 MiB. Under a 90 MiB limit the activations may
  // take 10 MiB: 16 - 1.75 n <= 10 first at n = 4 (9 MiB held, 89 MiB in all). All 8: forward
  // keeps 2 MiB, block 7's recompute 7 x 0.25 + 2 = 3.75 MiB, 83.75 MiB in all.
  for (std::size_t l = 0; l < s.trace.layers.size(); ++l) {
    s.trace.layers[l].name = "blk." + std::to_string(l / 2) + (l % 2 ? ".b" : ".a");
    s.trace.layers[l].activation_bytes = kMiB;
    s.trace.layers[l].input_bytes = kMiB / 4;
  }
  for (auto& p : s.trace.params) p.name = s.trace.layers[p.layer].name + ".weight";
  const std::int64_t first_four = 89 * kMiB, all_eight = 80 * kMiB + 15 * kMiB / 4;

  // 90 MiB: only checkpointed copies fit: every setting checkpoints its first 4 blocks, and says so.
  s.constraints.memory_per_device_GB = 90.0 * kMiB / 1e9;
  const auto fitted = autotune(s.trace, s.cluster, s.constraints, s.axes, TuneOptions{});
  CHECK(fitted.feasible_points == fitted.points.size());
  for (std::size_t p = 0; p < fitted.points.size(); ++p) {
    CHECK(fitted.grid.points[p].knobs.activation_checkpointing == ActivationCheckpointing::blocks);
    CHECK(fitted.grid.points[p].knobs.checkpointed_blocks == 4);
    CHECK(fitted.points[p].memory.total_bytes() == first_four);
  }
  CHECK(describe_knobs(fitted.candidate(fitted.best)).find("first 4 blocks checkpointed") != std::string::npos);
  CHECK(std::any_of(fitted.grid.notes.begin(), fitted.grid.notes.end(),
                    [](const std::string& n) { return n.find("activation checkpointing") != std::string::npos; }));

  // 100 MiB: everything fits as it is, and nothing is checkpointed (the recompute only costs).
  s.constraints.memory_per_device_GB = 100.0 * kMiB / 1e9;
  const auto roomy = autotune(s.trace, s.cluster, s.constraints, s.axes, TuneOptions{});
  for (const auto& c : roomy.grid.points) CHECK(c.knobs.activation_checkpointing == ActivationCheckpointing::none);

  // --activation-checkpointing none at 90 MiB: nothing fits; blocks at 100 MiB: every setting.
  s.constraints.memory_per_device_GB = 90.0 * kMiB / 1e9;
  s.constraints.activation_checkpointing = ActivationCheckpointing::none;
  CHECK(testing::error_of([&] { autotune(s.trace, s.cluster, s.constraints, s.axes, TuneOptions{}); })
            .find("needs 96.00 MiB") != std::string::npos);
  s.constraints.memory_per_device_GB = 100.0 * kMiB / 1e9;
  s.constraints.activation_checkpointing = ActivationCheckpointing::blocks;
  const auto forced = autotune(s.trace, s.cluster, s.constraints, s.axes, TuneOptions{});
  for (const auto& c : forced.grid.points) CHECK(c.knobs.activation_checkpointing == ActivationCheckpointing::blocks);
  for (const auto& ps : forced.points) CHECK(ps.memory.total_bytes() == all_eight);
  // 84 MiB: n = 6 holds 2 x 2 + 6 x 0.25 = 5.5 MiB after forward (85.5 in all); n = 7 holds
  // 2 + 1.75 = 3.75 after forward and 6 x 0.25 + 2 = 3.5 in block 6's recompute: 83.75 MiB.
  s.constraints.activation_checkpointing.reset();
  s.constraints.memory_per_device_GB = 84.0 * kMiB / 1e9;
  const auto tight = autotune(s.trace, s.cluster, s.constraints, s.axes, TuneOptions{});
  for (const auto& c : tight.grid.points) CHECK(c.knobs.checkpointed_blocks == 7);
  for (const auto& ps : tight.points) CHECK(ps.memory.total_bytes() == 80 * kMiB + 15 * kMiB / 4);
  // The same setting checkpointed is slower by the blocks' recompute (every layer forwards in 0.1 ms).
  CHECK(forced.eval(forced.best).objective_s > roomy.eval(roomy.best).objective_s);
}

TEST_CASE("tune's --optimizer-impl holds for every setting and moves its memory", "[tune][memory]") {
  // DDP alone: 20 Psi of model state; the for-loop Adam's two 1 MiB temporaries (CPU devices,
  // the default) or none (fused).
  auto s = bucketed_only();
  auto r = autotune(s.trace, s.cluster, s.constraints, s.axes, TuneOptions{});
  const std::int64_t state = 20 * kLayers * kNumel;
  for (std::size_t p = 0; p < r.points.size(); ++p) {
    CHECK(r.candidate(p).knobs.optimizer_impl == OptimizerImpl::automatic);
    CHECK(r.points[p].memory.total_bytes() == state + 2 * 4 * kNumel);
  }
  s.constraints.optimizer_impl = OptimizerImpl::fused;
  r = autotune(s.trace, s.cluster, s.constraints, s.axes, TuneOptions{});
  for (std::size_t p = 0; p < r.points.size(); ++p) {
    CHECK(r.candidate(p).knobs.optimizer_impl == OptimizerImpl::fused);
    CHECK(r.points[p].memory.total_bytes() == state);
  }
}
