#include "sim/ring_allreduce.h"

#include "collectives/shapes.h"
#include "sim/ring_pass.h"

namespace redsim {

void add_channel_ring_pairs(const ClusterSpec& cluster, int channels, RankPairs& pairs) {
  const int n = cluster.world_size();
  if (n < 2) return;
  for (int c = 0; c < channels; ++c) {
    auto order = ring_order(cluster, c, channels);
    for (int i = 0; i < n; ++i)
      pairs.emplace(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>((i + 1) % n)]);
  }
}

void RingAllreduce::add_pairs(const PlanOp& op, const ClusterSpec& cluster, RankPairs& pairs) const {
  add_channel_ring_pairs(cluster, op.channels, pairs);
}

TransferTally RingAllreduce::run(const PlanOp& op, int rank, SimContext& ctx) const {
  const int n = ctx.plan.world_size;
  if (n < 2) return {};
  return run_channels(rank, op.channels, [&](int c) {
    RingPass pass;
    pass.ring = ctx.ring(c, op.channels);
    pass.pos = ctx.ring_position(c, op.channels)[static_cast<std::size_t>(rank)];
    pass.chunk_bytes = ring_allreduce_chunks(ctx.mechanics(op), op.bytes, op.channels, c, n);
    return run_ring_pass(ctx, op, c, pass);
  });
}

}  // namespace redsim
