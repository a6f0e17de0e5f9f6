// flat: wait for every gradient, flatten, one allreduce (per dtype) — the CPU path of old DDP.
#pragma once
#include "strategies/strategy.h"

namespace redsim {

class FlatStrategy final : public Strategy {
 public:
  std::string_view name() const override { return "flat"; }
  std::string_view description() const override {
    return "all gradients ready, then one allreduce of everything (one per dtype)";
  }
  protected:
  Plan build(const ModelTrace& trace, const ClusterSpec& cluster, const Knobs& knobs) const override;
};

}  // namespace redsim
