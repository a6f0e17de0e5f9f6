// The model trace: what one rank computes in a training step (see traces/README.md).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace redsim {

// What a trace may ask for (traces/README.md, "Limits"). Far above any real model, low enough
// that every sum and product redsim forms from them fits in 64 bits (batch x ranks x
// micro-batches, bytes x optimizer factors) and that SimGrid's clock keeps its precision.
inline constexpr std::int64_t kMaxTensorElements = std::int64_t{1} << 44;  // 1.8e13
inline constexpr std::size_t kMaxTensorDims = 16;                          // a parameter's shape
inline constexpr std::int64_t kMaxModelBytes = std::int64_t{1} << 50;       // 1 PiB of params and buffers
inline constexpr std::int64_t kMaxBatchSizePerRank = std::int64_t{1} << 24;  // 16,777,216 samples
inline constexpr double kMaxOpTimeS = 3600;                                   // one layer, one hour
inline constexpr std::size_t kMaxCurveBatchSizes = 16;  // curve_batch_sizes: each is a whole capture

struct TraceLayer {
  std::string name;
  double forward_s = 0;   // on the trace's reference device, for batch_size_per_rank samples
  double backward_s = 0;  // gradients of this layer's parameters are ready when it ends
  // Bytes autograd saves in this layer's forward for its backward, for batch_size_per_rank
  // samples (activations, each tensor once); unknown when the trace does not say.
  std::optional<std::int64_t> activation_bytes;
  // Bytes of the tensors its forward is given (each storage once), for batch_size_per_rank
  // samples: what a checkpointed block keeps of its first layer. Unknown when the trace does not say.
  std::optional<std::int64_t> input_bytes;
  // The same times at each of ModelTrace::curve_batch_sizes (empty when the trace has no curve);
  // the entry at batch_size_per_rank is forward_s / backward_s themselves.
  std::vector<double> forward_s_by_batch;
  std::vector<double> backward_s_by_batch;
};

struct TraceParam {
  std::string name;
  std::int64_t numel = 0;
  DType dtype = DType::fp32;
  std::size_t layer = 0;   // index into ModelTrace::layers
  bool trainable = true;   // requires_grad; frozen parameters get no gradient at all
  bool excluded = false;   // trainable but never reduced (model-parallel, seed 002)
  // tensor.shape when the trace knows it (its product is numel; [] is a 0-dim scalar). PowerSGD
  // views a gradient as shape[0] x numel / shape[0], so its compressed sizes depend on it.
  std::optional<std::vector<std::int64_t>> shape;
  // The gradient tensors this parameter stands for: 1 for a real one; a synthetic parameter of an
  // imported profile (one per bucket) stands for its bucket's share of the job's. DDP copies each
  // out of its bucket separately (framework.copy_out_us_per_tensor).
  std::int64_t tensors = 1;

  std::int64_t bytes() const { return numel * dtype_size_bytes(dtype); }
  bool reduced() const { return trainable && !excluded; }
};

struct TraceBuffer {
  std::string name;
  std::int64_t numel = 0;
  DType dtype = DType::fp32;
  bool broadcast = true;  // DDP broadcasts buffers from rank 0 each step (broadcast_buffers=True)

  std::int64_t bytes() const { return numel * dtype_size_bytes(dtype); }
};

struct ModelTrace {
  std::string model;
  std::string source;            // how the numbers were obtained, in words
  std::string reference_device;  // the device the compute times refer to
  std::int64_t batch_size_per_rank = 1;
  std::vector<TraceLayer> layers;  // forward execution order; backward runs them in reverse
  std::vector<TraceParam> params;  // registration order (model.parameters())
  // Indices into params of every trainable parameter, in the order its gradient becomes ready
  // in backward. Given in the file, or derived: layers in reverse forward order, and inside a
  // layer its parameters in reverse registration order (the order autograd fires them).
  std::vector<std::size_t> grad_ready_order;
  double optimizer_s = 0;
  std::vector<TraceBuffer> buffers;
  // Batch sizes per rank the layer times were also measured at, increasing, batch_size_per_rank
  // among them (redsim_capture.py --batch-sizes); empty: times for batch_size_per_rank only.
  // core/trace_batch.h evaluates the layers at another batch from them.
  std::vector<std::int64_t> curve_batch_sizes;
  // The compute times were measured while collectives ran beside them on the same device (a DDP
  // profile imported as measured), so they already hold the slowdown a cluster's
  // interference.compute_slowdown would add: core/compute_reference.h refuses to count it twice.
  bool compute_beside_collectives = false;

  std::int64_t param_count() const;
  std::int64_t reduced_bytes() const;
  // The layers' activation bytes added up (all of them are live when forward ends); nullopt when
  // the trace does not give them (a trace gives them for every layer or for none).
  std::optional<std::int64_t> activation_bytes() const;
};

// Derives grad_ready_order from layers and params (used when the file gives none).
std::vector<std::size_t> derive_grad_ready_order(const ModelTrace& trace);

}  // namespace redsim
