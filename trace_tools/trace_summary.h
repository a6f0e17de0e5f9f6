// What `redsim trace show` says about a model trace: its parameters and buffers by kind and dtype,
// the compute split and the slowest layers, the buckets PyTorch DDP would form at a cap, and when
// the gradients become ready in backward (a histogram). cli/ prints it; trace_summary_to_json is
// the redsim-trace-summary format (`trace show --json`).
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/knobs.h"
#include "core/trace.h"
#include "strategies/checkpointing.h"
#include "strategies/ddp_bucketing.h"
#include "trace_tools/grad_ready.h"

namespace redsim {

struct Tally {
  std::size_t tensors = 0;
  std::int64_t numel = 0, bytes = 0;
};

struct TraceShowOptions {
  Knobs knobs;  // bucket_cap_bytes, first_bucket_cap_bytes and bucket_order: the DDP preview
  std::size_t top = 10;   // layers listed by forward + backward time
  std::size_t bins = 20;  // histogram rows
};

struct TraceSummary {
  Tally params, reduced, frozen, excluded;   // frozen: not trainable; excluded: trainable, not reduced
  std::map<std::string, Tally> by_dtype;     // every parameter, by its dtype's name
  Tally buffers, broadcast;
  double forward_s = 0, backward_s = 0;      // sums over the layers
  std::size_t bare_layers = 0;               // layers without parameters
  std::vector<std::size_t> top_layers;       // indices, by forward + backward, slowest first
  std::vector<GradBucket> buckets;           // DDP's, in launch order
  std::int64_t bucket_bytes = 0;
  double backward_total_s = 0;
  std::vector<ReadyBin> histogram;           // gradient-ready times over backward
  // What --activation-checkpointing blocks would do: its blocks and the most held (empty blocks
  // when the trace cannot be checkpointed).
  Checkpointing checkpointing;
  std::int64_t checkpointed_peak_bytes = 0;
  double step_s(const ModelTrace& t) const { return forward_s + backward_s + t.optimizer_s; }
};

TraceSummary summarize_trace(const ModelTrace& trace, const TraceShowOptions& options);

nlohmann::json trace_summary_to_json(const std::string& file, const ModelTrace& trace, const TraceShowOptions& options,
                                     const TraceSummary& summary);

}  // namespace redsim
