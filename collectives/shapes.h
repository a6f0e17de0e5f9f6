// The shape of each channel's algorithm, shared by both fidelities (and by realexec where it
// runs the same algorithm): the ring's rank order and NCCL's tree.
#pragma once
#include <vector>

#include "core/cluster.h"

namespace redsim {

// Channel c's ring: node by node; inside a node the devices in the order of one of NCCL's rings
// (an nvlink fabric's rings follow its NVLinks), rotated per channel so that C channels enter
// and leave a node through different devices and so different NICs, as NCCL builds them.
std::vector<int> ring_order(const ClusterSpec& cluster, int channel, int channels);

// NCCL's tree for channel c: inside each node a chain through the devices in the channel's ring
// order, headed by the first; across nodes a binary tree of the heads, mirrored on odd channels
// so that a node that is a leaf in one tree is inside the other (NCCL's double binary tree).
// With one device per node it is a binary tree over the ranks.
struct TreeShape {
  int root = 0;
  std::vector<int> parent;                 // by rank; -1 for the root
  std::vector<std::vector<int>> children;  // by rank, in order
  std::vector<int> order;                  // ranks in breadth-first order from the root
};
TreeShape tree_shape(const ClusterSpec& cluster, int channel, int channels);
// What tree_shape depends on for channel c (the local order and the mirroring): channels with
// equal keys get the same tree, so a model builds it once.
std::vector<int> tree_shape_key(const ClusterSpec& cluster, int channel, int channels);

// NVLSTree's tree across nodes for channel c (the same binary tree of nodes, mirrored on odd
// channels): each device is linked to the device with its local index in its parent and child
// nodes (NVLS joins the devices of a node).
TreeShape node_tree(const ClusterSpec& cluster, int channel);

// Gloo's broadcast tree (gloo/broadcast.cc) on N ranks for `root`, over virtual ranks
// (rank - root) mod N: in round i a rank whose low i bits are clear sends to the rank i bits
// up. Each rank's parent (-1 for the root) and its children in send order.
struct BinomialTree {
  std::vector<int> parent;
  std::vector<std::vector<int>> children;
};
BinomialTree binomial_tree(int world, int root);
// One rank's part of that tree, in O(log N): what a rank needs in a collective's hot path.
struct BinomialPeers {
  int parent = -1;
  std::vector<int> children;
};
BinomialPeers binomial_peers(int world, int root, int rank);

}  // namespace redsim
