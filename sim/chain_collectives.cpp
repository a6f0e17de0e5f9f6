#include "sim/chain_collectives.h"

#include <simgrid/s4u.hpp>

#include "sim/ring_allreduce.h"
#include "sim/ring_pass.h"

namespace redsim {
namespace {

int mod(int a, int n) { return ((a % n) + n) % n; }
char g_payload;

// One channel of a chain. toward_root: reduce (the root is last); otherwise broadcast (first).
TransferTally run_chain(const PlanOp& op, int rank, SimContext& ctx, int c, bool toward_root) {
  const int n = ctx.plan.world_size;
  const auto& ring = ctx.ring(c, op.channels);
  const auto& position = ctx.ring_position(c, op.channels);
  const int root_pos = position[static_cast<std::size_t>(op.root)];
  const int pos = position[static_cast<std::size_t>(rank)];
  const int first_pos = toward_root ? root_pos + 1 : root_pos;
  const int i = mod(pos - first_pos, n);  // index along the chain
  const bool has_prev = i > 0, has_next = i < n - 1;
  const int next = ring[static_cast<std::size_t>(mod(pos + 1, n))];
  const int prev = ring[static_cast<std::size_t>(mod(pos - 1, n))];
  auto* in = ctx.mailbox(op.stream, c, static_cast<int>(MailPhase::chain), rank);
  auto* out = ctx.mailbox(op.stream, c, static_cast<int>(MailPhase::chain), next);
  const std::int64_t bytes = split_piece(op.bytes, op.channels, c);
  const auto& m = ctx.mechanics(op);
  const int chunks = m.chunks(bytes);
  TransferTally t;
  // Round r: receive chunk r and forward chunk r-1 (the head sends chunk r), concurrently.
  const int rounds = chunks + (has_prev && has_next ? 1 : 0);
  for (int r = 0; r < rounds; ++r) {
    simgrid::s4u::CommPtr recv, send;
    std::int64_t sent = 0;
    const int send_chunk = has_prev ? r - 1 : r;
    std::int64_t got_bytes = 0;
    void* got = nullptr;
    if (has_prev && r < chunks) {
      recv = in->get_async(&got);
      got_bytes = split_piece(bytes, chunks, r);
    }
    if (has_next && send_chunk >= 0 && send_chunk < chunks) {
      const auto b = split_piece(bytes, chunks, send_chunk);
      send = out->put_async(&g_payload, static_cast<std::uint64_t>(ctx.wire_bytes(m, b)));
      t.bytes_sent += b;
      sent = b;
    }
    if (recv) recv->wait();
    if (send) send->wait();
    // The chain streams: only the first chunk pays each hop's latency.
    if (send) ctx.pace_step(m, rank, next, sent, send, send_chunk == 0);
    if (recv) ctx.pace_step(m, prev, rank, got_bytes, recv, r == 0);
    t.bytes_received += got_bytes;
    if (toward_root) ctx.charge_reduction(m, got_bytes);
  }
  return t;
}

}  // namespace

void RingReduce::add_pairs(const PlanOp& op, const ClusterSpec& cluster, RankPairs& pairs) const {
  add_channel_ring_pairs(cluster, op.channels, pairs);
}
TransferTally RingReduce::run(const PlanOp& op, int rank, SimContext& ctx) const {
  if (ctx.plan.world_size < 2) return {};
  return run_channels(rank, op.channels, [&](int c) { return run_chain(op, rank, ctx, c, true); });
}

void RingBroadcast::add_pairs(const PlanOp& op, const ClusterSpec& cluster, RankPairs& pairs) const {
  add_channel_ring_pairs(cluster, op.channels, pairs);
}
TransferTally RingBroadcast::run(const PlanOp& op, int rank, SimContext& ctx) const {
  if (ctx.plan.world_size < 2) return {};
  return run_channels(rank, op.channels, [&](int c) { return run_chain(op, rank, ctx, c, false); });
}

}  // namespace redsim
