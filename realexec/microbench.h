// nccl-tests-style collective sweeps on a real backend, for redsim calibrate: allreduce, reduce,
// reduce-scatter, allgather and broadcast over float32 buffers from min_bytes doubling up to
// max_bytes, `iters` timed iterations each after `warmup` untimed ones. Times are per collective,
// measured on rank 0 from a barrier to a barrier after the last iteration (so the slowest rank
// counts), divided by the iterations. Then point-to-point ping-pong per link class present —
// intra-node (rank 0 and 1, when a host runs several ranks) and inter-node (rank 0 and the first
// rank of the next host; ranks are numbered host by host, as torchrun and the testbed do) — the
// one-way time being half a round trip. Buffers come from the backend (device memory for NCCL).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <optional>

#include "core/plan.h"
#include "realexec/interference_bench.h"
#include "realexec/memory_bench.h"
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
  std::int64_t p2p_max_bytes = 16LL << 20;  // a point-to-point sweep stops here (or at max_bytes)
  bool progress = true;  // rank 0 prints one line per point
  // Compute beside a collective (realexec/interference_bench.h): about this long a load, beside
  // an allreduce of min(max_bytes, 4 MiB); 0 = not measured.
  double interference_target_s = 0.5;
  // fp16_compress_hook's work on a bucket of this many elements (realexec/memory_bench.h): its
  // casts and Gloo's fp16 reduction, every rank at once; 0 = not measured.
  std::int64_t hook_bucket_elements = 0;
  int hook_bench_repetitions = 5;
};

struct BenchPoint {
  OpKind kind = OpKind::allreduce;
  std::int64_t bytes = 0;
  int ranks = 0;
  double time_s = 0;      // per collective
  double algbw_GBps = 0;  // bytes / time
  double busbw_GBps = 0;  // algbw x nccl-tests' bus factor
};

enum class LinkClass { intra_node, inter_node };
std::string_view link_class_name(LinkClass c);

struct PointToPointPoint {
  LinkClass link = LinkClass::intra_node;
  int peer = 1;  // rank 0's partner
  std::int64_t bytes = 0;
  double time_s = 0;          // one way: half the measured round trip
  double bandwidth_GBps = 0;  // bytes / time
};

struct MicrobenchResult {
  std::vector<BenchPoint> collectives;
  std::vector<PointToPointPoint> point_to_point;
  std::optional<InterferenceMeasurement> interference;
  std::optional<HookCastMeasurement> hook_casts;
  std::optional<ReduceMeasurement> fp16_reduce;
  std::optional<CopyMeasurement> fp32_add;
  std::optional<FreshCopyMeasurement> fresh_copy;
};

using BenchSink = std::function<void(const MicrobenchResult&)>;

// Runs this rank's part of the sweep; rank 0 hands all points to `sink`. Returns the exit status
// (0, or kExitRankError / kExitPeerFailure after printing the reason).
int run_microbench_rank(const RankJob& job, const MicrobenchConfig& cfg, const BenchSink& sink);

}  // namespace redsim::realexec
