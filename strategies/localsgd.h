// localsgd: H local steps with no gradient communication, then the parameters are averaged
// with a bucketed allreduce after the optimizer step (seed 002; PyTorch's PostLocalSGD). The
// Plan covers the H-step window (Plan::steps = H); reports are per step.
#pragma once
#include "strategies/strategy.h"

namespace redsim {

class LocalSgdStrategy final : public Strategy {
 public:
  std::string_view name() const override { return "localsgd"; }
  std::string_view description() const override {
    return "H local steps, then parameters averaged with a bucketed allreduce; reported per step";
  }
  protected:
  Plan build(const ModelTrace& trace, const ClusterSpec& cluster, const Knobs& knobs) const override;
};

}  // namespace redsim
