// redsim collective's speed: 28 sizes (64 B .. 8 GiB) of the five collectives on a 16-node,
// 128-GPU preset at the scalable fidelity, in one simulation (the goal: under 2 s wall); and the
// exact fidelity on streamed LL128 chains and trees; PAT on single-GPU nodes.
#include <benchmark/benchmark.h>

#include "core/cluster_json.h"
#include "sim/collective_sweep.h"

namespace {

void BM_CollectiveSweep(benchmark::State& state, const char* preset) {
  const auto cluster = redsim::load_cluster(std::string(REDSIM_SOURCE_DIR "/configs/") + preset + ".json");
  redsim::SweepOptions o;
  o.ops = {redsim::OpKind::allreduce, redsim::OpKind::reduce_scatter, redsim::OpKind::allgather, redsim::OpKind::broadcast,
           redsim::OpKind::reduce};
  o.min_bytes = 64;
  o.max_bytes = 8LL << 30;
  o.step_factor = 2;
  o.fidelity = redsim::Fidelity::scalable;
  std::size_t rows = 0;
  for (auto _ : state) rows = redsim::collective_sweep(cluster, o).size();
  state.counters["rows"] = static_cast<double>(rows);
  state.counters["ranks"] = cluster.world_size();
}

// The exact fidelity's streamed pipelines (sim/stream_edge.h): LL128 broadcast and reduce
// chains and tree allreduces, 64 KiB .. 256 MiB, on one DGX A100 and on two; every 4 KiB piece
// is a SimGrid comm, with as many in flight per edge as cover its hop's latency.
void BM_StreamedExact(benchmark::State& state, const char* preset, redsim::Algorithm algorithm) {
  const auto cluster = redsim::load_cluster(std::string(REDSIM_SOURCE_DIR "/configs/") + preset + ".json");
  redsim::SweepOptions o;
  if (algorithm == redsim::Algorithm::tree) o.ops = {redsim::OpKind::allreduce};
  else o.ops = {redsim::OpKind::broadcast, redsim::OpKind::reduce};
  o.min_bytes = 64 << 10;
  o.max_bytes = 256 << 20;
  o.step_factor = 4;
  o.request = {algorithm, redsim::Protocol::ll128, 0};
  o.fidelity = redsim::Fidelity::exact;
  std::size_t rows = 0;
  for (auto _ : state) rows = redsim::collective_sweep(cluster, o).size();
  state.counters["rows"] = static_cast<double>(rows);
  state.counters["ranks"] = cluster.world_size();
}

// PAT (NCCL 2.23+, one GPU a node): allgather and reduce-scatter, 64 B .. 8 GiB, on `nodes` copies
// of the 100 GbE preset's single-GPU node under NCCL 2.26.2, at the scalable fidelity (a stage a
// round, a flow a rank: n log2 n flows a size) and the exact one (a SimGrid comm a rank a round).
void BM_PatSweep(benchmark::State& state, int nodes, redsim::Fidelity fidelity) {
  auto cluster = redsim::load_cluster(REDSIM_SOURCE_DIR "/configs/ethernet-100g-x8.json");
  cluster.nodes = nodes;
  cluster.nccl_version = 22602;
  redsim::SweepOptions o;
  o.ops = {redsim::OpKind::allgather, redsim::OpKind::reduce_scatter};
  o.min_bytes = 64;
  o.max_bytes = 8LL << 30;
  o.step_factor = 2;
  o.fidelity = fidelity;
  o.request = {redsim::Algorithm::pat, std::nullopt, 0};  // NCCL_ALGO=PAT: no rings in the sweep
  std::size_t rows = 0;
  for (auto _ : state) rows = redsim::collective_sweep(cluster, o).size();
  state.counters["rows"] = static_cast<double>(rows);
  state.counters["ranks"] = cluster.world_size();
}

BENCHMARK_CAPTURE(BM_PatSweep, pat_64_nodes_exact, 64, redsim::Fidelity::exact)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
BENCHMARK_CAPTURE(BM_PatSweep, pat_1024_nodes_scalable, 1024, redsim::Fidelity::scalable)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
BENCHMARK_CAPTURE(BM_StreamedExact, chains_dgx_a100, "dgx-a100", redsim::Algorithm::ring)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
BENCHMARK_CAPTURE(BM_StreamedExact, tree_dgx_a100_x2, "dgx-a100-x2", redsim::Algorithm::tree)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
BENCHMARK_CAPTURE(BM_CollectiveSweep, dgx_h100_x16, "dgx-h100-x16")->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK_CAPTURE(BM_CollectiveSweep, dgx_h100_x128, "dgx-h100-x128")->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
