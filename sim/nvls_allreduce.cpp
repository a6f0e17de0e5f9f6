#include "sim/nvls_allreduce.h"

#include <simgrid/s4u.hpp>

#include "sim/network.h"
#include "sim/ring_pass.h"

namespace redsim {
namespace sg4 = simgrid::s4u;

void NvlsAllreduce::add_pairs(const PlanOp&, const ClusterSpec& cluster, RankPairs& pairs) const {
  for (int r = 0; r < cluster.world_size(); ++r) {
    const int sw = switch_endpoint(cluster, cluster.node_of(r));
    pairs.emplace(r, sw);
    pairs.emplace(sw, r);
  }
}

TransferTally NvlsAllreduce::run(const PlanOp& op, int rank, SimContext& ctx) const {
  const auto& c = ctx.cluster;
  if (c.devices_per_node < 2) return {};
  const int heads = c.devices_per_node, head = c.local_of(rank);
  auto* me = ctx.platform.hosts[static_cast<std::size_t>(rank)];
  const int sw_id = switch_endpoint(c, c.node_of(rank));
  auto* sw = ctx.platform.hosts[static_cast<std::size_t>(sw_id)];
  const auto& m = ctx.mechanics(op);
  return run_channels(rank, op.channels, [&](int ch) {
    TransferTally t;
    // Loop 0's scatter, each loop's reduce stage, the last loop's gather (collective_model.h).
    for (const auto& st : nvls_channel_steps(m, op.bytes, op.channels, ch, heads, head)) {
      const auto wire = static_cast<std::uint64_t>(ctx.wire_bytes(m, st.bytes));
      auto a = sg4::Comm::sendto_async(me, sw, wire);
      auto b = sg4::Comm::sendto_async(sw, me, wire);
      a->wait();
      b->wait();
      // The channel's throughput cap paces the step's slice (NVLS steps pay no hop latency of
      // their own: the base latency covers the switch's).
      ctx.pace_step(m, rank, sw_id, st.slice_bytes, a, false);
      if (!st.counted) continue;
      t.bytes_sent += st.bytes;
      t.bytes_received += st.bytes;
    }
    return t;
  });
}

}  // namespace redsim
