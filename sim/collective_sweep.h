// A simulated nccl-tests: one collective over a range of sizes on a cluster, each size run as
// nccl-tests runs it (-n iterations of one operation queued back to back, their mean; launches
// overlapped), reported with nccl-tests' columns and bus-bandwidth factors plus the algorithm,
// protocol and channels the model chose.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/plan.h"
#include "sim/sim_engine.h"

namespace redsim {

struct SweepOptions {
  std::vector<OpKind> ops{OpKind::allreduce};
  std::int64_t min_bytes = 32 * 1024 * 1024;  // nccl-tests' -b default
  std::int64_t max_bytes = 32 * 1024 * 1024;  // -e
  double step_factor = 1;                     // -f (> 1: multiply)
  std::int64_t step_bytes = 1024 * 1024;      // -i (used when the factor is 1)
  std::vector<std::int64_t> sizes;            // when given, exactly these sizes (a log's rows) instead
  DType dtype = DType::fp32;
  ReduceOp redop = ReduceOp::sum;
  int root = 0;
  CollectiveRequest request;
  // nccl-tests' -g: devices one process drives. nccl-tests times back-to-back launches, so the
  // host's launch cost (collective_launch_us + collective_launch_per_channel_us a channel past
  // the first, per device) hides behind the device's time unless it is larger: an iteration
  // lasts max(device time, gpus_per_process x launch).
  int gpus_per_process = 1;
  // nccl-tests' -n: iterations queued back to back and timed together (their mean is the row).
  int iters = 20;
  Fidelity fidelity = Fidelity::auto_select;
};

struct SweepRow {
  OpKind kind = OpKind::allreduce;
  std::int64_t size_bytes = 0;  // nccl-tests' size column (allgather, reduce-scatter: the whole buffer)
  std::int64_t count = 0;       // elements passed to the collective (allgather, reduce-scatter: per rank)
  int root = -1;
  double time_us = 0;         // the larger of the device's time and -g launches of the host's
  double device_time_us = 0;  // the device's mean iteration alone
  double algbw_GBps = 0;
  double busbw_GBps = 0;
  Algorithm algorithm = Algorithm::ring;
  std::optional<Protocol> protocol;
  int channels = 1;
};

// What the model chose for a row, as "ring/ll128 x24" (algorithm/protocol x channels).
std::string choice_label(const SweepRow& r);

// The sizes nccl-tests visits for -b, -e, -f, -i.
std::vector<std::int64_t> sweep_sizes(const SweepOptions& o);

// Simulates every (op, size) once, in one simulation. Throws InputError for bad options.
std::vector<SweepRow> collective_sweep(const ClusterSpec& cluster, const SweepOptions& o, Fidelity* used = nullptr);

}  // namespace redsim
