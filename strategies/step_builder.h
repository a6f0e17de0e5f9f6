// Pieces every strategy's Plan shares: the forward and backward compute of one micro-batch,
// and gradient collectives built from buckets.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/knobs.h"
#include "core/plan.h"
#include "core/trace.h"
#include "strategies/checkpointing.h"
#include "strategies/ddp_bucketing.h"

namespace redsim {

struct ComputePass {
  std::vector<std::uint32_t> forward_ops;              // per layer, forward order
  std::vector<std::uint32_t> backward_op_of_layer;     // per layer
  std::uint32_t last_op = 0;                           // the last backward op (or framework op after it)
  std::vector<std::uint32_t> bucket_ready_ops;         // per bucket, when the pass was given buckets
};

// Starts a Plan with the "compute" stream (index 0) and the given comm streams.
Plan new_plan(std::string strategy, const ModelTrace& trace, const ClusterSpec& cluster);

// Appends forward (layer order) then backward (reverse layer order) ops on the compute stream; a
// checkpointed block's recompute (its forward again) comes right before its last layer's backward.
// Durations are the traced ones divided by the device's compute_speedup. `prefix` tells
// micro-batches or local steps apart ("" for a plain step).
// With `buckets` and a cluster that models framework costs, each bucket gets a framework op on the
// compute stream right after the backward op that makes its last gradient (the fixed cost and
// the copy in), and collectives wait for it (bucket_ready_ops). `hook_call_s` (per bucket, 0 for
// none) adds the DDP comm hook's own call after that: DDP calls the hook from the autograd thread,
// so its kernels run in order with backward's (on a GPU, on the same stream) before the next
// layer's backward.
// `accumulates`: the gradients already exist (a micro-batch after the first), so autograd adds
// each new one into .grad (read both, write one: 3 x its bytes at copy_kernel_Bps), an op after
// each layer's backward; the trace's backward, timed with .grad unset, has none.
ComputePass add_compute_pass(Plan& plan, const ModelTrace& trace, const ClusterSpec& cluster, const Checkpointing& ckpt,
                             const std::string& prefix, const std::vector<std::uint32_t>& first_deps,
                             const std::vector<GradBucket>* buckets = nullptr,
                             const std::vector<double>* hook_call_s = nullptr, bool accumulates = false);

// Device memory bandwidth in bytes per second for the framework's elementwise kernels (the DDP
// comm hooks', LocalSGD's averaging copy, gradient accumulation's adds): three times
// reduce_GBps when the cluster gives it (a reduction moves three operands), else the device's
// datasheet HBM bandwidth by compute capability, else the device's memory_GBps (the framework's
// copy bandwidth: a CPU's); 0 (free) when unknown.
double kernel_memory_Bps(const ClusterSpec& cluster);
// An op of the compute stream: a framework cost or the hook's call, timed by the cluster's device
// (not scaled like the trace's compute).
PlanOp compute_stream_op(OpKind kind, std::string name, std::uint32_t stream, double duration_s);
// The same for plain fp32 copies and adds (LocalSGD's torch.cat, gradient accumulation's +=): the
// device's copy_GBps when given (calibrate measures it on a CPU), else a GPU's as above; 0 (free)
// on a CPU rank without it, whose memory_GBps is what calibrate measured for the hooks' casts:
// alone on one of this machine's cores the casts ran at 3.1 GB/s where torch.cat with the
// division ran at 7.7 GB/s and += at 19.5 GB/s (bench/validate/README.md), so that rate would
// overcharge them 2.5-6x.
double copy_kernel_Bps(const ClusterSpec& cluster);
// The rate of DDP's bucket copies (framework.bucket_copy), bytes read and written: ClusterSpec::bucket_copy_GBps.
double bucket_copy_Bps(const ClusterSpec& cluster);

// The framework's device time for one bucket before its collective (fixed cost + copy in), and the
// copy of all buckets back out after them; 0 when the cluster models none.
double bucket_prep_s(const ClusterSpec& cluster, const GradBucket& bucket);
double bucket_copy_out_s(const ClusterSpec& cluster, const std::vector<GradBucket>& buckets);

// A framework op copying the reduced buckets back into the gradients once `deps` are done (DDP
// without gradient_as_bucket_view); returns `deps` unchanged when the cluster models no copies.
std::vector<std::uint32_t> add_bucket_copy_out(Plan& plan, const ClusterSpec& cluster, const std::vector<GradBucket>& buckets,
                                               std::vector<std::uint32_t> deps, const std::string& prefix);

// The backward op after which every gradient of `bucket` is ready.
std::size_t bucket_last_layer(const ModelTrace& trace, const GradBucket& bucket);
std::uint32_t bucket_ready_op(const ModelTrace& trace, const ComputePass& pass, const GradBucket& bucket);

// A gradient allreduce of a whole bucket on `stream`, carrying each parameter whole.
PlanOp bucket_allreduce(const ModelTrace& trace, const Knobs& knobs, const GradBucket& bucket, int bucket_index,
                        std::uint32_t stream, std::vector<std::uint32_t> deps, const std::string& prefix);

// DDP's buffer sync before forward: rank 0's buffers (those marked broadcast) are broadcast,
// coalesced per dtype in 250 MiB pieces (DDP's broadcast_bucket_size). Returns the op ids
// (none for one rank or when knobs.broadcast_buffers is off).
std::vector<std::uint32_t> add_buffer_broadcasts(Plan& plan, const ModelTrace& trace, const Knobs& knobs,
                                                 std::uint32_t stream, const std::string& prefix);

// Gradient-ready order restricted to reduced parameters.
std::vector<std::size_t> reduced_ready_order(const ModelTrace& trace);

// Adds one bucketed gradient allreduce per DDP bucket after `pass` (each waiting for its last
// gradient); returns the op ids.
std::vector<std::uint32_t> add_bucket_allreduces(Plan& plan, const ModelTrace& trace, const Knobs& knobs,
                                                 const std::vector<GradBucket>& buckets, const ComputePass& pass,
                                                 std::uint32_t stream, const std::string& prefix);

std::uint32_t add_optimizer(Plan& plan, const ModelTrace& trace, const ClusterSpec& cluster,
                            std::vector<std::uint32_t> deps, const std::string& prefix, double fraction = 1.0);

}  // namespace redsim
