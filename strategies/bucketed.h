// bucketed: PyTorch DDP — gradient buckets launched as they fill, overlapping backward.
#pragma once
#include "strategies/strategy.h"

namespace redsim {

class BucketedStrategy final : public Strategy {
 public:
  std::string_view name() const override { return "bucketed"; }
  std::string_view description() const override {
    return "DDP-style buckets in definition or execution order, each allreduced as soon as it is full";
  }
  protected:
  Plan build(const ModelTrace& trace, const ClusterSpec& cluster, const Knobs& knobs) const override;
};

}  // namespace redsim
