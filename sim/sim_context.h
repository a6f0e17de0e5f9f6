// State shared by the actors of one simulation: the platform, mailboxes and ring orders.
#pragma once
#include <cstdint>
#include <map>
#include <tuple>
#include <utility>
#include <unordered_map>
#include <vector>

#include "core/cluster.h"
#include "collectives/collective_model.h"
#include "collectives/shapes.h"
#include "core/pipeline.h"
#include "core/plan.h"
#include "sim/platform.h"

#include <simgrid/forward.h>

namespace redsim {

// A sender whose pieces leave no faster than the channel's cap while each crosses its hop at the
// links' rate: a Simple chain's or tree's chunks, so the cap is the pipeline's pace, paid once (as
// NCCL's model charges bytes / bandwidth once) rather than on every hop of every chunk; a ring's
// slices handed to the proxy of a network hop (ring_pass.cpp).
class CapPacer {
 public:
  explicit CapPacer(const Mechanics& m) : m_(m) {}
  // Holds the caller until the previous chunk's time at the cap has passed.
  void before_put() const;
  // A chunk of `payload` bytes leaves now.
  void put(std::int64_t payload);

 private:
  const Mechanics& m_;
  double next_s_ = 0;
};

struct SimContext {
  SimContext(const Plan& p, const ClusterSpec& c, SimPlatform plat);

  const Plan& plan;
  const ClusterSpec& cluster;
  SimPlatform platform;

  // The mailbox where `rank` receives on (stream, channel): a ring step is a put to the next
  // rank's mailbox and a get from one's own.
  simgrid::s4u::Mailbox* mailbox(std::uint32_t stream, int channel, int phase, int rank);
  // Time for reducing `bytes` of incoming data into the local buffer (device reduce_GBps).
  void charge_reduction(const Mechanics& m, std::int64_t bytes) const;
  // Ring order of a channel and each rank's position in it (cached).
  const std::vector<int>& ring(int channel, int channels);
  const std::vector<int>& ring_position(int channel, int channels);
  // Channel c's tree (collectives/shapes.h), cached.
  const TreeShape& tree(int channel, int channels);
  // NVLSTree's tree across nodes for channel c (collectives/shapes.h), cached.
  const TreeShape& node_tree(int channel);
  // How the op's protocol moves bytes (collectives/collective_model.h), cached per op.
  const Mechanics& mechanics(const PlanOp& op);
  // Holds the calling actor until a transfer of `payload` bytes from `from` to `to` (the
  // completed `comm`) has lasted as long as the protocol says: at least its hop's
  // synchronisation latency plus the payload at the channel's cap, from the comm's start. Both
  // the sender and the receiver call it on the same comm, so a receiver cannot forward data
  // before the step that brought it is over (a ring's proxied network hop: the receiver only,
  // sim/ring_pass.cpp). No-op for ideal collectives.
  // `hop` = false leaves out the hop's latency: a pipeline (chain, tree) streams its later chunks
  // behind the first, so only the first pays it (NCCL's FIFO keeps several steps in flight).
  void pace_step(const Mechanics& m, int from, int to, std::int64_t payload, const simgrid::s4u::CommPtr& comm,
                 bool hop = true);
  // Latency and narrowest link's bandwidth of the route from `from` to `to` (cached).
  double route_latency(int from, int to) { return route_info(from, to).first; }
  double route_bandwidth_Bps(int from, int to) { return route_info(from, to).second; }
  // Bytes on the wire for `payload` bytes of an op (LL doubles them, LL128 adds 1/15).
  std::int64_t wire_bytes(const Mechanics& m, std::int64_t payload) const;

 private:
  std::unordered_map<std::uint32_t, Mechanics> mechanics_;
  // Per (from, to): the route's latency and its narrowest link's bandwidth, one route lookup.
  std::map<std::pair<int, int>, std::pair<double, double>> routes_;
  const std::pair<double, double>& route_info(int from, int to);
  std::map<std::pair<int, int>, TreeShape> trees_;
  std::map<int, TreeShape> node_trees_;
  std::unordered_map<std::uint64_t, simgrid::s4u::Mailbox*> mailboxes_;
  std::map<std::pair<int, int>, std::pair<std::vector<int>, std::vector<int>>> rings_;
  const std::pair<std::vector<int>, std::vector<int>>& ring_entry(int channel, int channels);
};

}  // namespace redsim
