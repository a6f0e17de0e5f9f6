// bucketed: PyTorch DDP — gradient buckets launched as they fill, overlapping backward.
#pragma once
#include <cstdint>
#include <vector>

#include "strategies/ddp_bucketing.h"
#include "strategies/strategy.h"

namespace redsim {

// One DDP step up to the optimizer: the buffer broadcast, forward and backward, each bucket's
// allreduce (through the comm hook, if any) and the copy of the reduced gradients out of the
// buckets. Returns what the optimizer waits for; `buckets` receives DDP's buckets.
std::vector<std::uint32_t> add_ddp_gradient_sync(Plan& plan, const ModelTrace& trace, const ClusterSpec& cluster,
                                                 const Knobs& knobs, std::vector<GradBucket>& buckets);

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
