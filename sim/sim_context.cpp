#include "sim/sim_context.h"

#include <string>

#include <simgrid/s4u.hpp>

#include "sim/ring_order.h"

namespace redsim {

simgrid::s4u::Mailbox* SimContext::mailbox(std::uint32_t stream, int channel, int rank) {
  const std::uint64_t key = (static_cast<std::uint64_t>(stream) << 48) | (static_cast<std::uint64_t>(channel) << 32) |
                            static_cast<std::uint32_t>(rank);
  auto it = mailboxes_.find(key);
  if (it != mailboxes_.end()) return it->second;
  auto* mb = simgrid::s4u::Mailbox::by_name("s" + std::to_string(stream) + "c" + std::to_string(channel) + "r" +
                                            std::to_string(rank));
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

std::int64_t split_piece(std::int64_t total, int parts, int index) {
  return total / parts + (index < total % parts ? 1 : 0);
}

}  // namespace redsim
