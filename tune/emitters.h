// Ready-to-paste settings for the frameworks, from a tuned setting. Frameworks disagree on
// units and every snippet states its conversions: PyTorch DDP's bucket_cap_mb is in MiB
// (25 MiB = 26,214,400 bytes) and its first-bucket cap in bytes; DeepSpeed counts ELEMENTS
// (a 500 MB fp16 bucket is 250,000,000); Horovod's fusion threshold is in bytes; NCCL counts
// channels.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/cluster.h"
#include "core/trace.h"
#include "tune/search_space.h"
#include "tune/tuner.h"

namespace redsim::tune {

struct EmitInputs {
  const ModelTrace* trace = nullptr;
  const ClusterSpec* cluster = nullptr;
  int microbatches = 1;
  Candidate chosen;
  double chosen_objective_s = 0;
  // When the chosen family is not expressible in a framework, that framework's snippet gives
  // the best setting it can express, with its predicted time: the best simulated one, or the
  // step model's best if the search pruned that family (then *_simulated is false).
  std::optional<Candidate> best_ddp;  // flat, bucketed, accumulate or localsgd
  double best_ddp_objective_s = 0;
  bool best_ddp_simulated = true;
  std::optional<Candidate> best_zero;
  double best_zero_objective_s = 0;
  bool best_zero_simulated = true;
};
EmitInputs emit_inputs(const TuneResult& r, const ModelTrace& trace, const ClusterSpec& cluster, int microbatches);

struct Snippet {
  std::string file;  // pytorch_ddp.py, deepspeed_config.json, horovod.env, nccl.env, README.txt
  std::string contents;
  std::string comment;  // the unit conversions, for printing above snippets that cannot hold comments (JSON)
};
std::vector<Snippet> emit_snippets(const EmitInputs& in);

// NCCL_ALGO pinning `alg` under the cluster's release (collectives/nccl_algo_pin.h): what it does
// to each collective, in words, and the shell assignment (quoted where the value holds ';').
std::string nccl_algo_effect(Algorithm alg, int nccl_version);
std::string nccl_algo_assignment(Algorithm alg, int nccl_version);
// `variable=value` for a shell, the value double-quoted unless it is only letters, digits, ',',
// ':' and '^' (';' ends a command; an assignment's value is not globbed, so zsh's '^' is plain
// there). Values are NCCL's own spellings (core/nccl_list.h), never user text.
std::string nccl_env_assignment(std::string_view variable, const std::string& value);

// Python lines applying activation checkpointing to `model` as simulated (every repeated block
// wrapped with checkpoint_wrapper); "" when the setting does not checkpoint.
std::string checkpointing_lines(const ModelTrace& trace, const Knobs& k);
// The optimizer as the setting's memory assumed it, when --optimizer-impl pinned how it steps
// (empty for auto: PyTorch's own default is what was simulated).
std::string optimizer_lines(const Knobs& k, bool import_torch);
// DeepSpeed's activation_checkpointing section and the sentence for its comment (the model's
// own code must call deepspeed.checkpointing.checkpoint, or HF's gradient_checkpointing_enable).
void add_deepspeed_checkpointing(const Knobs& k, nlohmann::ordered_json& config, std::string& comment);

// Input-derived text (model and cluster names) for a comment: printable ASCII, at most 200 characters.
std::string comment_safe(const std::string& s);

// Unit conversions (exposed for tests).
std::string ddp_bucket_cap_mb(std::int64_t bytes);  // MiB as DDP's bucket_cap_mb: "25", "0.5", "1.25"
std::int64_t deepspeed_elements(std::int64_t bytes, std::int64_t element_bytes);  // bytes / element size
// The element type of the reduced gradients (the dtype holding most reduced bytes), or the wire dtype.
DType gradient_dtype(const ModelTrace& trace, const Knobs& knobs);
DType parameter_dtype(const ModelTrace& trace);

}  // namespace redsim::tune
