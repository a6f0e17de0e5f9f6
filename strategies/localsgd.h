// localsgd: H local steps with no gradient communication, then the parameters are averaged
// after the optimizer step (seed 002; PyTorch's PostLocalSGD): by default in one allreduce of all
// parameters, as PeriodicModelAverager does (--localsgd-averaging bucketed|per-param). The
// Plan covers the H-step window (Plan::steps = H); reports are per step.
#pragma once
#include "strategies/strategy.h"

namespace redsim {

class LocalSgdStrategy final : public Strategy {
 public:
  std::string_view name() const override { return "localsgd"; }
  std::string_view description() const override {
    return "H local steps, then parameters averaged (one flat allreduce by default); reported per step";
  }
  protected:
  Plan build(const ModelTrace& trace, const ClusterSpec& cluster, const Knobs& knobs) const override;
};

}  // namespace redsim
