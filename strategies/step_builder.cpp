#include "strategies/step_builder.h"

#include <algorithm>
#include <map>

#include "core/units.h"

namespace redsim {

Plan new_plan(std::string strategy, const ModelTrace& trace, const ClusterSpec& cluster) {
  Plan plan;
  plan.strategy = std::move(strategy);
  plan.world_size = cluster.world_size();
  plan.samples_per_step = trace.batch_size_per_rank * cluster.world_size();
  plan.stream_index("compute");
  return plan;
}

double bucket_prep_s(const ClusterSpec& cluster, const GradBucket& bucket) {
  const double copy_s = cluster.framework.bucket_copy ? 2.0 * static_cast<double>(bucket.bytes) / bucket_copy_Bps(cluster) : 0.0;
  return cluster.framework.bucket_overhead_us * 1e-6 + copy_s;
}

double bucket_copy_out_s(const ClusterSpec& cluster, const std::vector<GradBucket>& buckets) {
  double bytes = 0, tensors = 0;
  for (const auto& b : buckets) bytes += static_cast<double>(b.bytes), tensors += static_cast<double>(b.tensors);
  // Read the bucket, write the gradient; and the host's launch of each tensor's copy.
  const double copy_s = cluster.framework.bucket_copy ? 2.0 * bytes / bucket_copy_Bps(cluster) : 0.0;
  return copy_s + tensors * cluster.framework.copy_out_us_per_tensor * 1e-6;
}

std::size_t bucket_last_layer(const ModelTrace& trace, const GradBucket& bucket) {
  // Backward runs the layers in reverse, so the bucket is complete after its lowest layer.
  std::size_t layer = trace.layers.size();
  for (auto p : bucket.params) layer = std::min(layer, trace.params[p].layer);
  return layer;
}

PlanOp compute_stream_op(OpKind kind, std::string name, std::uint32_t stream, double duration_s) {
  PlanOp op;
  op.kind = kind;
  op.name = std::move(name);
  op.stream = stream;
  op.duration_s = duration_s;
  return op;
}

std::vector<std::uint32_t> add_bucket_copy_out(Plan& plan, const ClusterSpec& cluster, const std::vector<GradBucket>& buckets,
                                               std::vector<std::uint32_t> deps, const std::string& prefix) {
  const double s = bucket_copy_out_s(cluster, buckets);
  if (s <= 0) return deps;
  PlanOp op = compute_stream_op(OpKind::framework, prefix + "framework:copy-out", plan.stream_index("compute"), s);
  op.deps = std::move(deps);
  return {plan.add(std::move(op))};
}

double kernel_memory_Bps(const ClusterSpec& cluster) {
  if (cluster.device.reduce_GBps > 0) return 3 * cluster.device.reduce_GBps * 1e9;
  // HBM bandwidth from NVIDIA's datasheets: V100 SXM2 900 GB/s, A100 SXM 80 GB 2,039 GB/s,
  // A10G 600 GB/s, H100 SXM 3,350 GB/s (H200, also 9.0, is faster: a conservative figure).
  const double cc = cluster.device.compute_capability;
  if (cc == 7.0) return 900e9;
  if (cc == 8.0) return 2039e9;
  if (cc == 8.6) return 600e9;
  if (cc == 9.0) return 3350e9;
  // Another device (a CPU rank): the bandwidth the cluster gives its framework's bucket copies,
  // which the hook's casts are too (measured on the testbed: bench/validate/gloo_half_allreduce.py).
  if (cluster.device.memory_GBps > 0) return cluster.device.memory_GBps * 1e9;
  return 0;
}

double bucket_copy_Bps(const ClusterSpec& cluster) { return cluster.bucket_copy_GBps() * 1e9; }

double copy_kernel_Bps(const ClusterSpec& cluster) {
  if (cluster.device.copy_GBps > 0) return cluster.device.copy_GBps * 1e9;
  return cluster.device.compute_capability > 0 ? kernel_memory_Bps(cluster) : 0.0;
}

ComputePass add_compute_pass(Plan& plan, const ModelTrace& trace, const ClusterSpec& cluster, const Checkpointing& ckpt,
                             const std::string& prefix, const std::vector<std::uint32_t>& first_deps,
                             const std::vector<GradBucket>* buckets, const std::vector<double>* hook_call_s,
                             bool accumulates) {
  const std::uint32_t compute = plan.stream_index("compute");
  const double scale = 1.0 / cluster.device.compute_speedup;
  ComputePass pass;
  pass.backward_op_of_layer.resize(trace.layers.size());
  bool first = true;
  auto add = [&](OpKind kind, const std::string& name, double duration_s) {
    PlanOp op;
    op.kind = kind;
    op.name = name;
    op.stream = compute;
    op.duration_s = duration_s * scale;
    if (first) op.deps = first_deps;
    first = false;
    return plan.add(std::move(op));
  };
  for (std::size_t l = 0; l < trace.layers.size(); ++l) {
    pass.forward_ops.push_back(add(OpKind::forward, prefix + "fwd:" + trace.layers[l].name, trace.layers[l].forward_s));
    plan.ops[pass.forward_ops.back()].activation_delta_bytes = ckpt.forward_held_bytes(trace, l);
  }
  // Buckets completed by each layer's backward, in bucket order (DDP launches them in order).
  std::vector<std::vector<std::size_t>> completes(trace.layers.size());
  const bool framework = buckets && (cluster.framework.bucket_overhead_us > 0 || cluster.framework.bucket_copy);
  if (buckets) {
    pass.bucket_ready_ops.resize(buckets->size());
    for (std::size_t b = 0; b < buckets->size(); ++b) completes[bucket_last_layer(trace, (*buckets)[b])].push_back(b);
  }
  std::vector<double> accumulate_s(trace.layers.size(), 0.0);
  if (const double Bps = copy_kernel_Bps(cluster); accumulates && Bps > 0)
    for (const auto& p : trace.params)
      if (p.trainable) accumulate_s[p.layer] += 3.0 * static_cast<double>(p.bytes()) / Bps;
  for (std::size_t l = trace.layers.size(); l-- > 0;) {
    if (const auto* block = ckpt.block_ending_at(l)) {
      const auto r = add(OpKind::backward, prefix + "recompute:" + block->name, block->forward_s);
      plan.ops[r].activation_delta_bytes = block->recompute_bytes;
    }
    pass.backward_op_of_layer[l] = add(OpKind::backward, prefix + "bwd:" + trace.layers[l].name, trace.layers[l].backward_s);
    plan.ops[pass.backward_op_of_layer[l]].activation_delta_bytes = -ckpt.backward_freed_bytes(trace, l);
    if (accumulates && accumulate_s[l] > 0)
      pass.backward_op_of_layer[l] = plan.add(compute_stream_op(
          OpKind::framework, prefix + "framework:accumulate:" + trace.layers[l].name, compute, accumulate_s[l]));
    pass.last_op = pass.backward_op_of_layer[l];
    for (auto b : completes[l]) {
      pass.bucket_ready_ops[b] = pass.backward_op_of_layer[l];
      // Framework and hook time is the cluster device's own: not scaled like the trace's compute.
      if (framework)
        pass.bucket_ready_ops[b] = pass.last_op = plan.add(compute_stream_op(
            OpKind::framework, prefix + "framework:bucket" + std::to_string(b), compute, bucket_prep_s(cluster, (*buckets)[b])));
      if (hook_call_s && b < hook_call_s->size() && (*hook_call_s)[b] > 0)
        pass.bucket_ready_ops[b] = pass.last_op = plan.add(compute_stream_op(
            OpKind::backward, prefix + "hook:call:bucket" + std::to_string(b), compute, (*hook_call_s)[b]));
    }
  }
  return pass;
}

std::uint32_t bucket_ready_op(const ModelTrace& trace, const ComputePass& pass, const GradBucket& bucket) {
  // The compute stream is FIFO, so the latest backward op among the bucket's layers suffices.
  std::uint32_t ready = 0;
  for (auto p : bucket.params) ready = std::max(ready, pass.backward_op_of_layer[trace.params[p].layer]);
  return ready;
}

PlanOp bucket_allreduce(const ModelTrace& trace, const Knobs& knobs, const GradBucket& bucket, int bucket_index,
                        std::uint32_t stream, std::vector<std::uint32_t> deps, const std::string& prefix) {
  PlanOp op;
  op.kind = OpKind::allreduce;
  op.name = prefix + "allreduce:bucket" + std::to_string(bucket_index);
  op.stream = stream;
  op.deps = std::move(deps);
  op.dtype = knobs.wire_dtype.value_or(bucket.dtype);
  op.bytes = bucket.numel * dtype_size_bytes(op.dtype);
  op.reduce_op = knobs.reduce_op;
  op.request = collective_request(knobs);
  op.bucket = bucket_index;
  for (auto p : bucket.params) op.slices.push_back({p, 0, trace.params[p].numel});
  return op;
}

std::vector<std::uint32_t> add_buffer_broadcasts(Plan& plan, const ModelTrace& trace, const Knobs& knobs,
                                                 std::uint32_t stream, const std::string& prefix) {
  std::vector<std::uint32_t> ids;
  if (!knobs.broadcast_buffers || plan.world_size < 2) return ids;
  constexpr std::int64_t kBroadcastBucketBytes = 250 * kMiB;
  std::map<DType, std::vector<std::size_t>> by_dtype;
  for (std::size_t i = 0; i < trace.buffers.size(); ++i)
    if (trace.buffers[i].broadcast) by_dtype[trace.buffers[i].dtype].push_back(i);
  for (const auto& [dtype, bufs] : by_dtype) {
    PlanOp op;
    auto flush = [&] {
      if (op.bytes == 0) return;
      op.kind = OpKind::broadcast;
      op.name = prefix + "broadcast:buffers:" + std::string(dtype_name(dtype)) + ":" + std::to_string(ids.size());
      op.stream = stream;
      op.dtype = dtype;
      op.root = 0;
      op.request = collective_request(knobs);
      ids.push_back(plan.add(op));
      op = PlanOp{};
    };
    for (auto b : bufs) {
      op.bytes += trace.buffers[b].bytes();
      if (op.bytes >= kBroadcastBucketBytes) flush();
    }
    flush();
  }
  return ids;
}

std::vector<std::size_t> reduced_ready_order(const ModelTrace& trace) {
  std::vector<std::size_t> order;
  for (auto i : trace.grad_ready_order)
    if (trace.params[i].reduced()) order.push_back(i);
  return order;
}

std::vector<std::uint32_t> add_bucket_allreduces(Plan& plan, const ModelTrace& trace, const Knobs& knobs,
                                                 const std::vector<GradBucket>& buckets, const ComputePass& pass,
                                                 std::uint32_t stream, const std::string& prefix) {
  // DDP launches buckets strictly in order (next_bucket_): the FIFO comm stream gives exactly
  // that, and each bucket also waits for the backward op that makes its last gradient.
  std::vector<std::uint32_t> ids;
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    const auto ready = b < pass.bucket_ready_ops.size() ? pass.bucket_ready_ops[b] : bucket_ready_op(trace, pass, buckets[b]);
    ids.push_back(plan.add(bucket_allreduce(trace, knobs, buckets[b], static_cast<int>(b), stream, {ready}, prefix)));
  }
  return ids;
}

std::uint32_t add_optimizer(Plan& plan, const ModelTrace& trace, const ClusterSpec& cluster,
                            std::vector<std::uint32_t> deps, const std::string& prefix, double fraction) {
  PlanOp op;
  op.kind = OpKind::optimizer;
  op.name = prefix + "optimizer";
  op.stream = plan.stream_index("compute");
  op.duration_s = trace.optimizer_s * fraction / cluster.device.compute_speedup;
  op.deps = std::move(deps);
  return plan.add(std::move(op));
}

}  // namespace redsim
