// nccl-tests-style collective sweeps on a real backend, for redsim calibrate: allreduce, reduce,
// reduce-scatter, allgather and broadcast over float32 buffers from min_bytes doubling up to
// max_bytes, `iters` timed iterations each after `warmup` untimed ones. Times are per collective,
// measured on rank 0 from a barrier to a barrier after the last iteration (so the slowest rank
// counts), divided by the iterations. Gloo only (the NCCL backend is not wired in here yet).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/plan.h"
#include "realexec/rank_runner.h"

namespace redsim::realexec {

struct MicrobenchConfig {
  std::string backend = "gloo";
  std::int64_t min_bytes = 4096;
  std::int64_t max_bytes = 64LL << 20;
  int warmup = 1;
  int iters = 5;
  std::vector<OpKind> kinds = {OpKind::allreduce, OpKind::reduce, OpKind::reduce_scatter, OpKind::allgather,
                               OpKind::broadcast};
  bool progress = true;  // rank 0 prints one line per point
};

struct BenchPoint {
  OpKind kind = OpKind::allreduce;
  std::int64_t bytes = 0;
  int ranks = 0;
  double time_s = 0;      // per collective
  double algbw_GBps = 0;  // bytes / time
  double busbw_GBps = 0;  // algbw x nccl-tests' bus factor
};

using BenchSink = std::function<void(const std::vector<BenchPoint>&)>;

// Runs this rank's part of the sweep; rank 0 hands all points to `sink`. Returns the exit status
// (0, or kExitRankError / kExitPeerFailure after printing the reason).
int run_microbench_rank(const RankJob& job, const MicrobenchConfig& cfg, const BenchSink& sink);

}  // namespace redsim::realexec
