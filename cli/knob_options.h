// The strategy-knob options shared by simulate (and later run, validate): parsed into Knobs,
// optionally on top of a --config file, with explicit flags winning.
#pragma once
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "core/knobs.h"
#include "core/trace.h"

namespace redsim::cli {

struct KnobOptions {
  std::string strategy = "bucketed";
  double bucket_mb = 25.0;
  double first_bucket_mb = 1.0;
  std::string bucket_order = "execution";
  std::string channels = "auto";
  std::string algorithm = "auto";
  std::string protocol = "auto";
  std::string wire_dtype;  // empty: the parameters' own dtype
  std::string reduce_op = "avg";
  std::string config_file;
  bool no_broadcast_buffers = false;
  int zero_stage = 2;
  double allgather_bucket_mb = 1000e6 / 1048576.0;
  bool no_overlap_comm = false;
  std::string zero_impl = "deepspeed";
  int microbatches = 1;
  bool sync_every_microbatch = false;
  int localsgd_period = 1;
  std::string localsgd_averaging = "flat";
  std::string optimizer_impl = "auto";
  std::int64_t max_ops = kDefaultMaxOps;
  std::string fsdp_wrap = "0";
  std::string reshard_after_forward = "true";
  std::string backward_prefetch = "backward_pre";
  std::string forward_prefetch = "false";
  int shard_group = 0;
  std::string comm_hook = "none";
  int powersgd_rank = 1;
  int powersgd_start_iter = 1000;
  std::string activation_checkpointing = "none";
  int checkpointed_blocks = 0;

  CLI::Option* activation_checkpointing_opt = nullptr;
  CLI::Option* checkpointed_blocks_opt = nullptr;
  CLI::Option* strategy_opt = nullptr;
  CLI::Option* bucket_mb_opt = nullptr;
  CLI::Option* first_bucket_mb_opt = nullptr;
  CLI::Option* bucket_order_opt = nullptr;
  CLI::Option* channels_opt = nullptr;
  CLI::Option* algorithm_opt = nullptr;
  CLI::Option* protocol_opt = nullptr;
  CLI::Option* wire_dtype_opt = nullptr;
  CLI::Option* reduce_op_opt = nullptr;
  CLI::Option* no_broadcast_buffers_opt = nullptr;
  CLI::Option* zero_stage_opt = nullptr;
  CLI::Option* allgather_bucket_mb_opt = nullptr;
  CLI::Option* no_overlap_comm_opt = nullptr;
  CLI::Option* zero_impl_opt = nullptr;
  CLI::Option* microbatches_opt = nullptr;
  CLI::Option* sync_every_microbatch_opt = nullptr;
  CLI::Option* localsgd_period_opt = nullptr;
  CLI::Option* localsgd_averaging_opt = nullptr;
  CLI::Option* optimizer_impl_opt = nullptr;
  CLI::Option* fsdp_wrap_opt = nullptr;
  CLI::Option* reshard_after_forward_opt = nullptr;
  CLI::Option* backward_prefetch_opt = nullptr;
  CLI::Option* forward_prefetch_opt = nullptr;
  CLI::Option* shard_group_opt = nullptr;
  CLI::Option* comm_hook_opt = nullptr;
  CLI::Option* powersgd_rank_opt = nullptr;
  CLI::Option* powersgd_start_iter_opt = nullptr;
};

// all_strategies: whether --strategy takes "all" (simulate: one row each); run and validate
// measure one strategy at a time.
void add_knob_options(CLI::App* cmd, KnobOptions& o, bool all_strategies = true);
// --compute-scale F, for the commands that put a trace on a cluster: the trace's compute times are
// divided by F whatever devices the trace and cluster name (core/compute_reference.h).
void add_compute_scale_option(CLI::App* cmd, std::string& value);
std::optional<double> parse_compute_scale(const std::string& value);
// --batch-size N (simulate, tune, run, validate): the trace's layers evaluated at N samples per rank
// from its batch curve (core/trace_batch.h, load_trace_at); 0 keeps the trace's own batch.
void add_batch_size_option(CLI::App* cmd, std::int64_t& value);
// --layout N|NODESxDEVICES (simulate, tune, run, validate): the part of the cluster file to use, as a
// profiled or measured run used it (collectives/cluster_subset.h, cluster_part).
void add_layout_option(CLI::App* cmd, std::string& value);
// A size in MiB as bytes (rounded), for the --*-mb options; InputError naming `flag` unless it is
// positive, finite, at most 1 TiB and at least one byte.
std::int64_t mib_to_bytes(double mib, const char* flag);
// --optimizer-impl auto|for-loop|foreach|fused (simulate, run, validate and tune): `extra_help` is
// appended to the help; the value is parsed by optimizer_impl_option, which throws InputError.
CLI::Option* add_optimizer_impl_option(CLI::App* cmd, std::string& value, const std::string& extra_help = "");
OptimizerImpl optimizer_impl_option(const std::string& value);
// Builds Knobs: defaults, then --config FILE (its "knobs" member, or the whole object), then
// the flags given on the command line. Throws InputError for bad values.
Knobs resolve_knobs(const KnobOptions& o);
// The knob errors that need the trace (activation checkpointing): one that a --config file's knob
// caused names the file and the knob's JSON path, as every other config error does.
void check_knobs_for_trace(const KnobOptions& o, const Knobs& k, const ModelTrace& trace);

}  // namespace redsim::cli
