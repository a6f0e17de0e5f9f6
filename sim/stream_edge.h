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

// Where the channel's cap paces a stream (see StreamSend): every rank of a chain; only the start
// of a tree (its leaves, on the way up), the ranks further on passing pieces on as they come.
enum class StreamPace { chain, tree_start, tree_on };

// Pieces of `piece_bytes` one message carries on the edge: 1, or a step's worth on a network hop.
int stream_group(SimContext& ctx, const Mechanics& m, int from, int to, std::int64_t piece_bytes);
// Time a message of `message_bytes` takes on the edge alone: its wire bytes at the route's
// narrowest link or, where the stream starts (`paced`), its payload at the channel's cap if slower.
double stream_message_s(SimContext& ctx, const Mechanics& m, int from, int to, std::int64_t message_bytes, bool paced);
// Messages an edge keeps in flight: enough to keep it busy over the route's latency (or the
// hop's) at the pace its sender keeps (a chain's cap; a tree's links), and no more than the
// protocol's window holds. A deeper queue would not run faster, and in SimGrid messages in
// flight share the link at once rather than in order, so the first ones of a deeper queue would
// arrive later than a real network delivers them.
int stream_depth(SimContext& ctx, const Mechanics& m, int from, int to, std::int64_t message_bytes, StreamPace pace);

class StreamSend {
 public:
  // `pieces` pieces of about `piece_bytes` each will be put.
  StreamSend(SimContext& ctx, const Mechanics& m, simgrid::s4u::Mailbox* box, int from, int to, std::int64_t piece_bytes,
             int pieces, StreamPace pace);
  // Hands over the next piece; a message leaves once it holds its group of pieces (or the last),
  // after waiting while stream_depth messages are in flight and until the previous message has
  // had its time on the edge (stream_message_s), so that a head injects no faster than the edge
  // carries and its messages cross the link one after another, as a real link's do.
  //
  // A tree charges its cap once, where the stream starts: the cap is a channel's share of NCCL's
  // modelled tree bandwidth (0.1-3 GB/s, NCCL's tree correction for size included), the pace of
  // the whole pipeline, not a rate a GPU passes on pieces it already holds at. A rank further on
  // passes pieces on as they come, so a network step that arrived whole goes on at the links'
  // rate. Re-pacing it at the cap charged a step's cap time again after every network hop: a
  // 4-node H100 tree/LL at 128 KiB on 32 channels took 184 us where NCCL's own model says 65 us
  // and the published run 55 us (bench/fidelity/README.md). Chains keep the cap at every rank:
  // paced at their head only, this engine passes a step that arrived whole on hop by hop as a
  // block, which the scalable fidelity's chain wave does not model (collectives/README.md).
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
             int pieces, StreamPace pace);
  // Takes the next piece. When it opens a message, waits for the message and for the hop's
  // latency (SimContext::pace_step). On a chain a piece after the first also counts as
  // arrived no earlier than `ready_s` (when this rank was free to take it) plus its payload at the
  // channel's cap; on a tree the pieces of a message are there together, the cap being the
  // pace the stream's start gave them (StreamSend). Either way the cap is not charged on a
  // message's arrival: charging it on each hop's first piece and again on each network step's
  // arrival made multi-node trees and chains 1.6-14x slower than NCCL's own model.
  void take(std::int64_t payload, double ready_s);

 private:
  void post();
  SimContext& ctx_;
  const Mechanics& m_;
  simgrid::s4u::Mailbox* box_;
  int from_, to_, pieces_, group_, messages_, posted_ = 0, taken_ = 0, left_in_message_ = 0;
  bool paced_;
  void* got_ = nullptr;
  std::deque<simgrid::s4u::CommPtr> pending_;
};

}  // namespace redsim
