// The Strategy interface: (trace, cluster, knobs) -> Plan. A strategy never talks to an engine.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/cluster.h"
#include "core/knobs.h"
#include "core/plan.h"
#include "core/trace.h"

namespace redsim {

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string_view name() const = 0;
  virtual std::string_view description() const = 0;
  // The step's Plan, each collective's algorithm, protocol and channel count chosen by the
  // cluster's collective model (collectives/) within what the knobs pin.
  Plan plan(const ModelTrace& trace, const ClusterSpec& cluster, const Knobs& knobs) const;

 protected:
  virtual Plan build(const ModelTrace& trace, const ClusterSpec& cluster, const Knobs& knobs) const = 0;
};

// Throws InputError("", "", "unknown strategy ...") for a name not in strategy_names().
std::unique_ptr<Strategy> make_strategy(std::string_view name);
std::vector<std::string> strategy_names();

}  // namespace redsim
