// State shared by the actors of one simulation: the platform, mailboxes and ring orders.
#pragma once
#include <cstdint>
#include <map>
#include <tuple>
#include <utility>
#include <unordered_map>
#include <vector>

#include "core/cluster.h"
#include "core/plan.h"
#include "sim/platform.h"

namespace simgrid::s4u {
class Mailbox;
}

namespace redsim {

struct SimContext {
  SimContext(const Plan& p, const ClusterSpec& c, SimPlatform plat);

  const Plan& plan;
  const ClusterSpec& cluster;
  SimPlatform platform;

  // The mailbox where `rank` receives on (stream, channel): a ring step is a put to the next
  // rank's mailbox and a get from one's own.
  simgrid::s4u::Mailbox* mailbox(std::uint32_t stream, int channel, int phase, int rank);
  // Time for reducing `bytes` of incoming data into the local buffer (device reduce_GBps).
  void charge_reduction(std::int64_t bytes) const;
  // Ring order of a channel and each rank's position in it (cached).
  const std::vector<int>& ring(int channel, int channels);
  const std::vector<int>& ring_position(int channel, int channels);

 private:
  double reduce_s_per_byte_ = 0;
  std::unordered_map<std::uint64_t, simgrid::s4u::Mailbox*> mailboxes_;
  std::map<std::pair<int, int>, std::pair<std::vector<int>, std::vector<int>>> rings_;
  const std::pair<std::vector<int>, std::vector<int>>& ring_entry(int channel, int channels);
};

// Splits `total` into `parts` near-equal integer pieces (the first total % parts get one more),
// as collectives split a buffer into channels and chunks.
std::int64_t split_piece(std::int64_t total, int parts, int index);

}  // namespace redsim
