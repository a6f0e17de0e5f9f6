// fsdp: PyTorch FullyShardedDataParallel FULL_SHARD (= DeepSpeed ZeRO-3), or SHARD_GRAD_OP with
// reshard_after_forward off. hsdp: HYBRID_SHARD, FSDP inside a shard group (a node by default)
// and the shards' gradients allreduced across the groups.
#pragma once
#include "strategies/strategy.h"

namespace redsim {

class FsdpStrategy final : public Strategy {
 public:
  std::string_view name() const override { return "fsdp"; }
  std::string_view description() const override {
    return "FSDP / ZeRO-3: units all-gathered before forward and backward, gradients reduce-scattered";
  }

 protected:
  Plan build(const ModelTrace& trace, const ClusterSpec& cluster, const Knobs& knobs) const override;
};

class HsdpStrategy final : public Strategy {
 public:
  std::string_view name() const override { return "hsdp"; }
  std::string_view description() const override {
    return "hybrid sharding: FSDP within a shard group, gradient shards allreduced across groups";
  }

 protected:
  Plan build(const ModelTrace& trace, const ClusterSpec& cluster, const Knobs& knobs) const override;
};

// The ranks per shard group hsdp uses for these knobs on this world (knobs.shard_group, or the
// devices of a node); throws InputError when it does not divide the world.
int hsdp_shard_group(const ClusterSpec& cluster, const Knobs& knobs);

}  // namespace redsim
