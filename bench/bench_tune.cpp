// redsim tune's speed and quality: the guided search on the problem (GPT-2 XL on 16 DGX
// H100 nodes = 128 ranks, 80 GB per device, 4 micro-batches, LocalSGD period up to 8), timed,
// then the exhaustive search of the same grid (untimed) for the gap to its optimum. A smaller
// case (ResNet-50 on 2 nodes, exact fidelity) runs the same way: ~40 s guided, ~15 min exhaustive.
//   ./build/bench/bench_tune --benchmark_counters_tabular=true
//   REDSIM_BENCH_TUNE_NO_EXHAUSTIVE=1 ./build/bench/bench_tune   # guided only: the exhaustive GPT-2 XL
//   reference takes hours here (tree allreduces over 8-16 channels are slow to simulate)
// BM_TuneTargets is `redsim tune --target all` on the README's problem (GPT-2 XL on 16 DGX H100,
// 80 GB, M = 1): the five targets' searches with their shared simulation cache, timed (wall_s),
// then each target's exhaustive search (bounded by its guided best, as above; shared cache of its
// own), untimed, for gap_<target>_pct. REDSIM_BENCH_TUNE_STRATEGIES=a,b narrows both, as
// --strategies does.
//   ./build/bench/bench_tune --benchmark_filter=Targets --benchmark_counters_tabular=true
// Counters: simulations (guided), grid_points, sim_fraction (simulations / grid points),
// exhaustive_sims, exhaustive_bounded_out (settings whose compute floor alone exceeds the guided
// best, so they cannot be the optimum, skipped), exhaustive_wall_s, gap_pct (guided best vs
// exhaustive best, in %).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "core/cluster_json.h"
#include "core/error.h"
#include "core/trace_json.h"
#include "tune/sim_cache.h"
#include "tune/targets.h"
#include "tune/tuner.h"

namespace {

void BM_Tune(benchmark::State& state, const char* model, const char* cluster_name, int microbatches, int max_h) {
  using namespace redsim;
  const auto trace = load_trace(std::string(REDSIM_SOURCE_DIR "/traces/") + model + ".json");
  const auto cluster = load_cluster(std::string(REDSIM_SOURCE_DIR "/configs/") + cluster_name + ".json");
  tune::TuneConstraints c;
  c.memory_per_device_GB = 80;
  c.microbatches = microbatches;
  c.max_localsgd_period = max_h;
  const auto axes = tune::standard_axes(c);
  tune::TuneOptions opt;  // guided, all cores, auto fidelity
  tune::TuneResult guided;
  for (auto _ : state) guided = tune::autotune(trace, cluster, c, axes, opt);
  state.counters["simulations"] = guided.simulations;
  state.counters["grid_points"] = static_cast<double>(guided.grid.points.size());
  state.counters["sim_fraction"] = static_cast<double>(guided.simulations) / static_cast<double>(guided.grid.points.size());
  state.counters["best_ms"] = guided.eval(guided.best).objective_s * 1e3;
  state.SetLabel(guided.candidate(guided.best).family + ": " + tune::describe_knobs(guided.candidate(guided.best)) + " (" +
                 std::string(fidelity_name(guided.fidelity)) + ")");
  if (std::getenv("REDSIM_BENCH_TUNE_NO_EXHAUSTIVE")) return;
  opt.method = tune::SearchMethod::exhaustive;
  // Settings whose compute floor exceeds the guided best cannot beat it: the exhaustive optimum
  // is found among the others (branch and bound), which saves the long simulations of the rest.
  opt.exhaustive_bound_s = guided.eval(guided.best).objective_s;
  opt.on_progress = [](const tune::TuneProgress& p) {
    if (p.end_of_round)
      std::fprintf(stderr, "exhaustive: %d/%d simulations, best %.3f ms\n", p.simulations, p.budget,
                   p.best_objective_s.value_or(0) * 1e3);
  };
  const auto t0 = std::chrono::steady_clock::now();
  const auto ex = tune::autotune(trace, cluster, c, axes, opt);
  state.counters["exhaustive_wall_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  state.counters["exhaustive_sims"] = ex.simulations;
  state.counters["exhaustive_bounded_out"] = static_cast<double>(ex.bounded_out);
  state.counters["exhaustive_best_ms"] = ex.eval(ex.best).objective_s * 1e3;
  state.counters["gap_pct"] = 100.0 * (guided.eval(guided.best).objective_s / ex.eval(ex.best).objective_s - 1.0);
}

void BM_TuneTargets(benchmark::State& state) {
  using namespace redsim;
  const auto trace = load_trace(REDSIM_SOURCE_DIR "/traces/gpt2-xl.json");
  const auto cluster = load_cluster(REDSIM_SOURCE_DIR "/configs/dgx-h100-x16.json");
  tune::TuneConstraints c;
  c.memory_per_device_GB = 80;
  if (const char* s = std::getenv("REDSIM_BENCH_TUNE_STRATEGIES")) {
    std::string text = s;
    for (std::size_t b = 0; b <= text.size();) {
      const auto e = std::min(text.find(',', b), text.size());
      c.strategies.push_back(text.substr(b, e - b));
      b = e + 1;
    }
  }
  std::vector<tune::TargetSection> guided;
  int sims = 0;
  for (auto _ : state) {
    guided.clear();
    tune::TuneOptions opt;
    opt.cache = std::make_shared<tune::SimCache>();
    for (const auto& t : tune::target_names()) {
      try {
        guided.push_back(tune::tune_target(trace, cluster, c, t, opt));
      } catch (const InputError&) {  // the target runs none of the strategies given
      }
    }
    sims = static_cast<int>(opt.cache->size());
  }
  state.counters["simulations"] = sims;
  tune::TuneOptions ex;
  ex.method = tune::SearchMethod::exhaustive;
  ex.cache = std::make_shared<tune::SimCache>();
  for (const auto& g : guided) {
    ex.exhaustive_bound_s = g.best_s;  // nothing whose compute floor exceeds it can beat it
    ex.sim.fidelity = g.result.fidelity;
    const auto e = tune::tune_target(trace, cluster, c, g.target, ex);
    const double gap_pct = 100.0 * (g.best_s / e.best_s - 1.0);
    state.counters["gap_" + g.target + "_pct"] = gap_pct;
    std::fprintf(stderr, "%-9s guided %.3f ms (%d simulations, %d reused), exhaustive %.3f ms (%zu settings bounded out): gap %.4f%%\n",
                 g.target.c_str(), g.best_s * 1e3, g.result.simulations, g.result.reused, e.best_s * 1e3,
                 e.result.bounded_out, gap_pct);
  }
}

BENCHMARK(BM_TuneTargets)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Tune, resnet50_dgx_h100_x2, "resnet50", "dgx-h100-x2", 1, 4)
    ->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Tune, gpt2_xl_dgx_h100_x16, "gpt2-xl", "dgx-h100-x16", 4, 8)
    ->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
