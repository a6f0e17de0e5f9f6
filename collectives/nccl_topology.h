// What NCCL's topology search would build on a cluster: per algorithm graph, the number of search
// channels and the bandwidth each carries inside a node and across nodes, the execution channel
// counts, and which algorithms and protocols are enabled. A restatement of the rules of NCCL's
// src/graph/search.cc and connect.cc (collectives/README.md), computed from the cluster file, not
// by running NCCL's search.
#pragma once
#include <string>
#include <vector>

#include "collectives/nccl_constants.h"
#include "core/cluster.h"

namespace redsim::nccl {

struct Graph {
  int channels = 0;          // search channels (0: the graph does not exist)
  double bw_intra_GBps = 0;  // per channel
  double bw_inter_GBps = 0;  // per channel
  Hw intra_hw = Hw::nvlink;  // NVLink paths inside a node, or PCI (PCIe, host memory, socket link)
  bool tree_pattern = false;  // a plain TREE rather than BALANCED_TREE graph (x0.85 in the model)
};

struct Topology {
  int generation = 1;  // 0 Volta (cc < 8), 1 Ampere (8.x), 2 Hopper (9.x), 3 Blackwell (10.0 and newer)
  int nodes = 1;
  int ranks = 1;
  Graph ring, tree, nvls_graph;
  int comm_channels = 1;  // execution channels for ring and tree
  int nvls_channels = 0;  // execution channels for NVLS and NVLSTree
  bool ll128 = false;     // LL128 enabled by default
  bool nvls = false;      // NVLS (one node) and NVLSTree (several nodes) available
  std::vector<std::vector<int>> rings;  // nvlink fabric: the device order of each search ring
};

// The NCCL view of a cluster; `channels` > 0 pins the execution channel count, as
// NCCL_MIN_NCHANNELS = NCCL_MAX_NCHANNELS would.
Topology topology_of(const ClusterSpec& cluster, int channels = 0);

// Whether a compute capability is `want` (8.0, not 8.6), as NCCL's exact checks read it.
bool is_cc(double cc, double want);

// The hardware class of the hop src -> dst (NVLink, PCI or network).
Hw hop_hw(const ClusterSpec& cluster, int src, int dst);

}  // namespace redsim::nccl
