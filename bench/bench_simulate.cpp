// Simulator speed and memory: one bucketed step (DDP defaults: NCCL's own algorithm, protocol and
// channels) of ResNet-50 and GPT-2 XL on DGX H100 nodes, at the exact fidelity where --fidelity
// auto would pick it or just past that (every LL/LL128 piece is a transfer, so ResNet-50 on 64
// ranks is already 1.3 M of them), and at the scalable one up to 1,024 ranks. Each simulation runs
// in its own child process, which reports its own peak RSS.
//   ./build/bench/bench_simulate --benchmark_counters_tabular=true
#include <sys/resource.h>

#include <cstdio>

#include <benchmark/benchmark.h>

#include "core/cluster_json.h"
#include "core/trace_json.h"
#include "sim/child_process.h"
#include "sim/sim_engine.h"
#include "strategies/strategy.h"

namespace {

void BM_BucketedStep(benchmark::State& state, const char* model, redsim::Fidelity fidelity) {
  const int nodes = static_cast<int>(state.range(0)) / 8;
  auto trace = redsim::load_trace(std::string(REDSIM_SOURCE_DIR "/traces/") + model + ".json");
  auto cluster = redsim::load_cluster(REDSIM_SOURCE_DIR "/configs/dgx-h100-x2.json");
  cluster.nodes = nodes;
  redsim::Knobs knobs;
  auto plan = redsim::make_strategy("bucketed")->plan(trace, cluster, knobs);
  // What the exact fidelity moves; the scalable one folds them into flows over one period.
  const std::int64_t transfers = redsim::estimated_exact_transfers(plan, cluster);
  const int n = cluster.world_size();
  double step_s = 0;
  long peak_rss_kB = 0;
  for (auto _ : state) {
    auto out = redsim::run_in_child([&] {
      redsim::SimOptions options;
      options.fidelity = fidelity;
      auto tl = redsim::simulate_in_process(plan, cluster, options);
      const double end = tl.last_end_s();
      rusage ru{};
      getrusage(RUSAGE_SELF, &ru);
      return std::to_string(end) + " " + std::to_string(ru.ru_maxrss);
    });
    std::sscanf(out.c_str(), "%lf %ld", &step_s, &peak_rss_kB);
  }
  state.counters["ranks"] = n;
  state.counters["transfers"] = static_cast<double>(transfers);
  if (fidelity == redsim::Fidelity::exact)
    state.counters["transfers_per_s"] = benchmark::Counter(static_cast<double>(transfers), benchmark::Counter::kIsRate);
  state.counters["peak_rss_MB"] = static_cast<double>(peak_rss_kB) / 1024.0;
  state.counters["sim_step_ms"] = step_s * 1e3;
}

BENCHMARK_CAPTURE(BM_BucketedStep, resnet50_exact, "resnet50", redsim::Fidelity::exact)
    ->Arg(8)->Arg(64)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_BucketedStep, gpt2_xl_exact, "gpt2-xl", redsim::Fidelity::exact)
    ->Arg(8)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_BucketedStep, resnet50_scalable, "resnet50", redsim::Fidelity::scalable)
    ->Arg(8)->Arg(64)->Arg(256)->Arg(1024)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_BucketedStep, gpt2_xl_scalable, "gpt2-xl", redsim::Fidelity::scalable)
    ->Arg(8)->Arg(64)->Arg(256)->Arg(1024)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
