#include "tune/targets.h"

#include <algorithm>
#include <cstdio>

#include "core/error.h"
#include "core/join.h"
#include "core/units.h"
#include "tune/emitters.h"

namespace redsim::tune {

namespace {

// A grid this small is simulated whole: the guided search's step model assumes one FIFO comm
// stream, which FSDP's separate allgather and reduce-scatter streams are not.
constexpr std::size_t kExhaustiveBelowPoints = 32;

// DeepSpeed's default reduce_bucket_size and allgather_bucket_size: 5e8 elements.
constexpr std::int64_t kDeepSpeedBucketElems = 500'000'000;
// Horovod's default HOROVOD_FUSION_THRESHOLD: 128 MiB (horovod/common/operations.cc).
constexpr std::int64_t kHorovodFusionBytes = 128 * kMiB;
// size_based_auto_wrap_policy's default min_num_params.
constexpr std::int64_t kFsdpWrapElems = 100'000'000;

std::vector<std::string> families_of(const std::string& target, int microbatches) {
  std::vector<std::string> f;
  if (target == "ddp") f = {"flat", "bucketed", "accumulate", "localsgd"};
  if (target == "horovod") f = {"flat", "bucketed", "accumulate"};
  if (target == "nccl") f = {"bucketed"};
  if (target == "deepspeed") f = {"zero", "fsdp"};
  if (target == "fsdp") f = {"fsdp", "hsdp"};  // HYBRID_SHARD is FSDP's sharding_strategy too
  (void)microbatches;  // with M = 1 build_grid leaves accumulate out, and says why
  return f;
}

}  // namespace

std::vector<std::string> target_names() { return {"ddp", "deepspeed", "horovod", "nccl", "fsdp"}; }

std::vector<std::string> parse_targets(const std::string& text) {
  const auto all = target_names();
  if (text == "all") return all;
  if (std::find(all.begin(), all.end(), text) == all.end())
    throw InputError("", "", "--target: expected all|" + join(all, "|") + ", got \"" + printable(text) + "\"");
  return {text};
}

void check_strategies(const TuneConstraints& base) {
  const auto all = searchable_families();
  for (const auto& f : base.strategies)
    if (f != "all" && std::find(all.begin(), all.end(), f) == all.end())
      throw InputError("", "", "--strategies: unknown strategy \"" + printable(f) + "\"; expected some of " + join(all, ","));
}

TuneConstraints target_constraints(const std::string& target, const TuneConstraints& base) {
  check_strategies(base);
  TuneConstraints c = base;
  const auto own = families_of(target, base.microbatches);
  if (base.strategies.empty() || std::find(base.strategies.begin(), base.strategies.end(), "all") != base.strategies.end()) {
    c.strategies = own;
  } else {  // --strategies narrows each target further
    c.strategies.clear();
    for (const auto& f : own)
      if (std::find(base.strategies.begin(), base.strategies.end(), f) != base.strategies.end()) c.strategies.push_back(f);
    if (c.strategies.empty())
      throw InputError("", "", "--target " + target + ": searches " + join(own, ",") + ", none of --strategies " +
                                   printable(join(base.strategies, ",")));
  }
  return c;
}

SearchAxes target_axes(const std::string& target, const TuneConstraints& constraints) {
  SearchAxes a = standard_axes(constraints);
  // Hierarchical allreduce is Horovod's (HOROVOD_HIERARCHICAL_ALLREDUCE); neither DDP nor NCCL has it.
  if (target != "horovod") a.algorithms.erase(std::remove(a.algorithms.begin(), a.algorithms.end(), Algorithm::hierarchical),
                                              a.algorithms.end());
  if (target == "horovod") {
    // Horovod fuses tensors in the order they are ready, up to the threshold: no first bucket of
    // its own, no definition order.
    a.first_bucket_bytes = {1 * kMiB};
    a.bucket_orders = {BucketOrder::execution};
  }
  if (target == "nccl") {  // DDP's defaults; only NCCL's environment is searched
    const Knobs k;
    a.bucket_bytes = {k.bucket_cap_bytes};
    a.first_bucket_bytes = {k.first_bucket_cap_bytes};
    a.bucket_orders = {k.bucket_order};
  }
  if (target == "deepspeed") {  // ZeRO-3 as DeepSpeed runs it: always re-gathered for backward, per module
    a.sharded_nccl_algo = false;  // deepspeed_config.json holds no NCCL environment
    a.reshard_after_forward = {true};
    a.backward_prefetches = {BackwardPrefetch::backward_pre, BackwardPrefetch::none};
    a.fsdp_wrap_elems = {0};
  }
  return a;
}

TuneConstraints default_constraints(const std::string& target, const TuneConstraints& base) {
  TuneConstraints c = base;
  c.allow_compression = false;
  c.strategies = {target == "deepspeed" ? "zero" : target == "fsdp" ? "fsdp" : "bucketed"};
  return c;
}

SearchAxes default_axes(const std::string& target, const TuneConstraints& constraints, const ModelTrace& trace) {
  const Knobs k;  // redsim's defaults are DDP's
  SearchAxes a = standard_axes(constraints);
  a.nccl_settings = false;  // NCCL_ALGO and channels unset: NCCL's own choice
  a.algorithms = {std::nullopt};
  a.channels = {0};
  a.bucket_bytes = {target == "horovod" ? kHorovodFusionBytes : k.bucket_cap_bytes};
  a.first_bucket_bytes = {k.first_bucket_cap_bytes};
  a.bucket_orders = {k.bucket_order};
  a.wire_dtypes = {std::nullopt};
  a.zero_stages = {2};
  a.allgather_bucket_bytes = {kDeepSpeedBucketElems * dtype_size_bytes(parameter_dtype(trace))};
  if (target == "deepspeed") a.bucket_bytes = {kDeepSpeedBucketElems * dtype_size_bytes(gradient_dtype(trace, k))};
  a.fsdp_wrap_elems = {kFsdpWrapElems};
  a.reshard_after_forward = {true};
  a.backward_prefetches = {BackwardPrefetch::backward_pre};
  return a;
}

std::string defaults_description(const std::string& target) {
  if (target == "ddp" || target == "nccl")
    return "DDP defaults (bucket_cap_mb=25, first bucket 1 MiB, NCCL_ALGO and channels NCCL's own)";
  if (target == "horovod") return "Horovod defaults (HOROVOD_FUSION_THRESHOLD=128 MiB, no hierarchical allreduce)";
  if (target == "deepspeed")
    return "DeepSpeed ZeRO-2 defaults (reduce_bucket_size and allgather_bucket_size 5e8 elements, overlap_comm)";
  return "FSDP defaults (FULL_SHARD, BACKWARD_PRE, size_based_auto_wrap_policy min_num_params=1e8)";
}

TargetSection tune_target(const ModelTrace& trace, const ClusterSpec& cluster, const TuneConstraints& base,
                          const std::string& target, TuneOptions options) {
  TargetSection s;
  s.target = target;
  const TuneConstraints c = target_constraints(target, base);
  const SearchAxes axes = target_axes(target, c);
  if (options.method == SearchMethod::guided && build_grid(axes, c, cluster).points.size() < kExhaustiveBelowPoints)
    options.method = SearchMethod::exhaustive;
  try {
    s.result = autotune(trace, cluster, c, axes, options);
  } catch (const InputError& e) {
    throw InputError("", "", "--target " + target + ": " + e.what());
  }
  s.best = s.result.candidate(s.result.best);
  s.best_s = s.result.eval(s.result.best).objective_s;
  TuneOptions once = options;
  once.method = SearchMethod::exhaustive;
  once.on_progress = nullptr;
  once.sim.fidelity = s.result.fidelity;  // compared alike
  try {
    const auto d = autotune(trace, cluster, default_constraints(target, base),
                            default_axes(target, default_constraints(target, base), trace), once);
    s.has_defaults = true;
    s.defaults = d.candidate(d.best);
    s.defaults_s = d.eval(d.best).objective_s;
    // Ties within the model's noise keep what the user already runs.
    s.keep_defaults = s.defaults_s <= s.best_s * (1 + kKeepDefaultsGap);
  } catch (const InputError&) {
    s.has_defaults = false;  // the defaults do not fit in memory: nothing to compare with
  }
  return s;
}

std::string section_summary(const TargetSection& s) {
  char buf[400];
  if (!s.has_defaults) {
    std::snprintf(buf, sizeof buf, "predicted %.3f ms per optimizer step; the %s do not fit in memory", s.best_s * 1e3,
                  defaults_description(s.target).c_str());
    return buf;
  }
  if (s.keep_defaults && s.defaults_s <= s.best_s) {
    std::snprintf(buf, sizeof buf,
                  "keep the defaults: %s predicted %.3f ms per optimizer step; no setting searched was faster (best "
                  "%.3f ms)",
                  defaults_description(s.target).c_str(), s.defaults_s * 1e3, s.best_s * 1e3);
    return buf;
  }
  if (s.keep_defaults) {
    std::snprintf(buf, sizeof buf,
                  "keep the defaults: %s predicted %.3f ms per optimizer step; the best setting searched (%.3f ms) is "
                  "within %.0f%%, the model's noise",
                  defaults_description(s.target).c_str(), s.defaults_s * 1e3, s.best_s * 1e3, kKeepDefaultsGap * 100);
    return buf;
  }
  std::snprintf(buf, sizeof buf, "predicted %.3f ms per optimizer step, %.1f%% faster than the %s (%.3f ms)",
                s.best_s * 1e3, s.gap() * 100, defaults_description(s.target).c_str(), s.defaults_s * 1e3);
  return buf;
}

}  // namespace redsim::tune
