#include "sim/binomial_broadcast.h"

#include <simgrid/s4u.hpp>

#include "collectives/shapes.h"
#include "sim/ring_pass.h"

namespace redsim {
namespace {
char g_payload;
}  // namespace

void BinomialBroadcast::add_pairs(const PlanOp& op, const ClusterSpec& cluster, RankPairs& pairs) const {
  const auto t = binomial_tree(cluster.world_size(), op.root);
  for (int r = 0; r < cluster.world_size(); ++r)
    for (int c : t.children[static_cast<std::size_t>(r)]) pairs.emplace(r, c);
}

TransferTally BinomialBroadcast::run(const PlanOp& op, int rank, SimContext& ctx) const {
  const int n = ctx.plan.world_size;
  if (n < 2 || op.bytes <= 0) return {};
  const auto peers = binomial_peers(n, op.root, rank);
  const auto& m = ctx.mechanics(op);
  TransferTally tally;
  const int parent = peers.parent;
  if (parent >= 0) {
    void* got = nullptr;
    auto recv = ctx.mailbox(op.stream, 0, static_cast<int>(MailPhase::binomial), rank)->get_async(&got);
    recv->wait();
    ctx.pace_step(m, parent, rank, op.bytes, recv);
    tally.bytes_received = op.bytes;
  }
  // Every send is issued at once, as Gloo's are; they share this rank's link.
  std::vector<std::pair<int, simgrid::s4u::CommPtr>> sends;
  for (int c : peers.children) {
    auto* out = ctx.mailbox(op.stream, 0, static_cast<int>(MailPhase::binomial), c);
    sends.emplace_back(c, out->put_async(&g_payload, static_cast<std::uint64_t>(ctx.wire_bytes(m, op.bytes))));
    tally.bytes_sent += op.bytes;
  }
  for (auto& [c, s] : sends) {
    s->wait();
    ctx.pace_step(m, rank, c, op.bytes, s);
  }
  return tally;
}

}  // namespace redsim
