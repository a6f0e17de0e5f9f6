#include "strategies/memory_model.h"

#include <algorithm>

namespace redsim {

int model_state_stage(const Knobs& k) {
  if (k.strategy == "zero") return k.zero_stage;
  if (k.strategy == "fsdp" || k.strategy == "hsdp") return 3;
  return 0;
}

std::int64_t adam_state_bytes_per_element(DType t) { return dtype_size_bytes(t) >= 4 ? 8 : 12; }

RankMemory model_state_memory(const ModelTrace& trace, int world, int zero_stage, std::int64_t comm_buffer_bytes) {
  RankMemory m;
  std::int64_t params = 0, grads = 0, optimizer = 0;
  for (const auto& p : trace.params) {
    params += p.bytes();
    if (!p.trainable) continue;
    grads += p.bytes();
    optimizer += p.numel * adam_state_bytes_per_element(p.dtype);
  }
  // A partition is a contiguous, byte-balanced range: the most loaded rank holds ceil(x / N).
  auto shard = [world](std::int64_t x) { return (x + world - 1) / world; };
  m.params_bytes = zero_stage >= 3 ? shard(params) : params;
  m.optimizer_bytes = zero_stage >= 1 ? shard(optimizer) : optimizer;
  m.grads_bytes = zero_stage >= 2 ? shard(grads) : grads;
  m.comm_buffer_bytes = comm_buffer_bytes;
  // Every strategy here runs the trace's whole forward on each rank with the trace's batch (an
  // accumulation micro-batch is the trace's batch) and none recomputes activations.
  if (const auto a = trace.activation_bytes()) {
    m.activation_bytes = *a;
    m.activations_known = true;
  }
  return m;
}

OptimizerImpl resolved_optimizer_impl(const Knobs& knobs, const ClusterSpec& cluster) {
  if (knobs.optimizer_impl != OptimizerImpl::automatic) return knobs.optimizer_impl;
  if (knobs.strategy == "zero" && knobs.zero_impl == ZeroImpl::deepspeed) return OptimizerImpl::fused;
  return cluster.device.compute_capability > 0 ? OptimizerImpl::foreach : OptimizerImpl::for_loop;
}

std::int64_t optimizer_step_bytes(OptimizerImpl impl, std::int64_t stepped_elems, std::int64_t largest_tensor_elems) {
  switch (impl) {
    case OptimizerImpl::for_loop: return 2 * 4 * largest_tensor_elems;
    case OptimizerImpl::foreach: return 4 * stepped_elems;
    default: return 0;
  }
}

TrainableElements trainable_elements(const ModelTrace& trace) {
  TrainableElements e;
  for (const auto& p : trace.params) {
    if (!p.trainable) continue;
    e.total += p.numel;
    e.largest = std::max(e.largest, p.numel);
  }
  return e;
}

std::int64_t replicated_optimizer_step_bytes(const ModelTrace& trace, const ClusterSpec& cluster, const Knobs& knobs) {
  const auto e = trainable_elements(trace);
  return optimizer_step_bytes(resolved_optimizer_impl(knobs, cluster), e.total, e.largest);
}

}  // namespace redsim
