// One edge of a chain or tree that streams (LL and LL128, Mechanics::stream_window_bytes): the
// sender keeps several pieces in flight, as NCCL's step FIFO lets it, so later pieces follow the
// first at the channel's pace rather than one route latency apart.
#pragma once
#include <cstdint>
#include <deque>

#include <simgrid/forward.h>

#include "collectives/collective_model.h"

namespace redsim {

struct SimContext;

// Time a piece of `piece_bytes` takes on the edge alone: its payload at the channel's cap or its
// wire bytes at the route's narrowest link, whichever is slower.
double stream_piece_s(SimContext& ctx, const Mechanics& m, int from, int to, std::int64_t piece_bytes);
// Pieces an edge keeps in flight: enough to keep it busy over the route's latency (or the hop's),
// and no more than the protocol's window holds. A deeper queue would not run faster, and in
// SimGrid pieces in flight share the link at once rather than in order, so the first ones of a
// deeper queue would arrive later than a real network delivers them.
int stream_depth(SimContext& ctx, const Mechanics& m, int from, int to, std::int64_t piece_bytes);

class StreamSend {
 public:
  StreamSend(SimContext& ctx, const Mechanics& m, simgrid::s4u::Mailbox* box, int from, int to, std::int64_t piece_bytes);
  // Sends the next piece: waits while stream_depth pieces are in flight, and until the previous
  // piece has had its time on the edge (stream_piece_s), so that a head injects no faster than
  // the edge carries and its pieces cross the link one after another, as a real link's do.
  void put(std::int64_t payload);
  void finish();  // waits for every piece in flight

 private:
  SimContext& ctx_;
  const Mechanics& m_;
  simgrid::s4u::Mailbox* box_;
  int depth_;
  double piece_s_;
  std::int64_t piece_bytes_;
  double last_put_s_ = -1;
  std::deque<simgrid::s4u::CommPtr> inflight_;
};

class StreamRecv {
 public:
  // Posts the first `depth` receives of `pieces` from `from`.
  StreamRecv(SimContext& ctx, const Mechanics& m, simgrid::s4u::Mailbox* box, int from, int to, int pieces, int depth);
  // Waits for the next piece and paces it as a step (SimContext::pace_step: every piece crosses
  // the hop with its latency, pipelined behind the others); a later piece also counts as arrived
  // no earlier than `ready_s` (when this rank was free to take it) plus its payload at the
  // channel's cap.
  void take(std::int64_t payload, double ready_s);

 private:
  void post();
  SimContext& ctx_;
  const Mechanics& m_;
  simgrid::s4u::Mailbox* box_;
  int from_, to_, pieces_, posted_ = 0, taken_ = 0;
  void* got_ = nullptr;
  std::deque<simgrid::s4u::CommPtr> pending_;
};

}  // namespace redsim
