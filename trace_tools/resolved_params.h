// An imported profile with the model's own parameters (`redsim trace import --params-from`).
// A profiler trace has no parameters, so the plain import makes one synthetic parameter per DDP
// bucket, and such a trace cannot be re-bucketed: at any other bucket size it forms the same
// buckets. Given a model trace of the profiled model (redsim_capture.py, trace synth), DDP's own
// rule (strategies/ddp_bucketing.h) at the caps the job ran with must put its parameters into
// exactly the profile's buckets (count, elements and dtype of each, in launch order); then each
// bucket's measured backward interval is spread over the model's layers in it, by the model's own
// gradient-ready times mapped linearly onto the interval, so every bucket is still ready exactly
// when it was measured, and the trace can be simulated at any bucket size.
#pragma once
#include <cstdint>
#include <string>

#include "core/trace.h"
#include "trace_tools/kineto_import.h"

namespace redsim {

struct ResolveOptions {
  const ModelTrace* model = nullptr;  // the profiled model's trace
  std::string model_file;             // its file, for messages and the trace's source
  std::int64_t bucket_cap_bytes = 0;        // the profiled job's bucket_cap_mb
  std::int64_t first_bucket_cap_bytes = 0;  // DDP's first bucket (1 MiB unless changed)
  // The profiled batch per rank (the trace's batch_size_per_rank) was stated by the user. Only
  // then does a model trace's batch curve carry over (resolved_curve below).
  bool batch_known = false;
};

// Replaces imp.trace by the resolved trace and fills imp.resolved_spans and imp's caps. Throws
// InputError naming the model trace's file when its parameters do not make the profile's buckets,
// or when the profile's bucket sizes are unknown.
//
// A model trace with a batch curve gives the resolved trace one too, when the profiled batch is
// known: at each of the curve's batch sizes (and the profiled one) the measured times are scaled
// by the model's own shape, so the profile sets the level and the model how it moves with batch:
// forward_pass by the model's forward at B over its forward at the profiled batch; each bucket's
// layers by their model span at B over the bucket's model span at the profiled batch (so a bucket
// scales as the model's backward in it does); backward_tail by the model's backward after the
// last bucket; the optimizer not at all. Otherwise a warning says why there is no curve.
void resolve_params(KinetoImport& imp, const ResolveOptions& options);

}  // namespace redsim
