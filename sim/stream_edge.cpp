#include "sim/stream_edge.h"

#include <algorithm>
#include <cmath>

#include <simgrid/s4u.hpp>

#include "collectives/nccl_topology.h"
#include "sim/sim_context.h"

namespace redsim {
namespace sg4 = simgrid::s4u;
namespace {
char g_payload;
}  // namespace

int stream_group(SimContext& ctx, const Mechanics& m, int from, int to, std::int64_t piece_bytes) {
  return m.stream_group(nccl::hop_hw(ctx.cluster, from, to) == nccl::Hw::net, piece_bytes);
}

double stream_message_s(SimContext& ctx, const Mechanics& m, int from, int to, std::int64_t message_bytes, bool paced) {
  double s = paced && m.channel_cap_Bps > 0 ? static_cast<double>(message_bytes) / m.channel_cap_Bps : 0.0;
  if (const double bw = ctx.route_bandwidth_Bps(from, to); bw > 0)
    s = std::max(s, static_cast<double>(ctx.wire_bytes(m, message_bytes)) / bw);
  return s;
}

int stream_depth(SimContext& ctx, const Mechanics& m, int from, int to, std::int64_t message_bytes, StreamPace pace) {
  if (m.stream_window_bytes <= 0 || message_bytes <= 0) return 1;
  const auto window = static_cast<int>(std::max<std::int64_t>(1, m.stream_window_bytes / message_bytes));
  // A tree's start spaces its messages at the cap itself, so a queue as deep as a rank further on
  // needs at the links' pace does not crowd its link.
  const double message_s = stream_message_s(ctx, m, from, to, message_bytes, pace == StreamPace::chain);
  if (message_s <= 0) return window;
  // One message in transfer plus those the route's latency (and the hop's) hides, and one spare.
  const double lat_s = std::max(ctx.route_latency(from, to), m.hop_latency(nccl::hop_hw(ctx.cluster, from, to)));
  const auto cover = static_cast<int>(std::ceil(lat_s / message_s)) + 2;
  return std::clamp(cover, 1, window);
}

StreamSend::StreamSend(SimContext& ctx, const Mechanics& m, sg4::Mailbox* box, int from, int to, std::int64_t piece_bytes,
                       int pieces, StreamPace pace)
    : ctx_(ctx), m_(m), box_(box), group_(stream_group(ctx, m, from, to, piece_bytes)),
      depth_(stream_depth(ctx, m, from, to, piece_bytes * group_, pace)), pieces_(pieces),
      message_s_(stream_message_s(ctx, m, from, to, piece_bytes * group_, pace != StreamPace::tree_on)),
      message_bytes_(piece_bytes * group_) {}

void StreamSend::put(std::int64_t payload) {
  held_bytes_ += payload;
  ++put_;
  if (++held_ < group_ && put_ < pieces_) return;
  send(held_bytes_);
  held_ = 0;
  held_bytes_ = 0;
}

void StreamSend::send(std::int64_t payload) {
  if (static_cast<int>(inflight_.size()) >= depth_) {
    inflight_.front()->wait();
    inflight_.pop_front();
  }
  if (last_send_s_ >= 0 && message_s_ > 0) {
    const double until = last_send_s_ + message_s_ * static_cast<double>(payload) / static_cast<double>(message_bytes_);
    if (until > sg4::Engine::get_clock()) sg4::this_actor::sleep_until(until);
  }
  last_send_s_ = sg4::Engine::get_clock();
  inflight_.push_back(box_->put_async(&g_payload, static_cast<std::uint64_t>(ctx_.wire_bytes(m_, payload))));
}

void StreamSend::finish() {
  for (auto& c : inflight_) c->wait();
  inflight_.clear();
}

StreamRecv::StreamRecv(SimContext& ctx, const Mechanics& m, sg4::Mailbox* box, int from, int to, std::int64_t piece_bytes,
                       int pieces, StreamPace pace)
    : ctx_(ctx), m_(m), box_(box), from_(from), to_(to), pieces_(pieces), group_(stream_group(ctx, m, from, to, piece_bytes)),
      messages_((pieces + group_ - 1) / group_), paced_(pace == StreamPace::chain) {
  const int depth = stream_depth(ctx, m, from, to, piece_bytes * group_, pace);
  for (int k = 0; k < std::max(1, depth); ++k) post();
}

void StreamRecv::post() {
  if (posted_ >= messages_) return;
  pending_.push_back(box_->get_async(&got_));
  ++posted_;
}

void StreamRecv::take(std::int64_t payload, double ready_s) {
  if (left_in_message_ == 0) {
    auto comm = pending_.front();
    pending_.pop_front();
    comm->wait();
    left_in_message_ = std::min(group_, pieces_ - taken_);
    ctx_.pace_step(m_, from_, to_, 0, comm, true);  // the hop's latency
    post();
  }
  if (paced_ && taken_ > 0 && m_.channel_cap_Bps > 0) {
    const double until = ready_s + static_cast<double>(payload) / m_.channel_cap_Bps;
    if (until > sg4::Engine::get_clock()) sg4::this_actor::sleep_until(until);
  }
  --left_in_message_;
  ++taken_;
}

}  // namespace redsim
