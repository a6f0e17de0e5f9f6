// How NCCL's tuning model changed after 2.18.5, release by release, restated as data so that a
// cluster file's nccl_version ranks algorithms and protocols as that release does. Each field
// names the tag of NVIDIA/nccl (src/graph/tuning.cc) it was read from; the rules that use them
// are in nccl_tuning.cpp. Releases before 2.18.5 are ranked as 2.18.5.
#pragma once
#include <cstdint>

#include "collectives/nccl_constants.h"

namespace redsim::nccl {

struct Release {
  int first_version = 0;  // ClusterSpec::nccl_version encoding (2.19.3 = 21903)
  const char* tag = "";
  AlgoProto base_lat_us{};
  std::array<AlgoProto, 3> hw_lat_us{};
  GenNodes ll_max_GBps{};
  // 2.21.5: a ring's LL bus bandwidth is half the graph's (before, a quarter; a third for a
  // one-node allgather, reduce-scatter or broadcast).
  bool ring_ll_half = false;
  // 2.19.3: NVLS reads min(inside, across) per channel and NVLSTree min(inside, across, halved
  // from 3 nodes); both convert bus to algorithm bandwidth at 5/6 (before: NVLSTree at
  // 0.7 x nodes / (2 x (nodes - 1)), reading the speed inside on up to 2 nodes). Their latency is
  // the NVLink hop's plus, for NVLSTree, 2 x log2(nodes) network hops (before: 2 x (nodes - 1)).
  bool nvls_min_bw = false;
  // 2.23.4: no 0.7 on a ring's LL128 with one GPU a node; one GPU a node takes the tree's network
  // latency for every algorithm; a multi-node ring allreduce has 2 x (nodes - 1) network steps
  // (before: 2 x nodes).
  bool v2_23_rules = false;
  // 2.21.5 (enqueue.cc, transport/nvls.cc): NVLSTree's chunk starts at NCCL_NVLS_CHUNKSIZE, 128 KiB
  // (64 KiB from 4 nodes), where it had started at a Simple step of 512 KiB (0 here).
  std::int64_t nvls_chunk_bytes = 0;
};

// The release whose model applies to nccl_version (the newest not after it; 2.18.5 before that).
const Release& release_of(int nccl_version);

}  // namespace redsim::nccl
