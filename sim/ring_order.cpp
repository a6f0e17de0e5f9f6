#include "sim/ring_order.h"

namespace redsim {

std::vector<int> ring_order(const ClusterSpec& cluster, int channel, int channels) {
  const int dpn = cluster.devices_per_node;
  const int shift = channels > 0 ? (channel * dpn / channels) % dpn : 0;
  std::vector<int> order;
  order.reserve(static_cast<std::size_t>(cluster.world_size()));
  for (int n = 0; n < cluster.nodes; ++n)
    for (int i = 0; i < dpn; ++i) order.push_back(n * dpn + (i + shift) % dpn);
  return order;
}

}  // namespace redsim
