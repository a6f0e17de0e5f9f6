// PyTorch DDP's bucket assignment (torch/csrc/distributed/c10d/reducer.cpp,
// compute_bucket_assignment_by_size), reproduced rule for rule:
//  - one open bucket per dtype; parameters are added whole (never split);
//  - a bucket closes as soon as its size reaches its limit (>=), and the next bucket of that
//    dtype moves to the next limit (limits = {first_bucket_cap, bucket_cap, bucket_cap, ...});
//  - leftover open buckets are appended at the end.
// Definition order (DDP's first iteration): tensors in registration order, buckets sorted by
// their smallest registration index, then the list reversed (so the small first bucket, holding
// the first-defined parameters, is reduced last). Execution order (DDP after rebuild_buckets):
// tensors in gradient-ready order, no sort; the small first bucket is the first to be ready.
#pragma once
#include <cstdint>
#include <vector>

#include "core/dtype.h"
#include "core/knobs.h"
#include "core/trace.h"

namespace redsim {

struct GradBucket {
  std::vector<std::size_t> params;  // indices into ModelTrace::params, in bucket order
  std::int64_t bytes = 0;           // in the parameters' own dtype, as DDP sizes them
  std::int64_t numel = 0;
  std::int64_t tensors = 0;  // the gradient tensors its parameters stand for (TraceParam::tensors)
  std::int64_t size_limit_bytes = 0;
  DType dtype = DType::fp32;
};

// The core rule over an explicit tensor order (indices into trace.params).
std::vector<GradBucket> assign_buckets_by_size(const ModelTrace& trace, const std::vector<std::size_t>& order,
                                               const std::vector<std::int64_t>& size_limits_bytes);

// DDP's initial assignment (Reducer construction): registration order, buckets sorted by their
// smallest parameter index. This is what PyTorch's own compute_bucket_assignment_by_size tests
// check; definition order launches these buckets in reverse.
std::vector<GradBucket> ddp_initial_assignment(const ModelTrace& trace, const std::vector<std::int64_t>& size_limits_bytes);

// DDP's buckets for the reduced (trainable, not excluded) parameters, in the order they are
// launched, for the knobs' caps and bucket order.
std::vector<GradBucket> ddp_buckets(const ModelTrace& trace, const Knobs& knobs);

}  // namespace redsim
