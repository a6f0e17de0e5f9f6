// The scalable fidelity at scale, and against the exact fidelity at 256 ranks.
//
//   ./build/bench/bench_scale --benchmark_counters_tabular=true
//   ./build/bench/bench_scale --benchmark_filter=Scale     # only the scaling runs
//   ./build/bench/bench_scale --benchmark_filter=Agreement # only exact vs scalable at 256 ranks
//
// BM_Scale: one bucketed GPT-2 XL step (DDP defaults: 25 MiB buckets, 1 MiB first bucket, ring,
// one channel) on DGX H100 nodes behind the fat-tree of configs/dgx-h100-x2048.json, from 64 to
// 16,384 ranks, and on the two presets dgx-h100-x128 (1,024 GPUs) and dgx-h100-x2048 (16,384
// GPUs) as they are. Each simulation runs as simulate() runs it, in a forked child that sends
// the whole Timeline back; the child measures its own peak memory (getrusage(RUSAGE_SELF)) and
// returns it with the Timeline. Wall time covers the fork, the simulation and the transfer.
// Counters: ranks, buckets, flows (the flows the scalable model simulates), wall_s,
// peak_rss_MB (the simulating child), us_per_rank_bucket (wall time / (ranks x buckets): flat or
// falling means growth no faster than linear in ranks x buckets), sim_step_ms.
//
// BM_Agreement: ResNet-50 at 256 ranks (32 DGX H100 nodes), every strategy and algorithm, on the
// non-blocking fat-tree and on an oversubscribed one (2 nodes per leaf, 2 NICs per node,
// oversubscription 8: ring uplinks carry less than a NIC), exact and scalable; counters: the
// two step times and the error in percent.
#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <string>

#include <benchmark/benchmark.h>

#include "core/cluster_json.h"
#include "core/step_summary.h"
#include "core/trace_json.h"
#include "sim/child_process.h"
#include "sim/scalable_model.h"
#include "sim/sim_engine.h"
#include "strategies/strategy.h"

namespace {

using namespace redsim;

struct ChildRun {
  Timeline timeline;
  double peak_rss_MB = 0;
  double wall_s = 0;
};

// simulate(), with the child's own peak memory appended to the Timeline it sends back.
ChildRun run_measured(const Plan& plan, const ClusterSpec& cluster, Fidelity fidelity) {
  ChildRun out;
  out.timeline = Timeline::folded("simulated", plan.world_size, plan.ops.size());
  const auto t0 = std::chrono::steady_clock::now();
  const std::string got = run_in_child([&] {
    Timeline tl = simulate_in_process(plan, cluster, SimOptions{false, fidelity});
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    const double rss_MB = static_cast<double>(ru.ru_maxrss) / 1024.0;  // Linux: kilobytes
    tl.fold();
    std::string s = tl.serialize();
    s.append(reinterpret_cast<const char*>(&rss_MB), sizeof rss_MB);
    return s;
  });
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (got.size() < sizeof(double)) throw std::runtime_error("truncated timeline from the simulating child");
  const std::size_t bytes = got.size() - sizeof(double);
  out.timeline.deserialize(got.substr(0, bytes));
  std::memcpy(&out.peak_rss_MB, got.data() + bytes, sizeof(double));
  return out;
}

double step_of(const Timeline& tl) {
  return tl.last_end_s();
}

void scale_step(benchmark::State& state, const ClusterSpec& cluster) {
  const auto trace = load_trace(REDSIM_SOURCE_DIR "/traces/gpt2-xl.json");
  Knobs knobs;  // DDP defaults
  const auto plan = make_strategy("bucketed")->plan(trace, cluster, knobs);
  int buckets = 0;
  for (const auto& op : plan.ops) buckets += op.kind == OpKind::allreduce ? 1 : 0;
  const auto flows = scalable::count_scalable_activities(plan, cluster).flows;
  ChildRun run;
  for (auto _ : state) run = run_measured(plan, cluster, Fidelity::scalable);
  const int n = cluster.world_size();
  state.counters["ranks"] = n;
  state.counters["buckets"] = buckets;
  state.counters["flows"] = static_cast<double>(flows);
  state.counters["wall_s"] = run.wall_s;
  state.counters["peak_rss_MB"] = run.peak_rss_MB;
  state.counters["us_per_rank_bucket"] = run.wall_s * 1e6 / (static_cast<double>(n) * buckets);
  state.counters["sim_step_ms"] = step_of(run.timeline) * 1e3;
}

void BM_Scale(benchmark::State& state) {
  auto cluster = load_cluster(REDSIM_SOURCE_DIR "/configs/dgx-h100-x2048.json");
  cluster.nodes = static_cast<int>(state.range(0)) / cluster.devices_per_node;
  scale_step(state, cluster);
}
BENCHMARK(BM_Scale)
    ->Arg(64)->Arg(256)->Arg(1024)->Arg(4096)->Arg(16384)
    ->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_ScalePreset(benchmark::State& state, const char* preset) {
  scale_step(state, load_cluster(std::string(REDSIM_SOURCE_DIR "/configs/") + preset + ".json"));
}
BENCHMARK_CAPTURE(BM_ScalePreset, dgx_h100_x128, "dgx-h100-x128")->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_ScalePreset, dgx_h100_x2048, "dgx-h100-x2048")->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();

// Exact vs scalable at 256 ranks. Argument: strategy index x 3 + algorithm index; the capture
// says whether the fat-tree is oversubscribed.
void BM_Agreement(benchmark::State& state, bool oversubscribed) {
  static const char* kStrategies[] = {"flat", "bucketed", "zero", "accumulate", "localsgd"};
  static const Algorithm kAlgorithms[] = {Algorithm::ring, Algorithm::tree, Algorithm::hierarchical};
  const auto strategy = kStrategies[state.range(0) / 3];
  const auto algorithm = kAlgorithms[state.range(0) % 3];
  auto cluster = load_cluster(REDSIM_SOURCE_DIR "/configs/dgx-h100-x2048.json");
  cluster.nodes = 32;
  if (oversubscribed) {
    cluster.inter.nodes_per_leaf = 2;
    cluster.inter.nics_per_node = 2;
    cluster.inter.oversubscription = 8;
  }
  const auto trace = load_trace(REDSIM_SOURCE_DIR "/traces/resnet50.json");
  Knobs knobs;
  knobs.strategy = strategy;
  knobs.algorithm = algorithm;
  knobs.microbatches = 4;     // accumulate: deferred sync over 4 micro-batches
  knobs.localsgd_period = 4;  // localsgd: average every 4 steps
  const auto plan = make_strategy(strategy)->plan(trace, cluster, knobs);
  double exact_s = 0, scalable_s = 0, exact_wall = 0, scalable_wall = 0;
  for (auto _ : state) {
    auto e = run_measured(plan, cluster, Fidelity::exact);
    auto s = run_measured(plan, cluster, Fidelity::scalable);
    exact_s = summarize(plan, e.timeline).step_time_s;
    scalable_s = summarize(plan, s.timeline).step_time_s;
    exact_wall = e.wall_s;
    scalable_wall = s.wall_s;
  }
  state.SetLabel(std::string(strategy) + "/" + std::string(algorithm_name(algorithm)) + (oversubscribed ? "/oversubscribed" : ""));
  state.counters["exact_step_ms"] = exact_s * 1e3;
  state.counters["scalable_step_ms"] = scalable_s * 1e3;
  state.counters["error_pct"] = (scalable_s - exact_s) / exact_s * 100;
  state.counters["exact_wall_s"] = exact_wall;
  state.counters["scalable_wall_s"] = scalable_wall;
}
BENCHMARK_CAPTURE(BM_Agreement, nonblocking, false)->DenseRange(0, 14)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Agreement, oversubscribed, true)->DenseRange(0, 14)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
