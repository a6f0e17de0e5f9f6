// The scalable fidelity's PAT allgather and reduce-scatter (collectives/pat_rounds.h): a stage a
// round, each rank's transfer of the round one flow, so a round ends with its slowest transfer,
// as the exact fidelity's ranks wait for theirs before the next round.
#include "collectives/pat_rounds.h"
#include "core/pipeline.h"
#include "sim/ring_pass.h"
#include "sim/scalable_model.h"

namespace redsim::scalable {

void Model::pat_routes() {
  const int n = plan_.world_size;
  const std::vector<std::int64_t> shares(static_cast<std::size_t>(n), 1);
  for (int r = 0; r < n; ++r)
    for (const auto& round : pat_rounds(OpKind::allgather, shares, r)) {
      routes_.between(r, round.send_to, unfolded_);
      routes_.between(round.send_to, r, unfolded_);
    }
}

std::vector<std::int64_t> Model::pat_channel_shares(const PlanOp& op, int c) const {
  auto shares = op_shards(op, plan_.world_size);
  for (auto& s : shares) s = split_piece(s, op.channels, c);
  return shares;
}

std::vector<Stage> Model::pat_stages(const PlanOp& op, int c) {
  const int n = plan_.world_size;
  const auto shares = pat_channel_shares(op, c);
  const auto& m = mech(op);
  std::vector<Stage> stages(static_cast<std::size_t>(pat_round_count(n)));
  for (int r = 0; r < n; ++r) {
    const auto rounds = pat_rounds(op.kind, shares, r);
    for (std::size_t k = 0; k < rounds.size(); ++k) {
      if (rounds[k].send_bytes <= 0) continue;
      Flow f;
      f.route = routes_.between(r, rounds[k].send_to, unfolded_);
      f.bytes = rounds[k].send_bytes;
      apply_protocol(f, m, 1, true);
      // The receiver reduces what arrives before the next round (reduce-scatter).
      if (op.kind == OpKind::reduce_scatter) f.post_delay_s += static_cast<double>(rounds[k].send_bytes) * m.reduce_s_per_byte;
      stages[k].flows.push_back(f);
    }
  }
  return stages;
}

void Model::add_pat_rank_bytes(const PlanOp& op, int c, std::vector<std::int64_t>& sent,
                               std::vector<std::int64_t>& received) {
  const auto shares = pat_channel_shares(op, c);
  for (int r = 0; r < plan_.world_size; ++r)
    for (const auto& round : pat_rounds(op.kind, shares, r)) {
      sent[static_cast<std::size_t>(r)] += round.send_bytes;
      received[static_cast<std::size_t>(r)] += round.recv_bytes;
    }
}

}  // namespace redsim::scalable
