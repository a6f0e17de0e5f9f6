#include "sim/tree_allreduce.h"

#include <algorithm>
#include <optional>

#include <simgrid/s4u.hpp>

#include "collectives/shapes.h"
#include "sim/ring_pass.h"
#include "sim/stream_edge.h"

namespace redsim {
namespace sg4 = simgrid::s4u;
namespace {
char g_payload;

// Each child slot of a parent has its own mailbox, so one fast child cannot take another's turn.
int up_phase(int slot) { return static_cast<int>(MailPhase::tree_up) + 4 + slot; }

struct Node {
  int parent = -1;
  int slot = 0;  // this rank's index among its parent's children
  std::vector<int> children;
};

Node node_of(const TreeShape& t, int rank) {
  Node n;
  n.parent = t.parent[static_cast<std::size_t>(rank)];
  n.children = t.children[static_cast<std::size_t>(rank)];
  if (n.parent >= 0) {
    const auto& sib = t.children[static_cast<std::size_t>(n.parent)];
    n.slot = static_cast<int>(std::find(sib.begin(), sib.end(), rank) - sib.begin());
  }
  return n;
}

// Up: round r receives chunk r from every child and forwards chunk r-1 (leaves send chunk r).
// The root hands each reduced chunk to the way down.
void run_up(const PlanOp& op, int rank, int c, const Node& nd, std::int64_t bytes, int chunks, SimContext& ctx,
            const sg4::SemaphorePtr& reduced, TransferTally& t) {
  const auto& m = ctx.mechanics(op);
  const bool kids = !nd.children.empty(), up = nd.parent >= 0;
  const int rounds = chunks + (kids && up ? 1 : 0);
  std::vector<void*> got(nd.children.size());
  CapPacer pacer(m);
  for (int r = 0; r < rounds; ++r) {
    std::vector<sg4::CommPtr> recvs;
    sg4::CommPtr send;
    std::int64_t received = 0, sent = 0;
    const std::int64_t chunk = r < chunks ? split_piece(bytes, chunks, r) : 0;
    if (r < chunks)
      for (std::size_t k = 0; k < nd.children.size(); ++k) {
        recvs.push_back(ctx.mailbox(op.stream, c, up_phase(static_cast<int>(k)), rank)->get_async(&got[k]));
        received += chunk;
      }
    const int send_chunk = kids ? r - 1 : r;
    if (up && send_chunk >= 0 && send_chunk < chunks) {
      sent = split_piece(bytes, chunks, send_chunk);
      pacer.before_put();
      send = ctx.mailbox(op.stream, c, up_phase(nd.slot), nd.parent)
                 ->put_async(&g_payload, static_cast<std::uint64_t>(ctx.wire_bytes(m, sent)));
      pacer.put(sent);
    }
    for (auto& x : recvs) x->wait();
    if (send) send->wait();
    // The tree streams: only the first chunk pays each hop's latency; chunks cross at the links'
    // rate, the sender's CapPacer holding them to the channel's cap.
    if (send) ctx.pace_step(m, rank, nd.parent, 0, send, send_chunk == 0);
    for (std::size_t k = 0; k < recvs.size(); ++k) ctx.pace_step(m, nd.children[k], rank, 0, recvs[k], r == 0);
    t.bytes_sent += sent;
    t.bytes_received += received;
    ctx.charge_reduction(m, received);
    if (!up && r < chunks) reduced->release();
  }
}

// Down: round r receives chunk r from the parent and forwards chunk r-1 to the children (the
// root sends chunk r once it is reduced).
void run_down(const PlanOp& op, int rank, int c, const Node& nd, std::int64_t bytes, int chunks, SimContext& ctx,
              const sg4::SemaphorePtr& reduced, TransferTally& t) {
  const auto& m = ctx.mechanics(op);
  const bool kids = !nd.children.empty(), up = nd.parent >= 0;
  const int rounds = chunks + (kids && up ? 1 : 0);
  void* got = nullptr;
  CapPacer pacer(m);
  for (int r = 0; r < rounds; ++r) {
    sg4::CommPtr recv;
    std::vector<sg4::CommPtr> sends;
    const int send_chunk = up ? r - 1 : r;
    if (!up && send_chunk < chunks) reduced->acquire();
    std::int64_t sent = 0, received = 0;
    if (up && r < chunks) {
      recv = ctx.mailbox(op.stream, c, static_cast<int>(MailPhase::tree_down), rank)->get_async(&got);
      received = split_piece(bytes, chunks, r);
      t.bytes_received += received;
    }
    if (send_chunk >= 0 && send_chunk < chunks && !nd.children.empty()) {
      sent = split_piece(bytes, chunks, send_chunk);
      pacer.before_put();
      for (int child : nd.children) {
        sends.push_back(ctx.mailbox(op.stream, c, static_cast<int>(MailPhase::tree_down), child)
                            ->put_async(&g_payload, static_cast<std::uint64_t>(ctx.wire_bytes(m, sent))));
        t.bytes_sent += sent;
      }
      pacer.put(sent);
    }
    if (recv) recv->wait();
    for (auto& x : sends) x->wait();
    for (std::size_t k = 0; k < sends.size(); ++k) ctx.pace_step(m, rank, nd.children[k], 0, sends[k], send_chunk == 0);
    if (recv) ctx.pace_step(m, nd.parent, rank, 0, recv, r == 0);
  }
}

// LL and LL128 (sim/stream_edge.h): up, a rank takes piece k from every child, reduces and
// passes it to its parent (the root hands it to the way down); down, it takes piece k from its
// parent and passes it to its children, with later pieces already on their way.
void run_up_streamed(const PlanOp& op, int rank, int c, const Node& nd, std::int64_t bytes, int chunks, SimContext& ctx,
                     const sg4::SemaphorePtr& reduced, TransferTally& t) {
  const auto& m = ctx.mechanics(op);
  const std::int64_t piece = split_piece(bytes, chunks, 0);
  std::vector<StreamRecv> ins;
  ins.reserve(nd.children.size());
  for (std::size_t k = 0; k < nd.children.size(); ++k) {
    const int kid = nd.children[k];
    ins.emplace_back(ctx, m, ctx.mailbox(op.stream, c, up_phase(static_cast<int>(k)), rank), kid, rank, piece, chunks,
                     StreamPace::tree_on);
  }
  std::optional<StreamSend> out;
  if (nd.parent >= 0)
    out.emplace(ctx, m, ctx.mailbox(op.stream, c, up_phase(nd.slot), nd.parent), rank, nd.parent, piece, chunks,
                ins.empty() ? StreamPace::tree_start : StreamPace::tree_on);
  for (int k = 0; k < chunks; ++k) {
    const std::int64_t b = split_piece(bytes, chunks, k);
    for (auto& in : ins) in.take(b, 0);
    const auto received = b * static_cast<std::int64_t>(ins.size());
    t.bytes_received += received;
    ctx.charge_reduction(m, received);
    if (out) {
      out->put(b);
      t.bytes_sent += b;
    } else {
      reduced->release();
    }
  }
  if (out) out->finish();
}

void run_down_streamed(const PlanOp& op, int rank, int c, const Node& nd, std::int64_t bytes, int chunks, SimContext& ctx,
                       const sg4::SemaphorePtr& reduced, TransferTally& t) {
  const auto& m = ctx.mechanics(op);
  const std::int64_t piece = split_piece(bytes, chunks, 0);
  const auto phase = static_cast<int>(MailPhase::tree_down);
  std::optional<StreamRecv> in;
  if (nd.parent >= 0)
    in.emplace(ctx, m, ctx.mailbox(op.stream, c, phase, rank), nd.parent, rank, piece, chunks, StreamPace::tree_on);
  std::vector<StreamSend> outs;
  outs.reserve(nd.children.size());
  for (int kid : nd.children)
    outs.emplace_back(ctx, m, ctx.mailbox(op.stream, c, phase, kid), rank, kid, piece, chunks, StreamPace::tree_on);
  for (int k = 0; k < chunks; ++k) {
    const std::int64_t b = split_piece(bytes, chunks, k);
    if (in) {
      in->take(b, 0);
      t.bytes_received += b;
    } else {
      reduced->acquire();
    }
    for (auto& out : outs) {
      out.put(b);
      t.bytes_sent += b;
    }
  }
  for (auto& out : outs) out.finish();
}

}  // namespace

void TreeAllreduce::add_pairs(const PlanOp& op, const ClusterSpec& cluster, RankPairs& pairs) const {
  for (int c = 0; c < op.channels; ++c) {
    const auto t = tree_shape(cluster, c, op.channels);
    for (int r = 0; r < cluster.world_size(); ++r)
      if (const int p = t.parent[static_cast<std::size_t>(r)]; p >= 0) {
        pairs.emplace(r, p);
        pairs.emplace(p, r);
      }
  }
}

TransferTally TreeAllreduce::run(const PlanOp& op, int rank, SimContext& ctx) const {
  if (ctx.plan.world_size < 2) return {};
  return run_channels(rank, op.channels, [&](int c) {
    const Node nd = node_of(ctx.tree(c, op.channels), rank);
    const std::int64_t bytes = split_piece(op.bytes, op.channels, c);
    const int chunks = ctx.mechanics(op).chunks(bytes);
    auto reduced = sg4::Semaphore::create(0);
    TransferTally up, down;
    const bool streamed = ctx.mechanics(op).streams();
    auto helper = sg4::Actor::create("r" + std::to_string(rank) + "ch" + std::to_string(c) + "down", sg4::this_actor::get_host(), [&] {
      if (streamed) run_down_streamed(op, rank, c, nd, bytes, chunks, ctx, reduced, down);
      else run_down(op, rank, c, nd, bytes, chunks, ctx, reduced, down);
    });
    if (streamed) run_up_streamed(op, rank, c, nd, bytes, chunks, ctx, reduced, up);
    else run_up(op, rank, c, nd, bytes, chunks, ctx, reduced, up);
    helper->join();
    return TransferTally{up.bytes_sent + down.bytes_sent, up.bytes_received + down.bytes_received};
  });
}

}  // namespace redsim
