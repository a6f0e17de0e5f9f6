// Per-rank model-state memory, with the ZeRO paper's accounting (Rajbhandari et al., 2020):
// Psi parameters in a 16-bit dtype cost 2 Psi bytes of parameters, 2 Psi of gradients and
// 12 Psi of Adam state (fp32 master copy, momentum, variance); fp32 parameters need no master
// copy, so 4 Psi + 4 Psi + 8 Psi. Stage 1 partitions the optimizer state over N ranks, stage 2
// the gradients too, stage 3 (FSDP FULL_SHARD) the parameters too: (2 + 2 + K) Psi / N. Frozen parameters have neither gradient nor optimizer state.
// Plus the activations autograd saves in one forward, when the trace gives them (not sharded by
// any stage: each rank runs its own samples).
#pragma once
#include <cstdint>

#include "core/cluster.h"
#include "core/knobs.h"
#include "core/plan.h"
#include "core/trace.h"

namespace redsim {

// zero_stage 0: every rank holds everything (DDP). comm_buffer_bytes: communication buffers the
// strategy holds besides (DDP's bucket copies, ZeRO's reduce and allgather buckets).
RankMemory model_state_memory(const ModelTrace& trace, int world, int zero_stage, std::int64_t comm_buffer_bytes);

// The ZeRO stage of a strategy's accounting: zero's --zero-stage; 3 for fsdp and hsdp (their
// parameters rest sharded, SHARD_GRAD_OP too); 0 (everything replicated) for the DDP family.
int model_state_stage(const Knobs& knobs);

// Adam state bytes per element for a parameter of this dtype (12 for 16-bit, 8 for fp32).
std::int64_t adam_state_bytes_per_element(DType param_dtype);

// What --optimizer-impl auto stands for on this cluster: DeepSpeed's FusedAdam for zero (its
// default implementation), foreach on a device with a compute capability (PyTorch's default on
// CUDA since 2.0), for-loop on a CPU (PyTorch's default there, and torch 1.13's everywhere).
OptimizerImpl resolved_optimizer_impl(const Knobs& knobs, const ClusterSpec& cluster);
// Bytes the optimizer's step holds beyond its state (a RankMemory::step_buffer_bytes), 4 per
// element as the state is kept in fp32 (a 16-bit parameter's master copy too): for-loop two
// temporaries of the largest tensor stepped (torch.optim's Adam: exp_avg_sq.sqrt() / c, then
// .add_(eps); measured on the testbed: 2 x 9 MiB at resnet18's step), foreach one of every
// element stepped (torch.optim's documentation: "~ sizeof(params) more peak memory"), fused none.
std::int64_t optimizer_step_bytes(OptimizerImpl impl, std::int64_t stepped_elems, std::int64_t largest_tensor_elems);
// The trace's trainable elements, and those of its largest trainable tensor.
struct TrainableElements {
  std::int64_t total = 0;
  std::int64_t largest = 0;
};
TrainableElements trainable_elements(const ModelTrace& trace);
// optimizer_step_bytes where every rank steps every trainable parameter (the DDP family).
std::int64_t replicated_optimizer_step_bytes(const ModelTrace& trace, const ClusterSpec& cluster, const Knobs& knobs);

}  // namespace redsim
