#include <algorithm>
#include <climits>
#include <cstdint>
#include <functional>
#include <utility>

#include "collectives/collective_model.h"
#include "core/error.h"
#include "core/join.h"
#include "strategies/accumulate.h"
#include "strategies/bucketed.h"
#include "strategies/checkpointing.h"
#include "strategies/flat.h"
#include "strategies/fsdp.h"
#include "strategies/localsgd.h"
#include "strategies/zero.h"
#include "strategies/strategy.h"

namespace redsim {
namespace {
using Factory = std::function<std::unique_ptr<Strategy>()>;
const std::vector<std::pair<std::string, Factory>>& registry() {
  static const std::vector<std::pair<std::string, Factory>> r{
      {"flat", [] { return std::make_unique<FlatStrategy>(); }},
      {"bucketed", [] { return std::make_unique<BucketedStrategy>(); }},
      {"zero", [] { return std::make_unique<ZeroStrategy>(); }},
      {"accumulate", [] { return std::make_unique<AccumulateStrategy>(); }},
      {"localsgd", [] { return std::make_unique<LocalSgdStrategy>(); }},
      {"fsdp", [] { return std::make_unique<FsdpStrategy>(); }},
      {"hsdp", [] { return std::make_unique<HsdpStrategy>(); }},
  };
  return r;
}
}  // namespace

namespace {

// An upper bound on the ops build() adds, before it adds them: a tiny bucket must be refused
// before it allocates millions of ops. Compute ops, one bucket per tensor at most (DDP never
// splits a tensor), and for ZeRO the byte-split reduce and allgather buckets, per micro-batch
// and local step. Saturates instead of overflowing.
std::int64_t plan_ops_upper_bound(const ModelTrace& t, const ClusterSpec& c, const Knobs& k) {
  auto sat_add = [](std::int64_t a, std::int64_t b) {
    std::int64_t r = 0;
    return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
  };
  auto sat_mul = [](std::int64_t a, std::int64_t b) {
    std::int64_t r = 0;
    return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
  };
  const auto tensors = static_cast<std::int64_t>(t.params.size() + t.buffers.size());
  std::int64_t per_pass = sat_add(2 * static_cast<std::int64_t>(t.layers.size()) + 4, 2 * tensors);
  // Checkpointing: a recompute op per block and FSDP's gathers for it, each at most one per layer.
  if (k.activation_checkpointing != ActivationCheckpointing::none)
    per_pass = sat_add(per_pass, 2 * static_cast<std::int64_t>(t.layers.size()));
  if (k.strategy == "zero") {
    std::int64_t bytes = 0;
    for (const auto& p : t.params) bytes = sat_add(bytes, p.bytes());
    per_pass = sat_add(per_pass, c.world_size());
    per_pass = sat_add(per_pass, bytes / std::max<std::int64_t>(1, k.allgather_bucket_bytes) + 1);
    per_pass = sat_add(per_pass, bytes / std::max<std::int64_t>(1, k.bucket_cap_bytes) + 1);
  }
  return sat_mul(per_pass, sat_mul(std::max(1, k.microbatches), std::max(1, k.localsgd_period)));
}

}  // namespace

Plan Strategy::plan(const ModelTrace& trace, const ClusterSpec& cluster, const Knobs& knobs) const {
  if (const std::int64_t bound = plan_ops_upper_bound(trace, cluster, knobs); bound > knobs.max_ops)
    throw InputError("", "", "the " + knobs.strategy + " plan could need up to " + std::to_string(bound) +
                                 " ops, over the limit of " + std::to_string(knobs.max_ops) +
                                 " (--max-ops): use larger buckets or raise --max-ops");
  const auto ckpt = checkpoint_blocks(trace, knobs);  // refuses a trace it cannot apply to
  Plan p = build(trace, cluster, knobs);
  p.max_ops = knobs.max_ops;
  // What one forward and backward hold at most (the plan's compute ops add and free it).
  if (p.memory.activations_known) p.memory.activation_bytes = activation_peak_bytes(trace, ckpt);
  choose_collectives(p, cluster);
  return p;
}

std::vector<std::string> strategy_names() {
  std::vector<std::string> names;
  for (const auto& [n, f] : registry()) names.push_back(n);
  return names;
}

std::unique_ptr<Strategy> make_strategy(std::string_view name) {
  for (const auto& [n, f] : registry())
    if (n == name) return f();
  const std::string list = join(strategy_names(), "|");
  throw InputError("", "", "unknown strategy \"" + std::string(name) + "\"; expected one of " + list);
}

}  // namespace redsim
