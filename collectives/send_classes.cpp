#include "collectives/send_classes.h"

#include "collectives/nccl_topology.h"
#include "collectives/pat_rounds.h"

namespace redsim {

void SendClasses::add(HwShares& s, int src, int dst, double weight) const {
  s[static_cast<std::size_t>(nccl::hop_hw(cluster_, src, dst))] += weight;
}

int SendClasses::ring_next(int rank, int channel, int channels, bool in_node) {
  auto it = rings_.find({channel, channels});
  if (it == rings_.end()) {
    auto order = ring_order(cluster_, channel, channels);
    std::vector<int> pos(order.size());
    for (std::size_t i = 0; i < order.size(); ++i) pos[static_cast<std::size_t>(order[i])] = static_cast<int>(i);
    it = rings_.emplace(std::pair{channel, channels}, std::pair{std::move(order), std::move(pos)}).first;
  }
  const auto& [order, pos] = it->second;
  const auto p = static_cast<std::size_t>(pos[static_cast<std::size_t>(rank)]);
  if (!in_node) return order[(p + 1) % order.size()];
  // ring_order lists the nodes one after another, each node's devices together.
  const auto dpn = static_cast<std::size_t>(cluster_.devices_per_node), start = p / dpn * dpn;
  return order[start + (p - start + 1) % dpn];
}

HwShares SendClasses::shares(const PlanOp& op, int rank) {
  HwShares s{};
  const int world = cluster_.world_size(), dpn = cluster_.devices_per_node, nodes = cluster_.nodes;
  if (group_ranks(op, world) < 2) return s;
  const int C = std::max(1, op.channels);
  for (int c = 0; c < C; ++c) {
    if (op.group_size > 0) {  // the group's ring, members in ring order
      const auto members = group_members(op, world, rank);
      const auto i = static_cast<std::size_t>(group_member_index(op, rank));
      add(s, rank, members[(i + 1) % members.size()], 1);
    } else if (op.algorithm == Algorithm::tree) {  // up to the parent, down to each child
      auto it = trees_.find({c, C});
      if (it == trees_.end()) it = trees_.emplace(std::pair{c, C}, tree_shape(cluster_, c, C)).first;
      const auto& t = it->second;
      if (t.parent[static_cast<std::size_t>(rank)] >= 0) add(s, rank, t.parent[static_cast<std::size_t>(rank)], 1);
      for (int k : t.children[static_cast<std::size_t>(rank)]) add(s, rank, k, 1);
    } else if (op.algorithm == Algorithm::nvls) {
      s[static_cast<std::size_t>(nccl::Hw::nvlink)] += 1;
    } else if (op.algorithm == Algorithm::nvls_tree) {
      s[static_cast<std::size_t>(nccl::Hw::nvlink)] += 1;  // the slice to the switch
      auto it = node_trees_.find(c);
      if (it == node_trees_.end()) it = node_trees_.emplace(c, node_tree(cluster_, c)).first;
      const auto& t = it->second;
      const double piece = 1.0 / dpn;
      if (t.parent[static_cast<std::size_t>(rank)] >= 0) add(s, rank, t.parent[static_cast<std::size_t>(rank)], piece);
      for (int k : t.children[static_cast<std::size_t>(rank)]) add(s, rank, k, piece);
    } else if (op.algorithm == Algorithm::hierarchical) {
      // Reduce-scatter and allgather in the node, 2(d-1)/d of the buffer to the local ring's next;
      // the node ring's allreduce of one 1/d shard, 2(m-1)/m of it to the same device next node.
      const int local = cluster_.local_of(rank), node = cluster_.node_of(rank);
      if (dpn > 1) add(s, rank, ring_next(rank, c, C, true), 2.0 * (dpn - 1) / dpn);
      if (nodes > 1) add(s, rank, ((node + 1) % nodes) * dpn + local, 2.0 * (nodes - 1) / nodes / dpn);
    } else if (op.algorithm == Algorithm::pat) {  // each round's shares to that round's peer
      const std::vector<std::int64_t> ones(static_cast<std::size_t>(world), 1);
      for (const auto& r : pat_rounds(op.kind, ones, rank)) add(s, rank, r.send_to, static_cast<double>(r.send_bytes));
    } else if (op.algorithm == Algorithm::binomial) {  // the whole buffer to each child
      for (int k : binomial_peers(world, op.root, rank).children) add(s, rank, k, 1);
    } else if (op.algorithm == Algorithm::collnet_direct || op.algorithm == Algorithm::collnet_chain) {
      s[static_cast<std::size_t>(nccl::Hw::net)] += 1;
    } else {  // rings and chains: to the next rank of the channel's ring
      add(s, rank, ring_next(rank, c, C, false), 1);
    }
  }
  double total = 0;
  for (double v : s) total += v;
  if (total > 0)
    for (double& v : s) v /= total;
  return s;
}

}  // namespace redsim
