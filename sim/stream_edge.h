// One edge of a chain or tree that streams (LL and LL128, Mechanics::stream_window_bytes): the
// sender keeps several pieces in flight, as NCCL's step FIFO lets it, so later pieces follow the
// first at the channel's pace rather than one route latency apart. A network hop carries whole
// steps (Mechanics::stream_net_step_bytes): the pieces of a step go as one message.
#pragma once
#include <cstdint>
#include <deque>

#include <simgrid/forward.h>

#include "collectives/collective_model.h"

namespace redsim {

struct SimContext;

// Pieces of `piece_bytes` one message carries on the edge: 1, or a step's worth on a network hop.
int stream_group(SimContext& ctx, const Mechanics& m, int from, int to, std::int64_t piece_bytes);
// Time a message of `message_bytes` takes on the edge alone: its payload at the channel's cap or
// its wire bytes at the route's narrowest link, whichever is slower.
double stream_message_s(SimContext& ctx, const Mechanics& m, int from, int to, std::int64_t message_bytes);
// Messages an edge keeps in flight: enough to keep it busy over the route's latency (or the
// hop's), and no more than the protocol's window holds. A deeper queue would not run faster, and
// in SimGrid messages in flight share the link at once rather than in order, so the first ones
// of a deeper queue would arrive later than a real network delivers them.
int stream_depth(SimContext& ctx, const Mechanics& m, int from, int to, std::int64_t message_bytes);

class StreamSend {
 public:
  // `pieces` pieces of about `piece_bytes` each will be put.
  StreamSend(SimContext& ctx, const Mechanics& m, simgrid::s4u::Mailbox* box, int from, int to, std::int64_t piece_bytes,
             int pieces);
  // Hands over the next piece; a message leaves once it holds its group of pieces (or the last),
  // after waiting while stream_depth messages are in flight and until the previous message has
  // had its time on the edge (stream_message_s), so that a head injects no faster than the edge
  // carries and its messages cross the link one after another, as a real link's do.
  void put(std::int64_t payload);
  void finish();  // waits for every message in flight

 private:
  void send(std::int64_t payload);
  SimContext& ctx_;
  const Mechanics& m_;
  simgrid::s4u::Mailbox* box_;
  int group_, depth_, pieces_, put_ = 0, held_ = 0;
  std::int64_t held_bytes_ = 0;
  double message_s_;
  std::int64_t message_bytes_;
  double last_send_s_ = -1;
  std::deque<simgrid::s4u::CommPtr> inflight_;
};

class StreamRecv {
 public:
  // Posts the first receives of `pieces` pieces from `from`, grouped as the sender groups them.
  StreamRecv(SimContext& ctx, const Mechanics& m, simgrid::s4u::Mailbox* box, int from, int to, std::int64_t piece_bytes,
             int pieces);
  // Takes the next piece. When it opens a message, waits for the message and for the hop's
  // latency (SimContext::pace_step); a piece after the first also counts as arrived no earlier
  // than `ready_s` (when this rank was free to take it) plus its payload at the channel's cap.
  // The cap is charged once, as the pieces' pace, not also on a message's arrival: it is a
  // channel's share of NCCL's modelled bandwidth (0.24-3 GB/s on trees), not a rate a piece
  // crosses a hop at, and charging it on each hop's first piece and again on each network
  // step's arrival made multi-node trees and chains 1.6-14x slower than NCCL's own model
  // (collectives/README.md).
  void take(std::int64_t payload, double ready_s);

 private:
  void post();
  SimContext& ctx_;
  const Mechanics& m_;
  simgrid::s4u::Mailbox* box_;
  int from_, to_, pieces_, group_, messages_, posted_ = 0, taken_ = 0, left_in_message_ = 0;
  void* got_ = nullptr;
  std::deque<simgrid::s4u::CommPtr> pending_;
};

}  // namespace redsim
