#include <functional>
#include <utility>

#include "collectives/collective_model.h"
#include "core/error.h"
#include "core/join.h"
#include "strategies/accumulate.h"
#include "strategies/bucketed.h"
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

Plan Strategy::plan(const ModelTrace& trace, const ClusterSpec& cluster, const Knobs& knobs) const {
  Plan p = build(trace, cluster, knobs);
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
