#include "collectives/shapes.h"

#include <deque>

#include "collectives/nccl_topology.h"

namespace redsim {
namespace {

// The devices of a node in channel c's order.
std::vector<int> local_order(const ClusterSpec& cluster, int channel, int channels) {
  const int dpn = cluster.devices_per_node;
  std::vector<int> base(static_cast<std::size_t>(dpn));
  for (int i = 0; i < dpn; ++i) base[static_cast<std::size_t>(i)] = i;
  if (cluster.intra.fabric == IntraFabric::nvlink && dpn > 1) {
    const auto rings = nccl::topology_of(cluster).rings;
    if (!rings.empty()) base = rings[static_cast<std::size_t>(channel) % rings.size()];
  }
  const int shift = channels > 0 ? (channel * dpn / channels) % dpn : 0;
  std::vector<int> order;
  for (int i = 0; i < dpn; ++i) order.push_back(base[static_cast<std::size_t>((i + shift) % dpn)]);
  return order;
}

}  // namespace

std::vector<int> ring_order(const ClusterSpec& cluster, int channel, int channels) {
  const int dpn = cluster.devices_per_node;
  const auto local = local_order(cluster, channel, channels);
  std::vector<int> order;
  order.reserve(static_cast<std::size_t>(cluster.world_size()));
  for (int n = 0; n < cluster.nodes; ++n)
    for (int l : local) order.push_back(n * dpn + l);
  return order;
}

TreeShape tree_shape(const ClusterSpec& cluster, int channel, int channels) {
  const int dpn = cluster.devices_per_node, nodes = cluster.nodes, world = cluster.world_size();
  const auto local = local_order(cluster, channel, channels);
  // Heap over the nodes, mirrored on odd channels.
  auto node_at = [&](int q) { return channel % 2 == 1 ? nodes - 1 - q : q; };
  auto head = [&](int node) { return node * dpn + local.front(); };
  TreeShape t;
  t.parent.assign(static_cast<std::size_t>(world), -1);
  t.children.assign(static_cast<std::size_t>(world), {});
  for (int q = 0; q < nodes; ++q) {
    const int node = node_at(q);
    for (int i = 1; i < dpn; ++i) {  // the chain inside the node
      const int r = node * dpn + local[static_cast<std::size_t>(i)];
      const int p = node * dpn + local[static_cast<std::size_t>(i - 1)];
      t.parent[static_cast<std::size_t>(r)] = p;
      t.children[static_cast<std::size_t>(p)].push_back(r);
    }
    if (q > 0) {
      const int p = head(node_at((q - 1) / 2));
      t.parent[static_cast<std::size_t>(head(node))] = p;
      t.children[static_cast<std::size_t>(p)].push_back(head(node));
    }
  }
  t.root = head(node_at(0));
  std::deque<int> todo{t.root};
  while (!todo.empty()) {
    const int r = todo.front();
    todo.pop_front();
    t.order.push_back(r);
    for (int k : t.children[static_cast<std::size_t>(r)]) todo.push_back(k);
  }
  return t;
}

std::vector<int> tree_shape_key(const ClusterSpec& cluster, int channel, int channels) {
  auto key = local_order(cluster, channel, channels);
  key.push_back(channel % 2);
  return key;
}

TreeShape node_tree(const ClusterSpec& cluster, int channel) {
  const int dpn = cluster.devices_per_node, nodes = cluster.nodes, world = cluster.world_size();
  auto node_at = [&](int q) { return channel % 2 == 1 ? nodes - 1 - q : q; };
  TreeShape t;
  t.parent.assign(static_cast<std::size_t>(world), -1);
  t.children.assign(static_cast<std::size_t>(world), {});
  for (int q = 1; q < nodes; ++q)
    for (int l = 0; l < dpn; ++l) {
      const int r = node_at(q) * dpn + l, p = node_at((q - 1) / 2) * dpn + l;
      t.parent[static_cast<std::size_t>(r)] = p;
      t.children[static_cast<std::size_t>(p)].push_back(r);
    }
  t.root = node_at(0) * dpn;
  for (int q = 0; q < nodes; ++q)
    for (int l = 0; l < dpn; ++l) t.order.push_back(node_at(q) * dpn + l);
  return t;
}

BinomialPeers binomial_peers(int world, int root, int rank) {
  BinomialPeers p;
  int dim = 0;
  while ((1 << dim) < world) ++dim;
  const int v = ((rank - root) % world + world) % world;
  int mask = (1 << dim) - 1;
  for (int i = 0; i < dim; ++i) {
    mask ^= (1 << i);
    if ((v & mask) != 0) continue;
    const int vpeer = v ^ (1 << i);
    if (vpeer >= world) continue;
    const int peer = (vpeer + root) % world;
    if ((v & (1 << i)) == 0) p.children.push_back(peer);
    else p.parent = peer;
  }
  return p;
}

BinomialTree binomial_tree(int world, int root) {
  BinomialTree t;
  for (int r = 0; r < world; ++r) {
    auto p = binomial_peers(world, root, r);
    t.parent.push_back(p.parent);
    t.children.push_back(std::move(p.children));
  }
  return t;
}

}  // namespace redsim
