// The strategy knobs a user (or the tuner) sets.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "core/collective_types.h"
#include "core/dtype.h"
#include "core/plan.h"
#include "core/units.h"

namespace redsim {

// Bucket order as PyTorch DDP knows it: "definition" is the reverse of registration order (DDP's
// first iteration); "execution" is the observed gradient-ready order (DDP after rebuild_buckets).
enum class BucketOrder { definition, execution };
// How LocalSGD averages parameters: `flat` as PyTorch's PeriodicModelAverager (every parameter
// concatenated into one tensor, one allreduce), `bucketed` in DDP's gradient buckets, `per_param`
// one allreduce per parameter (HF accelerate's LocalSGD).
enum class Averaging { flat, bucketed, per_param };

// FSDP's BackwardPrefetch: when the next unit's parameters are all-gathered in backward.
enum class BackwardPrefetch { backward_pre, backward_post, none };

// DDP communication hooks (torch.distributed.algorithms.ddp_comm_hooks).
enum class CommHook { none, fp16, bf16, powersgd };

// Activation checkpointing (torch.utils.checkpoint, as HF's gradient_checkpointing_enable and
// FSDP's apply_activation_checkpointing wrap each transformer block): `blocks` checkpoints every
// repeated block of the trace (layers named with a numeric index, e.g. model.layers.7.*), which
// then keeps only its input in forward and recomputes its forward at the start of its backward.
enum class ActivationCheckpointing { none, blocks };

// Whose ZeRO: DeepSpeed's (stages 1 and 2: gradients reduced to their owners, parameters
// all-gathered) or PyTorch's ZeroRedundancyOptimizer (stage 1 over DDP: gradients allreduced in
// DDP's buckets, each parameter broadcast from its owner after the owners' optimizer step).
enum class ZeroImpl { deepspeed, pytorch };

// How the optimizer steps, for the memory its step holds beyond its state: `for_loop` one
// tensor at a time (torch.optim's Adam makes two temporaries of the tensor's size,
// exp_avg_sq.sqrt() / c), `foreach` all at once (torch.optim's documentation: "~ sizeof(params)
// more peak memory"), `fused` none. `automatic`: DeepSpeed's FusedAdam for zero, else PyTorch's
// default for the device (foreach on CUDA since 2.0; for-loop on CPUs, as torch 1.13 everywhere).
enum class OptimizerImpl { automatic, for_loop, foreach, fused };

struct Knobs {
  std::string strategy = "bucketed";
  std::int64_t bucket_cap_bytes = 25 * kMiB;       // DDP bucket_cap_mb=25 (MiB)
  std::int64_t first_bucket_cap_bytes = 1 * kMiB;  // DDP _DEFAULT_FIRST_BUCKET_BYTES
  BucketOrder bucket_order = BucketOrder::execution;
  // Collective choices; unset (or 0 channels) = the cluster's collective model chooses per op
  // and size, as NCCL does (NCCL_ALGO, NCCL_PROTO and NCCL_MIN/MAX_NCHANNELS pin them).
  int channels = 0;                        // rings/trees per collective, each carrying 1/channels of the bytes
  std::optional<Algorithm> algorithm;
  std::optional<Protocol> protocol;
  // NCCL_ALGO / NCCL_PROTO given as a list, an exclusion or per collective, instead of one name
  // (core/nccl_list.h).
  std::optional<NcclList> algorithm_list;
  std::optional<NcclList> protocol_list;
  std::optional<DType> wire_dtype;         // gradient dtype on the wire; unset = the parameter's dtype
  ReduceOp reduce_op = ReduceOp::avg;      // DDP averages gradients
  bool broadcast_buffers = true;           // DDP's broadcast_buffers: rank 0's buffers before forward

  // zero (DeepSpeed ZeRO stages 1 and 2)
  int zero_stage = 2;
  std::int64_t allgather_bucket_bytes = 500'000'000LL * 2;  // DeepSpeed allgather_bucket_size 5e8 fp16 elements
  bool overlap_comm = true;  // reduce buckets during backward; off = all reduces after backward
  ZeroImpl zero_impl = ZeroImpl::deepspeed;

  // accumulate (deferred sync)
  int microbatches = 1;
  bool sync_every_microbatch = false;  // the naive baseline: allreduce after every micro-batch

  // localsgd
  int localsgd_period = 1;  // H local steps per parameter averaging
  Averaging localsgd_averaging = Averaging::flat;

  // fsdp and hsdp (PyTorch FullyShardedDataParallel)
  std::int64_t fsdp_wrap_elems = 0;    // 0: one unit per trace layer; else size_based_auto_wrap_policy's min_num_params
  bool fsdp_wrap_blocks = false;       // one unit per repeated block (ModuleWrapPolicy on the block class); wins over elems
  bool reshard_after_forward = true;   // FULL_SHARD; false = SHARD_GRAD_OP
  BackwardPrefetch backward_prefetch = BackwardPrefetch::backward_pre;  // FSDP's default
  bool forward_prefetch = false;       // FSDP's default
  int shard_group = 0;                 // hsdp: ranks per shard group; 0 = the devices of a node

  // bucketed: DDP communication hook
  CommHook comm_hook = CommHook::none;
  int powersgd_rank = 1;               // PowerSGDState matrix_approximation_rank (default 1)
  int powersgd_start_iter = 1000;      // PowerSGDState start_powerSGD_iter (default 1,000)

  // every strategy
  ActivationCheckpointing activation_checkpointing = ActivationCheckpointing::none;
  int checkpointed_blocks = 0;  // with blocks: only the first N repeated blocks (0: all)
  OptimizerImpl optimizer_impl = OptimizerImpl::automatic;

  // Not a strategy setting: the most work a simulation of the plan may take (--max-ops).
  std::int64_t max_ops = kDefaultMaxOps;
};

std::string_view bucket_order_name(BucketOrder o);
std::string_view averaging_name(Averaging a);
std::optional<Averaging> parse_averaging(std::string_view name);  // "flat", "bucketed", "per-param"
std::string_view backward_prefetch_name(BackwardPrefetch p);
std::optional<BackwardPrefetch> parse_backward_prefetch(std::string_view name);
std::string_view comm_hook_name(CommHook h);
std::optional<CommHook> parse_comm_hook(std::string_view name);
std::string_view activation_checkpointing_name(ActivationCheckpointing c);
std::optional<ActivationCheckpointing> parse_activation_checkpointing(std::string_view name);
std::string_view zero_impl_name(ZeroImpl z);
std::optional<ZeroImpl> parse_zero_impl(std::string_view name);
std::string_view optimizer_impl_name(OptimizerImpl o);  // "auto", "for-loop", "foreach", "fused"
std::optional<OptimizerImpl> parse_optimizer_impl(std::string_view name);
inline CollectiveRequest collective_request(const Knobs& k) {
  return {k.algorithm, k.protocol, k.channels, k.algorithm_list, k.protocol_list};
}

}  // namespace redsim
