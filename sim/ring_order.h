// The rank order of each channel's ring. Ranks go node by node; inside a node the devices are
// rotated per channel (as NCCL builds rings that enter and leave a node through different
// NICs), so C channels spread their inter-node traffic over up to C NICs.
#pragma once
#include <vector>

#include "core/cluster.h"

namespace redsim {

std::vector<int> ring_order(const ClusterSpec& cluster, int channel, int channels);

}  // namespace redsim
