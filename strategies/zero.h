// zero: DeepSpeed ZeRO stages 1 and 2 (reduce-to-owner, seed 000). Gradients are bucketed in
// backward; each bucket is reduced to the rank that owns it, or reduce-scattered over its owners
// where it spans several; owners step the optimizer on their shard; the updated parameters are
// all-gathered in allgather buckets before the next forward. --zero-impl pytorch plans PyTorch's
// ZeroRedundancyOptimizer instead (zero_pytorch.h).
#pragma once
#include "strategies/strategy.h"

namespace redsim {

class ZeroStrategy final : public Strategy {
 public:
  std::string_view name() const override { return "zero"; }
  std::string_view description() const override {
    return "ZeRO stage 1/2: buckets reduced to their owners, sharded optimizer, parameters all-gathered";
  }
  protected:
  Plan build(const ModelTrace& trace, const ClusterSpec& cluster, const Knobs& knobs) const override;
};

}  // namespace redsim
