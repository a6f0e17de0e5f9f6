#include "sim/pat_collectives.h"

#include <simgrid/s4u.hpp>

#include "collectives/pat_rounds.h"
#include "core/pipeline.h"
#include "sim/ring_pass.h"

namespace redsim {
namespace {
char g_payload;
}  // namespace

void PatCollective::add_pairs(const PlanOp& op, const ClusterSpec& cluster, RankPairs& pairs) const {
  const int n = cluster.world_size();
  const std::vector<std::int64_t> shares(static_cast<std::size_t>(n), 1);
  for (int r = 0; r < n; ++r)
    for (const auto& round : pat_rounds(op.kind, shares, r)) pairs.emplace(r, round.send_to);
}

TransferTally PatCollective::run(const PlanOp& op, int rank, SimContext& ctx) const {
  const int n = ctx.plan.world_size;
  if (n < 2) return {};
  const auto shares = op_shards(op, n);
  const auto& m = ctx.mechanics(op);
  const bool reduce = op.kind == OpKind::reduce_scatter;
  return run_channels(rank, op.channels, [&](int c) {
    std::vector<std::int64_t> mine(shares.size());
    for (std::size_t r = 0; r < shares.size(); ++r) mine[r] = split_piece(shares[r], op.channels, c);
    const auto rounds = pat_rounds(op.kind, mine, rank);
    TransferTally tally;
    for (std::size_t k = 0; k < rounds.size(); ++k) {
      const auto& round = rounds[k];
      // A mailbox per round and channel: a peer a round ahead must not meet this round's receive.
      const int box = static_cast<int>(k) * op.channels + c;
      const int phase = static_cast<int>(MailPhase::pat);
      simgrid::s4u::CommPtr recv, send;
      void* got = nullptr;
      if (round.recv_bytes > 0) recv = ctx.mailbox(op.stream, box, phase, rank)->get_async(&got);
      if (round.send_bytes > 0)
        send = ctx.mailbox(op.stream, box, phase, round.send_to)
                   ->put_async(&g_payload, static_cast<std::uint64_t>(ctx.wire_bytes(m, round.send_bytes)));
      if (send) {
        send->wait();
        ctx.pace_step(m, rank, round.send_to, round.send_bytes, send);
        tally.bytes_sent += round.send_bytes;
      }
      if (recv) {
        recv->wait();
        ctx.pace_step(m, round.recv_from, rank, round.recv_bytes, recv);
        if (reduce) ctx.charge_reduction(m, round.recv_bytes);
        tally.bytes_received += round.recv_bytes;
      }
    }
    return tally;
  });
}

}  // namespace redsim
