// The knob space redsim tune searches: the axes of the grid, the constraints that shape it, and
// the grid itself, enumerated in one canonical order (which also breaks ties between equal
// predictions). A grid point is a Candidate: a strategy family and the full Knobs that
// `redsim simulate --config` would run.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/knobs.h"
#include "core/plan.h"
#include "core/trace.h"

namespace redsim::tune {

// What the user constrains.
struct TuneConstraints {
  // Decimal GB (10^9 bytes) of device memory per rank for model state; unset = the cluster's
  // device.memory_GB; 0 (either way) = no limit.
  std::optional<double> memory_per_device_GB;
  // Micro-batches per optimizer step (M). Every family is compared over the same samples: the
  // time of one optimizer step of M micro-batches per rank (see tune/README.md).
  int microbatches = 1;
  int max_localsgd_period = 1;   // LocalSGD periods searched: 1, 2, 4, ... up to this (and it)
  bool allow_compression = false;  // also search fp16/bf16 gradients on the wire
  std::vector<std::string> strategies;  // families to search; empty = all five
  // Activation checkpointing: unset = where a setting does not fit without it (it only adds
  // the recompute, so of a setting that fits, the checkpointed copy never wins); or every
  // setting one way (--activation-checkpointing none|blocks).
  std::optional<ActivationCheckpointing> activation_checkpointing;
  // How the optimizer steps, for its memory (Knobs::optimizer_impl): the same for every setting.
  OptimizerImpl optimizer_impl = OptimizerImpl::automatic;
};

// In SearchAxes::fsdp_wrap_elems: a unit per repeated block (Knobs::fsdp_wrap_blocks).
inline constexpr std::int64_t kWrapBlocks = -1;

// The values each knob takes in the grid.
struct SearchAxes {
  std::vector<std::int64_t> bucket_bytes;        // DDP bucket_cap / ZeRO reduce bucket (the "line" axis)
  std::vector<std::int64_t> first_bucket_bytes;  // DDP first bucket; only values <= the bucket cap are used
  std::vector<int> channels;                        // 0 = auto (NCCL's own count)
  std::vector<std::optional<Algorithm>> algorithms;  // nullopt = auto (NCCL's own choice)
  std::vector<BucketOrder> bucket_orders;
  std::vector<int> zero_stages;
  std::vector<std::int64_t> allgather_bucket_bytes;
  std::vector<int> localsgd_periods;
  std::vector<std::optional<DType>> wire_dtypes;  // nullopt = the parameters' own dtype
  // fsdp (searched only when asked for: --strategies fsdp, --target fsdp|deepspeed)
  std::vector<std::int64_t> fsdp_wrap_elems;            // 0 = a unit per trace layer; kWrapBlocks = per repeated block
  std::vector<bool> reshard_after_forward;              // true = FULL_SHARD, false = SHARD_GRAD_OP
  std::vector<BackwardPrefetch> backward_prefetches;
  // hsdp (searched only when asked for: --strategies hsdp), with the fsdp axes above: ranks per
  // shard group, 0 = the devices of a node. Empty = the node and its power-of-two multiples;
  // sizes that do not divide the world, or are 1 or the whole world (DDP, fsdp), are left out.
  std::vector<int> hsdp_shard_groups;
  // On a cluster with NCCL collectives, search NCCL's settings (NCCL_ALGO auto and each algorithm
  // NCCL runs there, NCCL's channels) instead of `algorithms` and `channels`. False: take the
  // axes as given (a framework's defaults are one point: auto, auto).
  bool nccl_settings = true;
  // With nccl_settings, also search NCCL_ALGO for fsdp and hsdp where NCCL runs their allgathers
  // and reduce-scatters on PAT (auto, Ring, PAT); false where the target's file cannot carry it.
  bool sharded_nccl_algo = true;
};

// The standard axes: buckets 1 MiB .. 1 GiB in powers of two, first bucket 1/4/16 MiB, channels
// 1/2/4/8/16, ring/tree/hierarchical (on a cluster with NCCL collectives build_grid replaces these
// two with NCCL's own settings: auto, and each NCCL_ALGO NCCL can run there), both bucket orders, ZeRO stages 2 and 1, allgather buckets
// 16/64/256/1024 MiB, LocalSGD periods 1, 2, 4, ... max, wire dtype native (+ fp16, bf16 with
// allow_compression).
SearchAxes standard_axes(const TuneConstraints& constraints);

// The families searched by default, in canonical order (redsim's strategy order).
std::vector<std::string> tune_families();
// ... and every family the grid can hold: the defaults plus fsdp and hsdp (searched when asked for).
std::vector<std::string> searchable_families();

struct Candidate {
  // The strategy family a row of the table belongs to. With M > 1 micro-batches the "bucketed"
  // family runs as accumulate with sync_every_microbatch (DDP without no_sync): that is what
  // bucketed DDP does over M micro-batches, and its knobs say so.
  std::string family;
  Knobs knobs;
};

struct Grid {
  std::vector<Candidate> points;                // canonical order
  std::vector<std::size_t> line_of;             // per point: its line
  std::vector<std::vector<std::size_t>> lines;  // points that differ only in bucket size, ascending
  std::vector<std::string> notes;               // what was left out of the space, and why
};

// Validates the constraints and axes (InputError on nonsense) and enumerates the grid.
Grid build_grid(const SearchAxes& axes, const TuneConstraints& constraints, const ClusterSpec& cluster);

// The memory limit in bytes (0 = none), from the constraints or the cluster.
std::int64_t memory_limit_bytes(const TuneConstraints& constraints, const ClusterSpec& cluster);

// Human-readable knob descriptions for tables: "bucket 32 MiB, first 1 MiB, execution, ring x 8".
std::string describe_knobs(const Candidate& c);
std::string algorithm_label(const Knobs& k);  // "ring", or "auto"
std::string channels_label(const Knobs& k);   // "8", or "auto"
std::string format_bytes_binary(std::int64_t bytes);  // "25 MiB", "1 GiB", "1.50 MiB", "512 KiB"
std::string format_GiB(std::int64_t bytes);  // binary: "74.51 GiB", "50.00 MiB"
// "params 1.00 GiB, grads ..., activations 2.00 GiB" (or "activations not in the trace").
std::string memory_words(const RankMemory& m);

// The hsdp shard-group sizes the grid holds for these axes on this cluster, ascending.
std::vector<int> hsdp_group_sizes(const SearchAxes& axes, const ClusterSpec& cluster);

}  // namespace redsim::tune
