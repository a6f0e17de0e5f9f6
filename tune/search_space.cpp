#include "tune/search_space.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "collectives/nccl_tuning.h"
#include "core/error.h"
#include "core/join.h"
#include "core/units.h"

namespace redsim::tune {

std::vector<std::string> tune_families() { return {"flat", "bucketed", "zero", "accumulate", "localsgd"}; }
std::vector<std::string> searchable_families() {
  auto f = tune_families();
  f.push_back("fsdp");
  f.push_back("hsdp");
  return f;
}

std::vector<int> hsdp_group_sizes(const SearchAxes& a, const ClusterSpec& cluster) {
  const int world = cluster.world_size();
  std::vector<int> wanted = a.hsdp_shard_groups;
  // By default the node (HYBRID_SHARD's usual group: NVLink inside, replicas across the NICs)
  // and its power-of-two multiples, which trade allgather time for memory.
  if (wanted.empty())
    for (std::int64_t g = cluster.devices_per_node; g < world; g *= 2) wanted.push_back(static_cast<int>(g));
  std::set<int> sizes;
  for (int v : wanted) {
    const int g = v == 0 ? cluster.devices_per_node : v;
    if (g > 1 && g < world && world % g == 0) sizes.insert(g);
  }
  return {sizes.begin(), sizes.end()};
}

SearchAxes standard_axes(const TuneConstraints& c) {
  SearchAxes a;
  for (std::int64_t b = kMiB; b <= kGiB; b *= 2) a.bucket_bytes.push_back(b);
  a.first_bucket_bytes = {1 * kMiB, 4 * kMiB, 16 * kMiB};
  a.channels = {1, 2, 4, 8, 16};
  a.algorithms = {Algorithm::ring, Algorithm::tree, Algorithm::hierarchical};
  a.bucket_orders = {BucketOrder::execution, BucketOrder::definition};
  a.zero_stages = {2, 1};  // equal time; stage 2 first as it needs less memory
  a.allgather_bucket_bytes = {16 * kMiB, 64 * kMiB, 256 * kMiB, 1024 * kMiB};
  const int hmax = std::max(1, c.max_localsgd_period);
  for (int h = 1; h <= hmax; h *= 2) a.localsgd_periods.push_back(h);
  if (a.localsgd_periods.back() != hmax) a.localsgd_periods.push_back(hmax);
  // A unit per layer; size_based_auto_wrap_policy's default min_num_params; a unit per repeated
  // block (autotune drops it for a trace without blocks).
  a.fsdp_wrap_elems = {0, 100'000'000, kWrapBlocks};
  a.reshard_after_forward = {true, false};
  a.backward_prefetches = {BackwardPrefetch::backward_pre, BackwardPrefetch::backward_post, BackwardPrefetch::none};
  a.wire_dtypes = {std::nullopt};
  if (c.allow_compression) {
    a.wire_dtypes.push_back(DType::fp16);
    a.wire_dtypes.push_back(DType::bf16);
  }
  return a;
}

std::int64_t memory_limit_bytes(const TuneConstraints& c, const ClusterSpec& cluster) {
  // The cluster's own figure is checked by its reader and converted where simulate reads it too.
  if (!c.memory_per_device_GB) return cluster.device_memory_bytes();
  const double gb = *c.memory_per_device_GB;
  if (!(gb >= 0) || !std::isfinite(gb))
    throw InputError("", "", "--memory-per-device-gb: expected a size in GB >= 0 (0 = no limit), got " + std::to_string(gb));
  return static_cast<std::int64_t>(std::llround(gb * kBytesPerGB));
}

namespace {

template <class T>
void require_nonempty(const std::vector<T>& v, const char* what) {
  if (v.empty()) throw InputError("", "", std::string("tune: the search space has no ") + what);
}

void validate(const SearchAxes& a, const TuneConstraints& c) {
  if (c.microbatches < 1 || c.microbatches > 4096)
    throw InputError("", "", "--microbatches: expected 1 to 4096, got " + std::to_string(c.microbatches));
  if (c.max_localsgd_period < 1 || c.max_localsgd_period > 4096)
    throw InputError("", "", "--max-localsgd-period: expected 1 to 4096, got " + std::to_string(c.max_localsgd_period));
  require_nonempty(a.bucket_bytes, "bucket sizes");
  require_nonempty(a.first_bucket_bytes, "first-bucket sizes");
  require_nonempty(a.channels, "channel counts");
  require_nonempty(a.algorithms, "algorithms");
  require_nonempty(a.bucket_orders, "bucket orders");
  require_nonempty(a.zero_stages, "ZeRO stages");
  require_nonempty(a.allgather_bucket_bytes, "allgather bucket sizes");
  require_nonempty(a.localsgd_periods, "LocalSGD periods");
  require_nonempty(a.wire_dtypes, "wire dtypes");
  for (auto b : a.bucket_bytes)
    if (b <= 0) throw InputError("", "", "tune: bucket sizes must be positive");
  if (!std::is_sorted(a.bucket_bytes.begin(), a.bucket_bytes.end()) ||
      std::adjacent_find(a.bucket_bytes.begin(), a.bucket_bytes.end()) != a.bucket_bytes.end())
    throw InputError("", "", "tune: bucket sizes must be strictly increasing");
  for (auto b : a.first_bucket_bytes)
    if (b <= 0) throw InputError("", "", "tune: first-bucket sizes must be positive");
  for (auto b : a.allgather_bucket_bytes)
    if (b <= 0) throw InputError("", "", "tune: allgather bucket sizes must be positive");
  for (int ch : a.channels)
    if (ch < 0 || ch > 64) throw InputError("", "", "tune: channel counts must be 1 to 64 (0: auto), got " + std::to_string(ch));
  for (int s : a.zero_stages)
    if (s != 1 && s != 2) throw InputError("", "", "tune: ZeRO stages are 1 or 2, got " + std::to_string(s));
  for (int h : a.localsgd_periods)
    if (h < 1 || h > 4096) throw InputError("", "", "tune: LocalSGD periods must be 1 to 4096");
}

// The strategy families asked for ("all": the default set).
std::set<std::string> wanted_families(const TuneConstraints& c) {
  const auto all = searchable_families();
  const auto defaults = tune_families();
  std::set<std::string> wanted;
  for (const auto& s : c.strategies) {
    if (s == "all") {
      wanted.insert(defaults.begin(), defaults.end());
      continue;
    }
    if (std::find(all.begin(), all.end(), s) == all.end())
      throw InputError("", "", "--strategies: unknown strategy \"" + s + "\"; expected some of " + join(all, ","));
    wanted.insert(s);
  }
  if (wanted.empty()) wanted.insert(defaults.begin(), defaults.end());
  return wanted;
}

// Drops the families that cannot run here (saying why in the grid's notes) and says how
// micro-batches are compared.
void prune_families(std::set<std::string>& wanted, const std::vector<int>& hsdp_groups, int m, const ClusterSpec& cluster,
                    Grid& g) {
  if (wanted.count("hsdp") && hsdp_groups.empty()) {
    wanted.erase("hsdp");
    g.notes.push_back("hsdp: not searched: no shard group of 2 or more ranks divides the " +
                      std::to_string(cluster.world_size()) + " ranks into several groups (it would be fsdp or DDP)");
    if (wanted.empty()) throw InputError("", "", "--strategies hsdp: no shard-group size fits this cluster");
  }
  if (m == 1 && wanted.count("accumulate")) {
    wanted.erase("accumulate");
    g.notes.push_back("accumulate: not searched: with 1 micro-batch per optimizer step it is bucketed "
                      "(give --microbatches M >= 2)");
    if (wanted.empty())
      throw InputError("", "", "--strategies accumulate needs --microbatches 2 or more (with 1 it is bucketed)");
  }
  if (m > 1 && wanted.count("bucketed"))
    g.notes.push_back("bucketed: evaluated over " + std::to_string(m) +
                      " micro-batches, each synchronised (DDP without no_sync): accumulate with sync_every_microbatch");
  if (m > 1 && (wanted.count("flat") || wanted.count("zero") || wanted.count("localsgd") || wanted.count("fsdp") ||
                wanted.count("hsdp")))
    g.notes.push_back("flat, zero, localsgd, fsdp, hsdp: no gradient accumulation in their plans; compared by time per sample, "
                      "i.e. " + std::to_string(m) + " of their steps per optimizer step of " + std::to_string(m) +
                      " micro-batches");
}

// What the grid leaves out of a family's knobs, and why.
void note_fixed_knobs(const std::set<std::string>& wanted, Grid& g) {
  if (wanted.count("zero"))
    g.notes.push_back("zero: an allreduce algorithm does not reach reduce, reduce-scatter or allgather (rings, or "
                      "NCCL's own choice from 2.24, as in NCCL): algorithm not searched; bucket order and first "
                      "bucket do not apply (DeepSpeed fills its IPG buckets in gradient-ready order)");
  if (wanted.count("localsgd"))
    g.notes.push_back("localsgd: parameters are averaged after the optimizer, all buckets at once: bucket order and "
                      "first bucket not searched; the wire dtype stays the parameters' own (parameters, not gradients)");
}

// The allreduce algorithms and channel counts searched; on NCCL clusters what NCCL users can set.
struct CollectiveAxes {
  std::vector<std::optional<Algorithm>> algorithms;
  std::vector<int> channels;
  std::vector<std::optional<Algorithm>> sharded_algorithms{std::nullopt};  // fsdp, hsdp
};

CollectiveAxes collective_axes(const SearchAxes& a, const ClusterSpec& cluster, Grid& g) {
  CollectiveAxes x;
  x.channels = a.channels;
  const bool nccl_settings = cluster.library == CollectiveLibrary::nccl && a.nccl_settings;
  if (nccl_settings) {
    // NCCL_ALGO auto (NCCL's own per-size choice, searched first so that a tie keeps the
    // default) and channel counts NCCL would pick itself.
    const nccl::Tuning nt(cluster);
    x.algorithms = {std::nullopt};
    for (auto alg : {Algorithm::ring, Algorithm::tree, Algorithm::nvls, Algorithm::nvls_tree})
      if (nt.supported(OpKind::allreduce, alg, alg == Algorithm::nvls || alg == Algorithm::nvls_tree ? Protocol::simple : Protocol::ll))
        x.algorithms.push_back(alg);
    x.channels = {0};
    g.notes.push_back("collectives: NCCL's settings are searched: NCCL_ALGO auto (NCCL's own choice per size) and each "
                      "algorithm NCCL runs on this cluster; channels stay NCCL's own");
    // One GPU a node under 2.23+: NCCL ranks PAT against rings for allgather and reduce-scatter.
    if (a.sharded_nccl_algo && nt.supported(OpKind::allgather, Algorithm::pat, Protocol::simple)) {
      x.sharded_algorithms = {std::nullopt, Algorithm::ring, Algorithm::pat};
      g.notes.push_back("fsdp, hsdp: NCCL_ALGO auto, Ring and PAT searched (NCCL runs their allgathers and "
                        "reduce-scatters on PAT or rings here)");
    }
    return x;
  }
  bool dropped_hier = false;
  for (auto alg : a.algorithms) {
    if (alg == Algorithm::hierarchical && (cluster.nodes < 2 || cluster.devices_per_node < 2)) {
      dropped_hier = true;
      continue;
    }
    if (std::find(x.algorithms.begin(), x.algorithms.end(), alg) == x.algorithms.end()) x.algorithms.push_back(alg);
  }
  if (dropped_hier)
    g.notes.push_back("hierarchical allreduce: not searched: it needs several nodes of several devices (this cluster: " +
                      std::to_string(cluster.nodes) + " x " + std::to_string(cluster.devices_per_node) + ")");
  return x;
}

// Adds points to the grid, one line per setting minus the bucket size.
class GridPoints {
 public:
  GridPoints(Grid& g, const SearchAxes& a, const CollectiveAxes& x, int microbatches)
      : g_(g), a_(a), x_(x), m_(microbatches) {}

  void add_family(const std::string& family, const std::vector<int>& hsdp_groups) {
    if (family == "flat") add_flat();
    else if (family == "bucketed" || family == "accumulate") add_bucketed(family);
    else if (family == "zero") add_zero();
    else if (family == "fsdp" || family == "hsdp") add_sharded(family, family == "hsdp" ? hsdp_groups : std::vector<int>{0});
    else if (family == "localsgd") add_localsgd();
  }

 private:
  void add(const std::string& family, const Knobs& k) {
    auto [it, inserted] = line_index_.try_emplace(key(family, k), g_.lines.size());
    if (inserted) g_.lines.emplace_back();
    g_.lines[it->second].push_back(g_.points.size());
    g_.line_of.push_back(it->second);
    g_.points.push_back({family, k});
  }

  static std::string key(const std::string& family, const Knobs& k) {
    return family + "|" + std::to_string(k.first_bucket_cap_bytes) + "|" + std::string(bucket_order_name(k.bucket_order)) +
           "|" + std::to_string(k.channels) + "|" + algorithm_label(k) + "|" +
           (k.wire_dtype ? std::string(dtype_name(*k.wire_dtype)) : std::string("-")) + "|" + std::to_string(k.zero_stage) +
           "|" + std::to_string(k.allgather_bucket_bytes) + "|" + std::to_string(k.localsgd_period) + "|" +
           std::to_string(k.fsdp_wrap_elems) + (k.fsdp_wrap_blocks ? "b" : "") + "|" + (k.reshard_after_forward ? "r" : "-") + "|" +
           std::string(backward_prefetch_name(k.backward_prefetch)) + "|" + std::to_string(k.shard_group);
  }

  void add_flat() {
    Knobs base;
    base.strategy = "flat";
    for (const auto& w : a_.wire_dtypes)
      for (auto alg : x_.algorithms)
        for (int ch : x_.channels) {
          Knobs k = base;
          k.wire_dtype = w;
          k.algorithm = alg;
          k.channels = ch;
          add("flat", k);
        }
  }

  void add_bucketed(const std::string& family) {
    Knobs base;
    base.strategy = (family == "bucketed" && m_ == 1) ? "bucketed" : "accumulate";
    base.microbatches = base.strategy == "bucketed" ? 1 : m_;
    base.sync_every_microbatch = family == "bucketed" && m_ > 1;
    if (a_.first_bucket_bytes.empty()) return;
    const auto smallest_first = *std::min_element(a_.first_bucket_bytes.begin(), a_.first_bucket_bytes.end());
    for (const auto& w : a_.wire_dtypes)
      for (auto alg : x_.algorithms)
        for (int ch : x_.channels)
          for (auto order : a_.bucket_orders)
            for (auto first : a_.first_bucket_bytes)
              for (auto bucket : a_.bucket_bytes) {
                // A first bucket larger than the cap is not a different setting worth its own line.
                if (first > bucket && first != smallest_first) continue;
                Knobs k = base;
                k.wire_dtype = w;
                k.algorithm = alg;
                k.channels = ch;
                k.bucket_order = order;
                k.first_bucket_cap_bytes = first;
                k.bucket_cap_bytes = bucket;
                add(family, k);
              }
  }

  void add_zero() {
    Knobs base;
    base.strategy = "zero";
    for (const auto& w : a_.wire_dtypes)
      for (int ch : x_.channels)
        for (int stage : a_.zero_stages)
          for (auto ag : a_.allgather_bucket_bytes)
            for (auto bucket : a_.bucket_bytes) {
              Knobs k = base;
              k.wire_dtype = w;
              k.channels = ch;
              k.zero_stage = stage;
              k.allgather_bucket_bytes = ag;
              k.bucket_cap_bytes = bucket;
              add("zero", k);
            }
  }

  // Collectives are allgathers and reduce-scatters (rings, or PAT with one GPU a node): no
  // bucket size; each setting is a line of one point. fsdp shards over the world (group 0).
  void add_sharded(const std::string& family, const std::vector<int>& groups) {
    Knobs base;
    base.strategy = family;
    for (int group : groups)
      for (auto alg : x_.sharded_algorithms)
        for (int ch : x_.channels)
          for (auto wrap : a_.fsdp_wrap_elems)
            for (bool reshard : a_.reshard_after_forward)
              for (auto pf : a_.backward_prefetches) {
                Knobs k = base;
                k.shard_group = group;
                k.algorithm = alg;
                k.channels = ch;
                k.fsdp_wrap_blocks = wrap == kWrapBlocks;
                k.fsdp_wrap_elems = std::max<std::int64_t>(0, wrap);
                k.reshard_after_forward = reshard;
                k.backward_prefetch = pf;
                add(family, k);
              }
  }

  void add_localsgd() {
    Knobs base;
    base.strategy = "localsgd";
    for (auto alg : x_.algorithms)
      for (int ch : x_.channels)
        for (int h : a_.localsgd_periods)
          for (auto bucket : a_.bucket_bytes) {
            Knobs k = base;
            k.algorithm = alg;
            k.channels = ch;
            k.localsgd_period = h;
            k.bucket_cap_bytes = bucket;
            add("localsgd", k);
          }
  }

  Grid& g_;
  const SearchAxes& a_;
  const CollectiveAxes& x_;
  const int m_;
  std::map<std::string, std::size_t> line_index_;  // by the knobs minus the bucket size
};

}  // namespace

Grid build_grid(const SearchAxes& a, const TuneConstraints& c, const ClusterSpec& cluster) {
  validate(a, c);
  auto wanted = wanted_families(c);
  if ((wanted.count("fsdp") || wanted.count("hsdp")) && (a.fsdp_wrap_elems.empty() || a.reshard_after_forward.empty() || a.backward_prefetches.empty()))
    throw InputError("", "", "tune: the search space has no FSDP settings");
  Grid g;
  const std::vector<int> hsdp_groups = wanted.count("hsdp") ? hsdp_group_sizes(a, cluster) : std::vector<int>{};
  prune_families(wanted, hsdp_groups, c.microbatches, cluster, g);
  const auto x = collective_axes(a, cluster, g);
  if (x.algorithms.empty()) throw InputError("", "", "tune: no allreduce algorithm applies to this cluster");
  note_fixed_knobs(wanted, g);
  GridPoints points(g, a, x, c.microbatches);
  for (const auto& family : searchable_families())
    if (wanted.count(family)) points.add_family(family, hsdp_groups);
  // Lines are filled in ascending bucket order already (the bucket loop is innermost).
  return g;
}

std::string algorithm_label(const Knobs& k) { return k.algorithm ? std::string(algorithm_name(*k.algorithm)) : "auto"; }
std::string channels_label(const Knobs& k) { return k.channels > 0 ? std::to_string(k.channels) : "auto"; }

std::string format_bytes_binary(std::int64_t b) {
  char buf[64];
  if (b > 0 && b % kGiB == 0) {
    std::snprintf(buf, sizeof buf, "%lld GiB", static_cast<long long>(b / kGiB));
  } else if (b > 0 && b % kMiB == 0) {
    std::snprintf(buf, sizeof buf, "%lld MiB", static_cast<long long>(b / kMiB));
  } else if (b >= kMiB) {
    std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(b) / kMiB);
  } else if (b > 0 && b % kKiB == 0) {
    std::snprintf(buf, sizeof buf, "%lld KiB", static_cast<long long>(b / kKiB));
  } else {
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(b));
  }
  return buf;
}

std::string format_GiB(std::int64_t bytes) {
  // One memory unit across subcommands (simulate prints GiB too); MiB below a GiB.
  char buf[64];
  if (bytes >= kGiB || bytes == 0)
    std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / kGiB);
  else
    std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(bytes) / kMiB);
  return buf;
}

std::string memory_words(const RankMemory& m) {
  return "params " + format_GiB(m.params_bytes) + ", grads " + format_GiB(m.grads_bytes) + ", optimizer " +
         format_GiB(m.optimizer_bytes) + ", comm buffers " + format_GiB(m.comm_buffer_bytes) + ", activations " +
         (m.activations_known ? format_GiB(m.activation_bytes) : std::string("not in the trace")) +
         (m.step_buffer_bytes > 0 ? "; step buffers after backward " + format_GiB(m.step_buffer_bytes) + ", the larger of the two counts"
                                  : std::string());
}

namespace {

std::string describe_setting(const Candidate& c) {
  const Knobs& k = c.knobs;
  // "ring x8"; with NCCL's own channel count just the algorithm ("auto" = NCCL_ALGO unset).
  const std::string ch = k.channels > 0 ? " x" + channels_label(k) : std::string();
  std::string coll = algorithm_label(k) + ch;
  std::string wire = k.wire_dtype ? ", wire " + std::string(dtype_name(*k.wire_dtype)) : std::string();
  if (c.family == "flat") return coll + wire;
  if (c.family == "zero")
    return "bucket " + format_bytes_binary(k.bucket_cap_bytes) + ", allgather " + format_bytes_binary(k.allgather_bucket_bytes) +
           ", stage " + std::to_string(k.zero_stage) + ", ring" + ch + wire;
  if (c.family == "fsdp" || c.family == "hsdp")
    return (c.family == "hsdp" ? "shard group " + std::to_string(k.shard_group) + ", " : std::string()) +
           std::string(k.reshard_after_forward ? "FULL_SHARD" : "SHARD_GRAD_OP") + ", prefetch " +
           std::string(backward_prefetch_name(k.backward_prefetch)) + ", wrap " +
           (k.fsdp_wrap_blocks        ? std::string("per block")
            : k.fsdp_wrap_elems > 0 ? std::to_string(k.fsdp_wrap_elems) + " params"
                                    : std::string("per layer")) +
           ", " + coll;  // auto: NCCL's rings, or PAT with one GPU a node
  if (c.family == "localsgd")
    return "H " + std::to_string(k.localsgd_period) + ", bucket " + format_bytes_binary(k.bucket_cap_bytes) + ", " + coll;
  return "bucket " + format_bytes_binary(k.bucket_cap_bytes) + ", first " + format_bytes_binary(k.first_bucket_cap_bytes) +
         ", " + std::string(bucket_order_name(k.bucket_order)) + ", " + coll + wire;
}

}  // namespace

std::string describe_knobs(const Candidate& c) {
  const std::string d = describe_setting(c);
  const Knobs& k = c.knobs;
  if (k.activation_checkpointing != ActivationCheckpointing::blocks) return d;
  return d + (k.checkpointed_blocks > 0 ? ", first " + std::to_string(k.checkpointed_blocks) + " blocks checkpointed"
                                        : ", blocks checkpointed");
}

}  // namespace redsim::tune
