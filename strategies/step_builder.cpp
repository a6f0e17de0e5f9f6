#include "strategies/step_builder.h"

#include <algorithm>

namespace redsim {

Plan new_plan(std::string strategy, const ModelTrace& trace, const ClusterSpec& cluster) {
  Plan plan;
  plan.strategy = std::move(strategy);
  plan.world_size = cluster.world_size();
  plan.samples_per_step = trace.batch_size_per_rank * cluster.world_size();
  plan.stream_index("compute");
  return plan;
}

ComputePass add_compute_pass(Plan& plan, const ModelTrace& trace, const ClusterSpec& cluster,
                             const std::string& prefix, const std::vector<std::uint32_t>& first_deps) {
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
  for (const auto& layer : trace.layers)
    pass.forward_ops.push_back(add(OpKind::forward, prefix + "fwd:" + layer.name, layer.forward_s));
  for (std::size_t l = trace.layers.size(); l-- > 0;)
    pass.backward_op_of_layer[l] = add(OpKind::backward, prefix + "bwd:" + trace.layers[l].name, trace.layers[l].backward_s);
  pass.last_op = pass.backward_op_of_layer.front();
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
  op.algorithm = knobs.algorithm;
  op.channels = knobs.channels;
  op.bucket = bucket_index;
  for (auto p : bucket.params) op.slices.push_back({p, 0, trace.params[p].numel});
  return op;
}

std::uint32_t add_optimizer(Plan& plan, const ModelTrace& trace, const ClusterSpec& cluster,
                            std::vector<std::uint32_t> deps, const std::string& prefix) {
  PlanOp op;
  op.kind = OpKind::optimizer;
  op.name = prefix + "optimizer";
  op.stream = plan.stream_index("compute");
  op.duration_s = trace.optimizer_s / cluster.device.compute_speedup;
  op.deps = std::move(deps);
  return plan.add(std::move(op));
}

}  // namespace redsim
