#include "sim/chain_collectives.h"

#include <optional>

#include <simgrid/s4u.hpp>

#include "sim/ring_allreduce.h"
#include "sim/ring_pass.h"
#include "sim/stream_edge.h"

namespace redsim {
namespace {

int mod(int a, int n) { return ((a % n) + n) % n; }
char g_payload;

// Where a rank stands in one channel's chain. toward_root: reduce (the root is last); otherwise
// broadcast (the root is first).
struct ChainPlace {
  int prev = -1, next = -1;  // neighbours along the chain (-1: none)
  std::int64_t bytes = 0;    // the channel's share
};

ChainPlace chain_place(const PlanOp& op, int rank, SimContext& ctx, int c, bool toward_root) {
  const int n = ctx.plan.world_size;
  const auto& ring = ctx.ring(c, op.channels);
  const auto& position = ctx.ring_position(c, op.channels);
  const int root_pos = position[static_cast<std::size_t>(op.root)];
  const int pos = position[static_cast<std::size_t>(rank)];
  const int first_pos = toward_root ? root_pos + 1 : root_pos;
  const int i = mod(pos - first_pos, n);  // index along the chain
  ChainPlace p;
  if (i > 0) p.prev = ring[static_cast<std::size_t>(mod(pos - 1, n))];
  if (i < n - 1) p.next = ring[static_cast<std::size_t>(mod(pos + 1, n))];
  p.bytes = split_piece(op.bytes, op.channels, c);
  return p;
}

// Store and forward (Simple, ideal collectives): round r receives chunk r and forwards chunk r-1
// (the head sends chunk r), concurrently.
TransferTally run_chain(const PlanOp& op, int rank, SimContext& ctx, int c, bool toward_root) {
  const ChainPlace pl = chain_place(op, rank, ctx, c, toward_root);
  const bool has_prev = pl.prev >= 0, has_next = pl.next >= 0;
  auto* in = ctx.mailbox(op.stream, c, static_cast<int>(MailPhase::chain), rank);
  auto* out = has_next ? ctx.mailbox(op.stream, c, static_cast<int>(MailPhase::chain), pl.next) : nullptr;
  const auto& m = ctx.mechanics(op);
  const int chunks = m.chunks(pl.bytes);
  TransferTally t;
  const int rounds = chunks + (has_prev && has_next ? 1 : 0);
  CapPacer pacer(m);
  for (int r = 0; r < rounds; ++r) {
    simgrid::s4u::CommPtr recv, send;
    const int send_chunk = has_prev ? r - 1 : r;
    std::int64_t got_bytes = 0;
    void* got = nullptr;
    if (has_prev && r < chunks) {
      recv = in->get_async(&got);
      got_bytes = split_piece(pl.bytes, chunks, r);
    }
    if (has_next && send_chunk >= 0 && send_chunk < chunks) {
      const auto b = split_piece(pl.bytes, chunks, send_chunk);
      pacer.before_put();
      send = out->put_async(&g_payload, static_cast<std::uint64_t>(ctx.wire_bytes(m, b)));
      pacer.put(b);
      t.bytes_sent += b;
    }
    if (recv) recv->wait();
    if (send) send->wait();
    // The chain streams: only the first chunk pays each hop's latency; chunks cross at the
    // links' rate, the sender's CapPacer holding them to the channel's cap.
    if (send) ctx.pace_step(m, rank, pl.next, 0, send, send_chunk == 0);
    if (recv) ctx.pace_step(m, pl.prev, rank, 0, recv, r == 0);
    t.bytes_received += got_bytes;
    if (toward_root) ctx.charge_reduction(m, got_bytes);
  }
  return t;
}

// LL and LL128 (sim/stream_edge.h): each rank takes a piece, reduces it (reduce) and passes it
// on while the next ones are already on their way.
TransferTally run_streamed_chain(const PlanOp& op, int rank, SimContext& ctx, int c, bool toward_root) {
  const ChainPlace pl = chain_place(op, rank, ctx, c, toward_root);
  const auto& m = ctx.mechanics(op);
  const int chunks = m.chunks(pl.bytes);
  const std::int64_t piece = split_piece(pl.bytes, chunks, 0);
  const auto phase = static_cast<int>(MailPhase::chain);
  std::optional<StreamRecv> in;
  std::optional<StreamSend> out;
  if (pl.prev >= 0)
    in.emplace(ctx, m, ctx.mailbox(op.stream, c, phase, rank), pl.prev, rank, piece, chunks, StreamPace::chain);
  if (pl.next >= 0)
    out.emplace(ctx, m, ctx.mailbox(op.stream, c, phase, pl.next), rank, pl.next, piece, chunks, StreamPace::chain);
  TransferTally t;
  for (int k = 0; k < chunks; ++k) {
    const std::int64_t b = split_piece(pl.bytes, chunks, k);
    if (in) {
      in->take(b, simgrid::s4u::Engine::get_clock());
      t.bytes_received += b;
      if (toward_root) ctx.charge_reduction(m, b);
    }
    if (out) {
      out->put(b);
      t.bytes_sent += b;
    }
  }
  if (out) out->finish();
  return t;
}

TransferTally run_chain_channel(const PlanOp& op, int rank, SimContext& ctx, int c, bool toward_root) {
  if (ctx.mechanics(op).streams()) return run_streamed_chain(op, rank, ctx, c, toward_root);
  return run_chain(op, rank, ctx, c, toward_root);
}

}  // namespace

void RingReduce::add_pairs(const PlanOp& op, const ClusterSpec& cluster, RankPairs& pairs) const {
  add_channel_ring_pairs(cluster, op.channels, pairs);
}
TransferTally RingReduce::run(const PlanOp& op, int rank, SimContext& ctx) const {
  if (ctx.plan.world_size < 2) return {};
  return run_channels(rank, op.channels, [&](int c) { return run_chain_channel(op, rank, ctx, c, true); });
}

void RingBroadcast::add_pairs(const PlanOp& op, const ClusterSpec& cluster, RankPairs& pairs) const {
  add_channel_ring_pairs(cluster, op.channels, pairs);
}
TransferTally RingBroadcast::run(const PlanOp& op, int rank, SimContext& ctx) const {
  if (ctx.plan.world_size < 2) return {};
  return run_channels(rank, op.channels, [&](int c) { return run_chain_channel(op, rank, ctx, c, false); });
}

}  // namespace redsim
