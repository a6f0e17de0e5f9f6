#include "sim/ring_scatter_gather.h"

#include "sim/ring_allreduce.h"
#include "sim/ring_pass.h"

namespace redsim {
namespace {

TransferTally run_half(const PlanOp& op, int rank, SimContext& ctx, bool scatter) {
  const int n = ctx.plan.world_size;
  if (n < 2) return {};
  const auto shards = op_shards(op, n);
  return run_channels(rank, op.channels, [&](int c) {
    std::vector<std::int64_t> channel_shards(shards.size());
    for (std::size_t r = 0; r < shards.size(); ++r) channel_shards[r] = split_piece(shards[r], op.channels, c);
    RingPass pass;
    pass.ring = ctx.ring(c, op.channels);
    pass.pos = ctx.ring_position(c, op.channels)[static_cast<std::size_t>(rank)];
    pass.chunk_bytes = chunks_for_shards(pass.ring, channel_shards);
    pass.reduce_scatter = scatter;
    pass.allgather = !scatter;
    return run_ring_pass(ctx, op, c, pass);
  });
}

}  // namespace

void RingReduceScatter::add_pairs(const PlanOp& op, const ClusterSpec& cluster, RankPairs& pairs) const {
  add_channel_ring_pairs(cluster, op.channels, pairs);
}
TransferTally RingReduceScatter::run(const PlanOp& op, int rank, SimContext& ctx) const {
  return run_half(op, rank, ctx, true);
}

void RingAllgather::add_pairs(const PlanOp& op, const ClusterSpec& cluster, RankPairs& pairs) const {
  add_channel_ring_pairs(cluster, op.channels, pairs);
}
TransferTally RingAllgather::run(const PlanOp& op, int rank, SimContext& ctx) const {
  return run_half(op, rank, ctx, false);
}

}  // namespace redsim
