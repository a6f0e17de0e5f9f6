// Chains at scale (scalable_model.h): a ZeRO step at 131,072 ranks has a reduce per owner, so a
// pass over the ranks per chain would cost ranks squared. What these return is O(channels).
#include <algorithm>
#include <map>

#include "sim/scalable_model.h"
#include "sim/sim_context.h"

namespace redsim::scalable {
namespace {

int mod(int a, int n) { return ((a % n) + n) % n; }

// The chain's first rank in ring positions: a reduce starts after its root, a broadcast at it.
int chain_head_pos(const PlanOp& op, int root_pos) { return op.kind == OpKind::reduce ? root_pos + 1 : root_pos; }

}  // namespace

std::vector<int> Model::chain_shape_key(const PlanOp& op) {
  const int n = plan_.world_size;
  std::vector<int> key;
  for (int c = 0; c < op.channels; ++c) {
    const auto& wr = world_ring(c, op.channels);
    const int root_pos = wr.pos[static_cast<std::size_t>(op.root)];
    // channel_stages reads the root only through these: the wave's first edge (a position in the
    // wave's period) and, unfolded, which edge carries nothing.
    key.push_back(mod(root_pos, static_cast<int>(wr.wave_routes.size())));
    key.push_back(static_cast<int>(wr.routes.size()) == n ? root_pos : -1);
  }
  return key;
}

Model::ChainBytes Model::chain_rank_bytes(const PlanOp& op) {
  const int n = plan_.world_size;
  ChainBytes out;
  // Per rank that heads or ends some channel's chain: (sent, received) over all channels.
  std::map<int, std::pair<std::int64_t, std::int64_t>> odd;
  std::vector<std::pair<int, int>> ends;  // per channel: head rank, tail rank
  for (int c = 0; c < op.channels; ++c) {
    const std::int64_t bytes = split_piece(op.bytes, op.channels, c);
    out.sent += bytes;
    out.received += bytes;
    const auto& wr = world_ring(c, op.channels);
    const int head = chain_head_pos(op, wr.pos[static_cast<std::size_t>(op.root)]);
    ends.emplace_back(wr.ring[static_cast<std::size_t>(mod(head, n))], wr.ring[static_cast<std::size_t>(mod(head + n - 1, n))]);
    odd.emplace(ends.back().first, std::pair<std::int64_t, std::int64_t>{0, 0});
    odd.emplace(ends.back().second, std::pair<std::int64_t, std::int64_t>{0, 0});
  }
  // As add_rank_bytes counts them: a rank sends each channel's bytes unless it is that chain's
  // tail, and receives them unless it is its head.
  for (auto& [rank, b] : odd)
    for (int c = 0; c < op.channels; ++c) {
      const std::int64_t bytes = split_piece(op.bytes, op.channels, c);
      const auto [head, tail] = ends[static_cast<std::size_t>(c)];
      if (rank != tail) b.first += bytes;
      if (rank != head) b.second += bytes;
    }
  for (const auto& [rank, b] : odd) out.exceptions.emplace_back(rank, b);
  return out;
}

}  // namespace redsim::scalable
