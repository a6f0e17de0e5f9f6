// DDP communication hooks (torch.distributed.algorithms.ddp_comm_hooks) for bucketed:
// fp16_compress_hook / bf16_compress_hook (cast, allreduce at half the bytes, cast back) and
// powerSGD_hook (Vogels et al., 2019: per bucket, the uncompressed tensors allreduced as they are,
// then P = M Q and Q = M^T P allreduced for every matrix M, with error feedback).
#pragma once
#include <cstdint>
#include <vector>

#include "core/cluster.h"
#include "core/knobs.h"
#include "core/plan.h"
#include "core/trace.h"
#include "strategies/ddp_bucketing.h"
#include "strategies/step_builder.h"

namespace redsim {

// The matrix PowerSGD makes of a gradient: tensor.view(shape[0], -1) when the trace gives the
// parameter's shape. Without one, a parameter is 1-D when its name ends in "bias" or its layer is
// a normalisation ("norm", "ln", "bn" in the name), and otherwise the most square m x n with
// m * n = numel (m the largest divisor at most sqrt(numel)): the best case for compression.
struct GradMatrix {
  std::int64_t rows = 0, cols = 0;
  int rank = 0;             // min(rows, cols, the requested rank), as powerSGD_hook caps it
  bool compressed = false;  // PyTorch's _should_compress: (m + n) rank * 2 < m n
};
GradMatrix powersgd_matrix(const ModelTrace& trace, std::size_t param, int rank);

// Device seconds of the hook's own call per bucket, which DDP makes from the autograd thread, in
// order with backward (add_compute_pass runs it on the compute stream): the cast to half, or
// PowerSGD's error feedback and P = M Q. 0 without a hook or a known memory bandwidth.
std::vector<double> hook_call_s(const ModelTrace& trace, const ClusterSpec& cluster, const Knobs& knobs,
                                const std::vector<GradBucket>& buckets);

// Adds the hooked collectives of every bucket (on "comm0" and, for PowerSGD's Q, "comm1") after
// the hook's call (the bucket_ready_ops of a pass built with these buckets), and the futures' callbacks (the cast back,
// PowerSGD's Q = M^T P and decompression) on the "comm_hook" stream; returns the ops the optimizer
// waits for.
std::vector<std::uint32_t> add_hooked_buckets(Plan& plan, const ModelTrace& trace, const ClusterSpec& cluster,
                                              const Knobs& knobs, const std::vector<GradBucket>& buckets,
                                              const ComputePass& pass);

// Bytes the hook holds besides DDP's buckets: the half-precision copies, or PowerSGD's error
// feedback (a copy of every bucket holding a compressed tensor) and its warm-started P and Q.
std::int64_t hook_memory_bytes(const ModelTrace& trace, const Knobs& knobs, const std::vector<GradBucket>& buckets);

// Bytes the hook holds for a while at backward's end (RankMemory::step_buffer_bytes): PowerSGD
// clones each compressed bucket when its hook is called and, in the future's callback, computes
// the new error feedback (clone - result) while the old one is still held (torch's
// powerSGD_hook.py, 1.13 to 2.x): every such bucket's clone, plus the largest one's new error.
// 0 for the half-precision hooks, whose copies hook_memory_bytes holds.
std::int64_t hook_step_buffer_bytes(const ModelTrace& trace, const Knobs& knobs, const std::vector<GradBucket>& buckets);

}  // namespace redsim
