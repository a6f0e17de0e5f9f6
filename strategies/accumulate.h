// accumulate: gradient accumulation over M micro-batches with deferred sync (seed 001): only the
// last micro-batch's backward launches the bucketed allreduce (DDP's no_sync for the others).
// knobs.sync_every_microbatch gives the naive baseline that allreduces after every micro-batch.
#pragma once
#include "strategies/strategy.h"

namespace redsim {

class AccumulateStrategy final : public Strategy {
 public:
  std::string_view name() const override { return "accumulate"; }
  std::string_view description() const override {
    return "M micro-batches accumulate locally; only the last one's backward syncs (bucketed)";
  }
  protected:
  Plan build(const ModelTrace& trace, const ClusterSpec& cluster, const Knobs& knobs) const override;
};

}  // namespace redsim
