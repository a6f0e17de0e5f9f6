#include "sim/hierarchical_allreduce.h"

#include "sim/ring_pass.h"

namespace redsim {
namespace {

// Channel c's ring inside `node`: local devices rotated as ring_order rotates them.
std::vector<int> local_ring(const ClusterSpec& c, int node, int channel, int channels) {
  const int dpn = c.devices_per_node;
  const int shift = (channel * dpn / channels) % dpn;
  std::vector<int> ring;
  for (int i = 0; i < dpn; ++i) ring.push_back(node * dpn + (i + shift) % dpn);
  return ring;
}

// The ring across nodes of the devices with local index `local`.
std::vector<int> node_ring(const ClusterSpec& c, int local) {
  std::vector<int> ring;
  for (int m = 0; m < c.nodes; ++m) ring.push_back(m * c.devices_per_node + local);
  return ring;
}

void add_ring(const std::vector<int>& ring, RankPairs& pairs) {
  if (ring.size() < 2) return;
  for (std::size_t i = 0; i < ring.size(); ++i) pairs.emplace(ring[i], ring[(i + 1) % ring.size()]);
}

}  // namespace

void HierarchicalAllreduce::add_pairs(const PlanOp& op, const ClusterSpec& cluster, RankPairs& pairs) const {
  for (int c = 0; c < op.channels; ++c)
    for (int m = 0; m < cluster.nodes; ++m) add_ring(local_ring(cluster, m, c, op.channels), pairs);
  for (int l = 0; l < cluster.devices_per_node; ++l) add_ring(node_ring(cluster, l), pairs);
}

TransferTally HierarchicalAllreduce::run(const PlanOp& op, int rank, SimContext& ctx) const {
  const auto& cl = ctx.cluster;
  if (cl.world_size() < 2) return {};
  const int dpn = cl.devices_per_node;
  return run_channels(rank, op.channels, [&](int c) {
    const std::int64_t bytes = split_piece(op.bytes, op.channels, c);
    RingPass intra;
    intra.ring = local_ring(cl, cl.node_of(rank), c, op.channels);
    for (int p = 0; p < dpn; ++p)
      if (intra.ring[static_cast<std::size_t>(p)] == rank) intra.pos = p;
    for (int j = 0; j < dpn; ++j) intra.chunk_bytes.push_back(split_piece(bytes, dpn, j));

    TransferTally t;
    auto add = [&t](const TransferTally& x) {
      t.bytes_sent += x.bytes_sent;
      t.bytes_received += x.bytes_received;
    };
    intra.allgather = false;
    intra.phase = MailPhase::intra_scatter;
    add(run_ring_pass(ctx, op, c, intra));

    // This rank now owns chunk pos+1 of the node's buffer; so does the same local device of
    // every node (all nodes rotate alike), and they allreduce it across nodes.
    const std::int64_t shard = intra.chunk_bytes[static_cast<std::size_t>((intra.pos + 1) % dpn)];
    RingPass inter;
    inter.ring = node_ring(cl, cl.local_of(rank));
    inter.pos = cl.node_of(rank);
    for (int j = 0; j < cl.nodes; ++j) inter.chunk_bytes.push_back(split_piece(shard, cl.nodes, j));
    inter.phase = MailPhase::inter_ring;
    add(run_ring_pass(ctx, op, c, inter));

    intra.reduce_scatter = false;
    intra.allgather = true;
    intra.phase = MailPhase::intra_gather;
    add(run_ring_pass(ctx, op, c, intra));
    return t;
  });
}

}  // namespace redsim
