// What users read: step time, overlap and per-collective bandwidth, derived from a Timeline.
#pragma once
#include <cstdint>
#include <vector>

#include "core/plan.h"
#include "core/timeline.h"

namespace redsim {

struct CollectiveStat {
  std::uint32_t op = 0;
  int bucket = -1;
  std::int64_t bytes = 0;
  std::size_t tensors = 0;  // parameter slices carried
  double start_s = 0;       // earliest start over ranks
  double end_s = 0;         // latest end over ranks
  double algbw_GBps = 0;    // bytes / (end - start)
  double busbw_GBps = 0;    // algbw x nccl-tests' bus factor for the collective kind
};

struct StepSummary {
  double step_time_s = 0;     // latest end of any op on any rank, per step of the plan
  double compute_time_s = 0;  // busy time of the compute stream (max over ranks), per step
  double comm_time_s = 0;     // time any comm stream is busy (max over ranks), per step
  double exposed_comm_s = 0;  // comm busy while compute is idle (max over ranks), per step
  // Compute ops' time beyond their own durations (max over ranks), per step, in a simulated
  // Timeline: slowed beside collectives (the cluster's interference) or sharing the device with
  // another compute stream. 0 for a measured one.
  double compute_stretched_s = 0;
  double time_per_sample_s = 0;
  std::int64_t bytes_sent_per_rank = 0;  // max over ranks, per plan
  std::vector<CollectiveStat> collectives;
};

// nccl-tests' bus-bandwidth factor: allreduce 2(n-1)/n, reduce-scatter and allgather (n-1)/n,
// reduce and broadcast 1.
double bus_factor(OpKind kind, int world_size);

StepSummary summarize(const Plan& plan, const Timeline& timeline);

}  // namespace redsim
