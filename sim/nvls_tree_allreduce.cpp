#include "sim/nvls_tree_allreduce.h"

#include <simgrid/s4u.hpp>

#include "collectives/shapes.h"
#include "sim/network.h"
#include "sim/ring_pass.h"

namespace redsim {
namespace sg4 = simgrid::s4u;
namespace {
char g_payload;

struct Channel {
  int rank, c, heads, head, loops;
  std::int64_t bytes;
  int parent;
  std::vector<int> children;
  sg4::Host *me, *sw;
};

std::int64_t piece_of(const Channel& ch, int loop) {
  return nvls_piece(nvls_slice(ch.bytes, ch.loops, loop), ch.heads, ch.head);
}

// One loop's transfer with the switch: `up` to it and `down` from it at once.
void with_switch(const Channel& ch, const Mechanics& m, SimContext& ctx, std::int64_t up, std::int64_t down, TransferTally& t) {
  auto a = sg4::Comm::sendto_async(ch.me, ch.sw, static_cast<std::uint64_t>(ctx.wire_bytes(m, up)));
  auto b = sg4::Comm::sendto_async(ch.sw, ch.me, static_cast<std::uint64_t>(ctx.wire_bytes(m, down)));
  a->wait();
  b->wait();
  t.bytes_sent += up;
  t.bytes_received += down;
}

// Up the node tree: loop l's piece once the switch has reduced it and the children have sent theirs.
void tree_up(const PlanOp& op, const Channel& ch, SimContext& ctx, const sg4::SemaphorePtr& reduced,
             const sg4::SemaphorePtr& at_root, TransferTally& t) {
  const auto& m = ctx.mechanics(op);
  for (int l = 0; l < ch.loops; ++l) {
    reduced->acquire();
    const auto piece = piece_of(ch, l);
    std::vector<void*> got(ch.children.size());
    std::vector<sg4::CommPtr> pending;
    for (std::size_t k = 0; k < ch.children.size(); ++k)
      pending.push_back(ctx.mailbox(op.stream, ch.c, static_cast<int>(MailPhase::tree_up) + 4 + static_cast<int>(k), ch.rank)
                            ->get_async(&got[k]));
    for (auto& x : pending) x->wait();
    for (std::size_t k = 0; k < pending.size(); ++k) ctx.pace_step(m, ch.children[k], ch.rank, piece, pending[k], l == 0);
    t.bytes_received += piece * static_cast<std::int64_t>(ch.children.size());
    ctx.charge_reduction(m, piece * static_cast<std::int64_t>(ch.children.size()));
    if (ch.parent < 0) {
      at_root->release();
      continue;
    }
    const auto& sib = ctx.node_tree(ch.c).children[static_cast<std::size_t>(ch.parent)];
    const int slot = static_cast<int>(std::find(sib.begin(), sib.end(), ch.rank) - sib.begin());
    auto send = ctx.mailbox(op.stream, ch.c, static_cast<int>(MailPhase::tree_up) + 4 + slot, ch.parent)
                    ->put_async(&g_payload, static_cast<std::uint64_t>(ctx.wire_bytes(m, piece)));
    send->wait();
    ctx.pace_step(m, ch.rank, ch.parent, piece, send, l == 0);
    t.bytes_sent += piece;
  }
}

// Down the node tree: the root starts once it has the loop's sum; every device then hands the
// piece to the switch for the multicast.
void tree_down(const PlanOp& op, const Channel& ch, SimContext& ctx, const sg4::SemaphorePtr& at_root,
               const sg4::SemaphorePtr& summed, TransferTally& t) {
  const auto& m = ctx.mechanics(op);
  for (int l = 0; l < ch.loops; ++l) {
    const auto piece = piece_of(ch, l);
    if (ch.parent < 0) {
      at_root->acquire();
    } else {
      void* got = nullptr;
      auto recv = ctx.mailbox(op.stream, ch.c, static_cast<int>(MailPhase::tree_down), ch.rank)->get_async(&got);
      recv->wait();
      ctx.pace_step(m, ch.parent, ch.rank, piece, recv, l == 0);
      t.bytes_received += piece;
    }
    std::vector<sg4::CommPtr> pending;
    for (int child : ch.children)
      pending.push_back(ctx.mailbox(op.stream, ch.c, static_cast<int>(MailPhase::tree_down), child)
                            ->put_async(&g_payload, static_cast<std::uint64_t>(ctx.wire_bytes(m, piece))));
    for (auto& x : pending) x->wait();
    for (std::size_t k = 0; k < pending.size(); ++k) ctx.pace_step(m, ch.rank, ch.children[k], piece, pending[k], l == 0);
    t.bytes_sent += piece * static_cast<std::int64_t>(ch.children.size());
    summed->release();
  }
}

}  // namespace

void NvlsTreeAllreduce::add_pairs(const PlanOp& op, const ClusterSpec& cluster, RankPairs& pairs) const {
  for (int r = 0; r < cluster.world_size(); ++r) {
    const int sw = switch_endpoint(cluster, cluster.node_of(r));
    pairs.emplace(r, sw);
    pairs.emplace(sw, r);
  }
  for (int c = 0; c < std::min(op.channels, 2); ++c) {  // channels alternate between two trees
    const auto t = node_tree(cluster, c);
    for (int r = 0; r < cluster.world_size(); ++r)
      if (const int p = t.parent[static_cast<std::size_t>(r)]; p >= 0) {
        pairs.emplace(r, p);
        pairs.emplace(p, r);
      }
  }
}

TransferTally NvlsTreeAllreduce::run(const PlanOp& op, int rank, SimContext& ctx) const {
  const auto& cl = ctx.cluster;
  const auto& m = ctx.mechanics(op);
  return run_channels(rank, op.channels, [&](int c) {
    Channel ch;
    ch.rank = rank;
    ch.c = c;
    ch.heads = cl.devices_per_node;
    ch.head = cl.local_of(rank);
    ch.bytes = split_piece(op.bytes, op.channels, c);
    ch.loops = nvls_loops(m, ch.bytes, ch.heads);
    const auto& tree = ctx.node_tree(c);
    ch.parent = tree.parent[static_cast<std::size_t>(rank)];
    ch.children = tree.children[static_cast<std::size_t>(rank)];
    ch.me = ctx.platform.hosts[static_cast<std::size_t>(rank)];
    ch.sw = ctx.platform.hosts[static_cast<std::size_t>(switch_endpoint(cl, cl.node_of(rank)))];
    auto reduced = sg4::Semaphore::create(0), at_root = sg4::Semaphore::create(0), summed = sg4::Semaphore::create(0);
    TransferTally rs, up, down, ag;
    const std::string name = "r" + std::to_string(rank) + "c" + std::to_string(c);
    auto u = sg4::Actor::create(name + "up", ch.me, [&] { tree_up(op, ch, ctx, reduced, at_root, up); });
    auto d = sg4::Actor::create(name + "down", ch.me, [&] { tree_down(op, ch, ctx, at_root, summed, down); });
    // The copy stages (collective_model.h): loop 0's scatter before the first reduce-scatter and
    // the last loop's gather after the last multicast, each as long as its neighbour stage.
    TransferTally copies;
    auto g = sg4::Actor::create(name + "ag", ch.me, [&] {
      for (int l = 0; l < ch.loops; ++l) {
        summed->acquire();
        with_switch(ch, m, ctx, piece_of(ch, l), nvls_slice(ch.bytes, ch.loops, l), ag);
      }
      with_switch(ch, m, ctx, piece_of(ch, ch.loops - 1), nvls_slice(ch.bytes, ch.loops, ch.loops - 1), copies);
    });
    with_switch(ch, m, ctx, nvls_slice(ch.bytes, ch.loops, 0), piece_of(ch, 0), copies);
    for (int l = 0; l < ch.loops; ++l) {  // the switch's reduce-scatter, loop after loop
      with_switch(ch, m, ctx, nvls_slice(ch.bytes, ch.loops, l), piece_of(ch, l), rs);
      reduced->release();
    }
    u->join();
    d->join();
    g->join();
    return TransferTally{rs.bytes_sent + up.bytes_sent + down.bytes_sent + ag.bytes_sent,
                         rs.bytes_received + up.bytes_received + down.bytes_received + ag.bytes_received};
  });
}

}  // namespace redsim
