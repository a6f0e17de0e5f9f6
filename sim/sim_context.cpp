#include "sim/sim_context.h"

#include <algorithm>
#include <cmath>
#include <string>

#include <simgrid/s4u.hpp>

#include "collectives/nccl_topology.h"
#include "sim/network.h"
#include "collectives/shapes.h"

namespace redsim {

SimContext::SimContext(const Plan& p, const ClusterSpec& c, SimPlatform plat)
    : plan(p), cluster(c), platform(std::move(plat)) {}

void SimContext::charge_reduction(const Mechanics& m, std::int64_t bytes) const {
  // A sleep, not an execution: reductions run beside compute (on spare SMs or a copy engine)
  // and must not steal the host's compute share in the model.
  if (m.reduce_s_per_byte > 0 && bytes > 0) simgrid::s4u::this_actor::sleep_for(static_cast<double>(bytes) * m.reduce_s_per_byte);
}

simgrid::s4u::Mailbox* SimContext::mailbox(std::uint32_t stream, int channel, int phase, int rank) {
  // 16 bits stream, 12 bits channel, 4 bits phase, 32 bits rank.
  const std::uint64_t key = (static_cast<std::uint64_t>(stream) << 48) | (static_cast<std::uint64_t>(channel) << 36) |
                            (static_cast<std::uint64_t>(phase) << 32) | static_cast<std::uint32_t>(rank);
  auto it = mailboxes_.find(key);
  if (it != mailboxes_.end()) return it->second;
  auto* mb = simgrid::s4u::Mailbox::by_name("s" + std::to_string(stream) + "c" + std::to_string(channel) + "p" +
                                            std::to_string(phase) + "r" + std::to_string(rank));
  mailboxes_.emplace(key, mb);
  return mb;
}

const std::pair<std::vector<int>, std::vector<int>>& SimContext::ring_entry(int channel, int channels) {
  auto key = std::make_pair(channel, channels);
  auto it = rings_.find(key);
  if (it == rings_.end()) {
    auto order = ring_order(cluster, channel, channels);
    std::vector<int> pos(order.size());
    for (std::size_t i = 0; i < order.size(); ++i) pos[static_cast<std::size_t>(order[i])] = static_cast<int>(i);
    it = rings_.emplace(key, std::make_pair(std::move(order), std::move(pos))).first;
  }
  return it->second;
}

const std::vector<int>& SimContext::ring(int channel, int channels) { return ring_entry(channel, channels).first; }
const std::vector<int>& SimContext::ring_position(int channel, int channels) {
  return ring_entry(channel, channels).second;
}

const TreeShape& SimContext::tree(int channel, int channels) {
  auto key = std::make_pair(channel, channels);
  auto it = trees_.find(key);
  if (it == trees_.end()) it = trees_.emplace(key, tree_shape(cluster, channel, channels)).first;
  return it->second;
}

const TreeShape& SimContext::node_tree(int channel) {
  auto it = node_trees_.find(channel % 2);
  if (it == node_trees_.end()) it = node_trees_.emplace(channel % 2, redsim::node_tree(cluster, channel % 2)).first;
  return it->second;
}

const Mechanics& SimContext::mechanics(const PlanOp& op) {
  auto it = mechanics_.find(op.id);
  if (it == mechanics_.end()) it = mechanics_.emplace(op.id, mechanics_of(op, cluster, plan.world_size)).first;
  return it->second;
}

void CapPacer::before_put() const {
  if (next_s_ > simgrid::s4u::Engine::get_clock()) simgrid::s4u::this_actor::sleep_until(next_s_);
}

void CapPacer::put(std::int64_t payload) {
  if (m_.channel_cap_Bps > 0) next_s_ = simgrid::s4u::Engine::get_clock() + m_.cap_time_s(payload);
}

void SimContext::pace_step(const Mechanics& m, int from, int to, std::int64_t payload, const simgrid::s4u::CommPtr& comm,
                           bool with_hop) {
  const auto hw = nccl::hop_hw(cluster, from, to);
  const double hop = with_hop ? m.hop_latency(hw) : 0.0;
  const double cap_Bps = m.hop_cap_Bps(hw);
  if (hop <= 0 && cap_Bps <= 0) return;  // ideal collectives: the network alone decides
  const double route = route_latency(from, to);
  const double started = comm->get_start_time();
  double transfer = std::max(0.0, comm->get_finish_time() - started - route);
  if (cap_Bps > 0) transfer = std::max(transfer, m.hop_cap_time_s(hw, payload));
  const double until = started + std::max(hop, route) + transfer;
  if (until > simgrid::s4u::Engine::get_clock()) simgrid::s4u::this_actor::sleep_until(until);
}

const std::pair<double, double>& SimContext::route_info(int from, int to) {
  auto key = std::make_pair(from, to);
  auto it = routes_.find(key);
  if (it == routes_.end()) {
    const auto route = route_between(cluster, from, to, unfolded(cluster));
    double narrowest = 0;
    for (const auto& link : route) {
      const double bw = link_bandwidth_Bps(cluster, link);
      if (narrowest <= 0 || bw < narrowest) narrowest = bw;
    }
    it = routes_.emplace(key, std::make_pair(route_latency_s(cluster, route), narrowest)).first;
  }
  return it->second;
}

std::int64_t SimContext::wire_bytes(const Mechanics& m, std::int64_t payload) const { return redsim::wire_bytes(m, payload); }

}  // namespace redsim
