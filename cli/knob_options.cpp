#include "cli/knob_options.h"

#include <cmath>

#include "core/error.h"
#include "core/join.h"
#include "core/json_in.h"
#include "core/knobs_json.h"
#include "core/nccl_list.h"
#include "core/units.h"
#include "strategies/checkpointing.h"
#include "strategies/strategy.h"

namespace redsim::cli {

namespace {

void add_sharding_and_hook_options(CLI::App* cmd, KnobOptions& o) {
  o.fsdp_wrap_opt = cmd->add_option("--fsdp-wrap", o.fsdp_wrap,
                                    "fsdp/hsdp: FSDP unit size in parameters (elements, size_based_auto_wrap_policy's "
                                    "min_num_params); 0: one unit per trace layer; blocks: one per repeated block "
                                    "(ModuleWrapPolicy on the block class), the layers between blocks the root's")
                        ->capture_default_str();
  o.reshard_after_forward_opt =
      cmd->add_option("--reshard-after-forward", o.reshard_after_forward,
                      "fsdp/hsdp: true (FULL_SHARD: gather again before backward) or false (SHARD_GRAD_OP)")
          ->capture_default_str();
  o.backward_prefetch_opt = cmd->add_option("--backward-prefetch", o.backward_prefetch,
                                            "fsdp/hsdp: backward_pre|backward_post|none (FSDP's BackwardPrefetch)")
                                ->capture_default_str();
  o.forward_prefetch_opt = cmd->add_option("--forward-prefetch", o.forward_prefetch,
                                           "fsdp/hsdp: true|false: gather the next unit before this unit's forward")
                               ->capture_default_str();
  o.shard_group_opt = cmd->add_option("--shard-group", o.shard_group,
                                      "hsdp: ranks per shard group (must divide the world); 0: the devices of a node")
                          ->capture_default_str();
  o.comm_hook_opt = cmd->add_option("--comm-hook", o.comm_hook,
                                    "bucketed: DDP communication hook none|fp16|bf16|powersgd")
                        ->capture_default_str();
  o.powersgd_rank_opt = cmd->add_option("--powersgd-rank", o.powersgd_rank,
                                        "bucketed --comm-hook powersgd: matrix approximation rank r (1-1024)")
                            ->capture_default_str();
  o.powersgd_start_iter_opt =
      cmd->add_option("--powersgd-start-iter", o.powersgd_start_iter,
                      "bucketed --comm-hook powersgd: iterations of plain allreduce before compressing (the "
                      "simulated step is a compressed one; recorded for the DDP hook's start_powerSGD_iter)")
          ->capture_default_str();
  o.activation_checkpointing_opt =
      cmd->add_option("--activation-checkpointing", o.activation_checkpointing,
                      "none|blocks: blocks checkpoints every repeated block of the trace (layers named with a "
                      "numeric index, e.g. model.layers.7.*): it keeps its input and recomputes its forward in "
                      "backward (needs the trace's input_bytes)")
          ->capture_default_str();
  o.checkpointed_blocks_opt =
      cmd->add_option("--checkpointed-blocks", o.checkpointed_blocks,
                      "with --activation-checkpointing blocks: only the first N repeated blocks (Megatron's "
                      "--recompute-method block); 0: all")
          ->capture_default_str();
}

// --fsdp-wrap N: 0 or more parameters (elements).
std::int64_t parse_wrap_elems(const std::string& text) {
  std::size_t used = 0;
  long long v = -1;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || v < 0)
    throw InputError("", "", "--fsdp-wrap: expected blocks or 0 or more parameters, got \"" + text + "\"");
  return v;
}

bool parse_bool_flag(const std::string& text, const char* flag) {
  if (text == "true") return true;
  if (text == "false") return false;
  throw InputError("", "", std::string(flag) + ": expected true|false, got \"" + text + "\"");
}

}  // namespace

std::int64_t mib_to_bytes(double mib, const char* flag) {
  if (!(mib > 0) || !std::isfinite(mib) || mib > 1024.0 * 1024.0)
    throw InputError("", "", std::string(flag) + ": expected a positive size in MiB (at most 1 TiB), got " +
                                 std::to_string(mib));
  const auto bytes = static_cast<std::int64_t>(std::llround(mib * static_cast<double>(kMiB)));
  if (bytes < 1) throw InputError("", "", std::string(flag) + ": expected a size of at least one byte, got " + std::to_string(mib) + " MiB");
  return bytes;
}

void add_knob_options(CLI::App* cmd, KnobOptions& o, bool all_strategies) {
  const std::string names = join(strategy_names(), "|");
  o.strategy_opt = cmd->add_option("--strategy", o.strategy,
                                   "reduction strategy: " + names + (all_strategies ? ", or all (one row each)" : ""))
                       ->capture_default_str();
  o.bucket_mb_opt =
      cmd->add_option("--bucket-mb", o.bucket_mb,
                      "bucket cap in MiB (2^20 bytes, as PyTorch DDP's bucket_cap_mb)")
          ->capture_default_str();
  o.first_bucket_mb_opt =
      cmd->add_option("--first-bucket-mb", o.first_bucket_mb,
                      "cap of the first bucket in MiB (DDP's _DEFAULT_FIRST_BUCKET_BYTES is 1 MiB)")
          ->capture_default_str();
  o.bucket_order_opt = cmd->add_option("--bucket-order", o.bucket_order,
                                       "execution: observed gradient-ready order (DDP after its first iteration); "
                                       "definition: reverse registration order (DDP's first iteration)")
                           ->capture_default_str();
  o.channels_opt = cmd->add_option("--channels", o.channels,
                                   "channels per collective (NCCL channels: rings or trees, each carrying 1/channels "
                                   "of the bytes), 1-64, or auto: as many as NCCL uses at each size "
                                   "(NCCL_MIN_NCHANNELS = NCCL_MAX_NCHANNELS pins it)")
                       ->capture_default_str();
  o.algorithm_opt = cmd->add_option("--algorithm", o.algorithm,
                                    "allreduce algorithm (NCCL_ALGO): auto (the cluster's collective model chooses "
                                    "per size, as NCCL does)|ring|tree (double binary tree)|nvls|nvlstree|collnet|"
                                    "hierarchical (intra-node reduce-scatter, inter-node allreduce, intra-node "
                                    "allgather; not an NCCL algorithm)|pat (allgather and reduce-scatter only, one "
                                    "GPU a node, NCCL 2.23+); NCCL's spellings (Ring, NVLSTree, PAT) accepted, and NCCL_ALGO's "
                                    "lists (Ring,Tree), exclusions (^NVLS) and, from NCCL 2.24, entries per collective "
                                    "(\"allreduce:Tree;allgather:Ring\")")
                        ->capture_default_str();
  o.protocol_opt = cmd->add_option("--protocol", o.protocol,
                                   "collective protocol (NCCL_PROTO): auto|ll|ll128|simple (LL, LL128, Simple), or NCCL_PROTO's "
                                   "lists (LL,Simple), exclusions (^LL128) and entries per collective (2.24+); "
                                   "clusters with ideal collectives have none")
                       ->capture_default_str();
  o.wire_dtype_opt = cmd->add_option("--wire-dtype", o.wire_dtype,
                                     "gradient dtype on the wire: fp32|fp16|bf16 (default: each parameter's dtype)");
  o.reduce_op_opt =
      cmd->add_option("--reduce-op", o.reduce_op, "reduce op: sum|avg|max|min|prod")->capture_default_str();
  o.no_broadcast_buffers_opt = cmd->add_flag("--no-broadcast-buffers", o.no_broadcast_buffers,
                                             "skip DDP's broadcast of rank 0's buffers before forward (broadcast_buffers=False)");
  o.zero_stage_opt = cmd->add_option("--zero-stage", o.zero_stage, "zero: ZeRO stage, 1 (optimizer state) or 2 (+ gradients)")
                         ->capture_default_str();
  o.allgather_bucket_mb_opt =
      cmd->add_option("--allgather-bucket-mb", o.allgather_bucket_mb,
                      "zero: parameter allgather bucket in MiB (DeepSpeed's default 5e8 fp16 elements = 953.67 MiB)")
          ->capture_default_str();
  o.no_overlap_comm_opt = cmd->add_flag("--no-overlap-comm", o.no_overlap_comm,
                                        "zero: reduce gradients only after backward (DeepSpeed overlap_comm=false)");
  o.zero_impl_opt = cmd->add_option("--zero-impl", o.zero_impl,
                                    "zero: deepspeed (reduce to each owner, allgather; stages 1 and 2) or pytorch "
                                    "(ZeroRedundancyOptimizer: DDP's bucket allreduces, then every parameter broadcast "
                                    "from its owner; stage 1)")
                        ->capture_default_str();
  o.microbatches_opt =
      cmd->add_option("--microbatches", o.microbatches, "accumulate: micro-batches per optimizer step (M)")->capture_default_str();
  o.sync_every_microbatch_opt = cmd->add_flag("--sync-every-microbatch", o.sync_every_microbatch,
                                              "accumulate: allreduce after every micro-batch (the naive baseline)");
  o.localsgd_period_opt = cmd->add_option("--localsgd-period", o.localsgd_period,
                                          "localsgd: local steps H between parameter averagings")
                              ->capture_default_str();
  o.localsgd_averaging_opt =
      cmd->add_option("--localsgd-averaging", o.localsgd_averaging,
                      "localsgd: flat (one allreduce of all parameters, PyTorch's PeriodicModelAverager), bucketed "
                      "(DDP's buckets) or per-param (one allreduce each, HF accelerate)")
          ->capture_default_str();
  o.optimizer_impl_opt = add_optimizer_impl_option(cmd, o.optimizer_impl);
  cmd->add_option("--max-ops", o.max_ops,
                  "refuse a simulation of more op instances (plan ops x ranks) or, at exact fidelity, more "
                  "point-to-point transfers than this (README.md, Limits)")
      ->capture_default_str();
  add_sharding_and_hook_options(cmd, o);
  cmd->add_option("--config", o.config_file,
                  "JSON file with a \"knobs\" object (e.g. written by redsim tune); flags given here override it");
}

namespace {

int parse_channels(const std::string& text) {
  if (text == "auto") return 0;
  std::size_t used = 0;
  int v = 0;
  try {
    v = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || v < 1 || v > 64)
    throw InputError("", "", "--channels: expected auto or a channel count from 1 to 64, got \"" + text + "\"");
  return v;
}

void resolve_sharding_and_hook_knobs(const KnobOptions& o, Knobs& k) {
  auto take = [&](const CLI::Option* opt) { return (opt != nullptr && opt->count() > 0) || o.config_file.empty(); };
  if (take(o.fsdp_wrap_opt)) {
    k.fsdp_wrap_blocks = o.fsdp_wrap == "blocks";
    k.fsdp_wrap_elems = k.fsdp_wrap_blocks ? 0 : parse_wrap_elems(o.fsdp_wrap);
  }
  if (take(o.reshard_after_forward_opt))
    k.reshard_after_forward = parse_bool_flag(o.reshard_after_forward, "--reshard-after-forward");
  if (take(o.backward_prefetch_opt)) {
    auto p = parse_backward_prefetch(o.backward_prefetch);
    if (!p) throw InputError("", "", "--backward-prefetch: expected backward_pre|backward_post|none, got \"" + o.backward_prefetch + "\"");
    k.backward_prefetch = *p;
  }
  if (take(o.forward_prefetch_opt)) k.forward_prefetch = parse_bool_flag(o.forward_prefetch, "--forward-prefetch");
  if (take(o.shard_group_opt)) {
    if (o.shard_group < 0 || o.shard_group > 1'000'000)
      throw InputError("", "", "--shard-group: expected 0 to 1000000 ranks, got " + std::to_string(o.shard_group));
    k.shard_group = o.shard_group;
  }
  if (take(o.comm_hook_opt)) {
    auto h = parse_comm_hook(o.comm_hook);
    if (!h) throw InputError("", "", "--comm-hook: expected none|fp16|bf16|powersgd, got \"" + o.comm_hook + "\"");
    k.comm_hook = *h;
  }
  if (take(o.powersgd_rank_opt)) {
    if (o.powersgd_rank < 1 || o.powersgd_rank > 1024)
      throw InputError("", "", "--powersgd-rank: expected 1 to 1024, got " + std::to_string(o.powersgd_rank));
    k.powersgd_rank = o.powersgd_rank;
  }
  if (take(o.powersgd_start_iter_opt)) {
    if (o.powersgd_start_iter < 0)
      throw InputError("", "", "--powersgd-start-iter: expected 0 or more, got " + std::to_string(o.powersgd_start_iter));
    k.powersgd_start_iter = o.powersgd_start_iter;
  }
  if (take(o.activation_checkpointing_opt)) {
    auto c = parse_activation_checkpointing(o.activation_checkpointing);
    if (!c)
      throw InputError("", "", "--activation-checkpointing: expected none|blocks, got \"" + o.activation_checkpointing + "\"");
    k.activation_checkpointing = *c;
  }
  if (take(o.checkpointed_blocks_opt)) {
    if (o.checkpointed_blocks < 0 || o.checkpointed_blocks > 1'000'000)
      throw InputError("", "", "--checkpointed-blocks: expected 0 (all) to 1000000, got " + std::to_string(o.checkpointed_blocks));
    k.checkpointed_blocks = o.checkpointed_blocks;
  }
}

}  // namespace

namespace {

bool given(const CLI::Option* opt) { return opt != nullptr && opt->count() > 0; }

// The knobs of a --config file: its "knobs" member, or the whole object; knobs_path says which.
Knobs config_knobs(const std::string& file, std::string& knobs_path) {
  auto j = JsonIn::parse_file(file);
  JsonIn root(j, "$", file);
  root.expect_object();
  if (auto knobs = root.find("knobs")) {
    knobs_path = "$.knobs";
    return knobs_from_json(knobs->raw(), file, knobs_path, Knobs{});
  }
  return knobs_from_json(j, file, "$", Knobs{});
}

// A one-line error for an unknown strategy, naming the config file and path when it came from one.
void check_strategy_name(const std::string& strategy, const std::string& config_file, const std::string& knobs_path) {
  if (strategy == "all") return;
  try {
    make_strategy(strategy);
  } catch (const InputError&) {
    if (config_file.empty()) throw;
    throw InputError(config_file, knobs_path + ".strategy",
                     "expected one of " + join(strategy_names(), "|") + ", got \"" + strategy + "\"");
  }
}

// zero's knobs: the stage, DeepSpeed's buckets and overlap, and whose ZeRO.
void resolve_zero_knobs(const KnobOptions& o, Knobs& k) {
  if (given(o.zero_stage_opt) || o.config_file.empty()) {
    if (o.zero_stage != 1 && o.zero_stage != 2)
      throw InputError("", "", "--zero-stage: expected 1 or 2 (stage 3 shards the parameters too: --strategy fsdp), got " +
                                   std::to_string(o.zero_stage));
    k.zero_stage = o.zero_stage;
  }
  if (given(o.allgather_bucket_mb_opt) || o.config_file.empty())
    k.allgather_bucket_bytes = mib_to_bytes(o.allgather_bucket_mb, "--allgather-bucket-mb");
  if (given(o.no_overlap_comm_opt)) k.overlap_comm = false;
  if (given(o.zero_impl_opt)) {
    auto z = parse_zero_impl(o.zero_impl);
    if (!z) throw InputError("", "", "--zero-impl: expected deepspeed|pytorch, got \"" + o.zero_impl + "\"");
    k.zero_impl = *z;
  }
  if (k.zero_impl == ZeroImpl::pytorch) {
    if (given(o.zero_stage_opt) && o.zero_stage != 1)
      throw InputError("", "", "--zero-impl pytorch: ZeroRedundancyOptimizer is ZeRO stage 1; drop --zero-stage " +
                                   std::to_string(o.zero_stage));
    k.zero_stage = 1;
  }
}

}  // namespace

void check_knobs_for_trace(const KnobOptions& o, const Knobs& k, const ModelTrace& trace) {
  try {
    checkpoint_blocks(trace, k);
  } catch (const InputError& e) {
    const std::string what = e.what();
    const bool count = what.rfind("--checkpointed-blocks", 0) == 0;
    if (o.config_file.empty() || given(count ? o.checkpointed_blocks_opt : o.activation_checkpointing_opt)) throw;
    std::string knobs_path = "$";
    config_knobs(o.config_file, knobs_path);
    throw InputError(o.config_file, knobs_path + (count ? ".checkpointed_blocks" : ".activation_checkpointing"),
                     "expected a setting this trace allows: " + what.substr(what.find(':') + 2));
  }
}

Knobs resolve_knobs(const KnobOptions& o) {
  std::string knobs_path = "$";  // where the config file's knobs are
  Knobs k = o.config_file.empty() ? Knobs{} : config_knobs(o.config_file, knobs_path);
  if (given(o.strategy_opt) || o.config_file.empty()) k.strategy = o.strategy;
  if (given(o.bucket_mb_opt) || o.config_file.empty()) k.bucket_cap_bytes = mib_to_bytes(o.bucket_mb, "--bucket-mb");
  if (given(o.first_bucket_mb_opt) || o.config_file.empty())
    k.first_bucket_cap_bytes = mib_to_bytes(o.first_bucket_mb, "--first-bucket-mb");
  if (given(o.bucket_order_opt) || o.config_file.empty()) {
    if (o.bucket_order == "execution")
      k.bucket_order = BucketOrder::execution;
    else if (o.bucket_order == "definition")
      k.bucket_order = BucketOrder::definition;
    else
      throw InputError("", "", "--bucket-order: expected execution|definition, got \"" + o.bucket_order + "\"");
  }
  if (given(o.channels_opt) || o.config_file.empty()) k.channels = parse_channels(o.channels);
  std::string why;
  if ((given(o.algorithm_opt) || o.config_file.empty()) &&
      !parse_algorithm_setting(o.algorithm, &k.algorithm, &k.algorithm_list, &why))
    throw InputError("", "", "--algorithm: " + why);
  if ((given(o.protocol_opt) || o.config_file.empty()) &&
      !parse_protocol_setting(o.protocol, &k.protocol, &k.protocol_list, &why))
    throw InputError("", "", "--protocol: " + why);
  if (given(o.wire_dtype_opt)) {
    auto t = parse_dtype(o.wire_dtype);
    if (!t || (*t != DType::fp32 && *t != DType::fp16 && *t != DType::bf16))
      throw InputError("", "", "--wire-dtype: expected fp32|fp16|bf16, got \"" + o.wire_dtype + "\"");
    k.wire_dtype = t;
  }
  if (given(o.reduce_op_opt) || o.config_file.empty()) {
    auto r = parse_reduce_op(o.reduce_op);
    if (!r) throw InputError("", "", "--reduce-op: expected sum|avg|max|min|prod, got \"" + o.reduce_op + "\"");
    k.reduce_op = *r;
  }
  if (given(o.no_broadcast_buffers_opt)) k.broadcast_buffers = false;
  resolve_zero_knobs(o, k);
  if (given(o.microbatches_opt) || o.config_file.empty()) {
    if (o.microbatches < 1 || o.microbatches > 4096)
      throw InputError("", "", "--microbatches: expected 1 to 4096, got " + std::to_string(o.microbatches));
    k.microbatches = o.microbatches;
  }
  if (given(o.sync_every_microbatch_opt)) k.sync_every_microbatch = true;
  if (given(o.localsgd_period_opt) || o.config_file.empty()) {
    if (o.localsgd_period < 1 || o.localsgd_period > 4096)
      throw InputError("", "", "--localsgd-period: expected 1 to 4096, got " + std::to_string(o.localsgd_period));
    k.localsgd_period = o.localsgd_period;
  }
  if (given(o.localsgd_averaging_opt) || o.config_file.empty()) {
    auto a = parse_averaging(o.localsgd_averaging);
    if (!a) throw InputError("", "", "--localsgd-averaging: expected flat|bucketed|per-param, got \"" + o.localsgd_averaging + "\"");
    k.localsgd_averaging = *a;
  }
  if (given(o.optimizer_impl_opt) || o.config_file.empty()) k.optimizer_impl = optimizer_impl_option(o.optimizer_impl);
  if (o.max_ops < 1) throw InputError("", "", "--max-ops: expected a positive count, got " + std::to_string(o.max_ops));
  k.max_ops = o.max_ops;
  resolve_sharding_and_hook_knobs(o, k);
  check_strategy_name(k.strategy, given(o.strategy_opt) ? "" : o.config_file, knobs_path);
  return k;
}

CLI::Option* add_optimizer_impl_option(CLI::App* cmd, std::string& value, const std::string& extra_help) {
  return cmd
      ->add_option("--optimizer-impl", value,
                   "how the optimizer steps, for the memory its step holds: auto (DeepSpeed's FusedAdam for zero, "
                   "else PyTorch's default: foreach on GPUs, for-loop on CPUs), for-loop, foreach or fused" +
                       extra_help)
      ->capture_default_str();
}

OptimizerImpl optimizer_impl_option(const std::string& value) {
  const auto impl = parse_optimizer_impl(value);
  if (!impl) throw InputError("", "", "--optimizer-impl: expected auto|for-loop|foreach|fused, got \"" + value + "\"");
  return *impl;
}

void add_compute_scale_option(CLI::App* cmd, std::string& value) {
  cmd->add_option("--compute-scale", value,
                  "divide the trace's compute times by this factor (needed when the trace's reference_device is "
                  "neither the cluster's device nor its speedup_reference); default: from the devices");
}

void add_batch_size_option(CLI::App* cmd, std::int64_t& value) {
  cmd->add_option("--batch-size", value,
                  "samples per rank per micro-batch: the trace's layer times evaluated at this batch from the curve it "
                  "was captured with (redsim_capture.py --batch-sizes; traces/README.md); default: the trace's own")
      ->check(CLI::Range(std::int64_t{1}, kMaxBatchSizePerRank));
}

void add_layout_option(CLI::App* cmd, std::string& value) {
  cmd->add_option("--layout", value,
                  "use part of the cluster: N (its first N ranks: up to one node's devices, or whole nodes) or "
                  "NODESxDEVICES (e.g. 1x2: two devices of one node), as the run you compare with or size used it");
}

std::optional<double> parse_compute_scale(const std::string& value) {
  if (value.empty()) return std::nullopt;
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != value.size() || !(v > 0) || !std::isfinite(v) || v > 1e6)
    throw InputError("", "", "--compute-scale: expected a number > 0 and at most 1e6, got \"" + value + "\"");
  return v;
}

}  // namespace redsim::cli
