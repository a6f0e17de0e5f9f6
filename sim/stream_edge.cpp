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

double stream_piece_s(SimContext& ctx, const Mechanics& m, int from, int to, std::int64_t piece_bytes) {
  double s = m.channel_cap_Bps > 0 ? static_cast<double>(piece_bytes) / m.channel_cap_Bps : 0.0;
  if (const double bw = ctx.route_bandwidth_Bps(from, to); bw > 0)
    s = std::max(s, static_cast<double>(ctx.wire_bytes(m, piece_bytes)) / bw);
  return s;
}

int stream_depth(SimContext& ctx, const Mechanics& m, int from, int to, std::int64_t piece_bytes) {
  if (m.stream_window_bytes <= 0 || piece_bytes <= 0) return 1;
  const auto window = static_cast<int>(std::max<std::int64_t>(1, m.stream_window_bytes / piece_bytes));
  const double piece_s = stream_piece_s(ctx, m, from, to, piece_bytes);
  if (piece_s <= 0) return window;
  // One piece in transfer plus those the route's latency (and the hop's) hides, and one spare.
  const double lat_s = std::max(ctx.route_latency(from, to), m.hop_latency(nccl::hop_hw(ctx.cluster, from, to)));
  const auto cover = static_cast<int>(std::ceil(lat_s / piece_s)) + 2;
  return std::clamp(cover, 1, window);
}

StreamSend::StreamSend(SimContext& ctx, const Mechanics& m, sg4::Mailbox* box, int from, int to, std::int64_t piece_bytes)
    : ctx_(ctx), m_(m), box_(box), depth_(stream_depth(ctx, m, from, to, piece_bytes)),
      piece_s_(stream_piece_s(ctx, m, from, to, piece_bytes)), piece_bytes_(piece_bytes) {}

void StreamSend::put(std::int64_t payload) {
  if (static_cast<int>(inflight_.size()) >= depth_) {
    inflight_.front()->wait();
    inflight_.pop_front();
  }
  if (last_put_s_ >= 0 && piece_s_ > 0) {
    const double until = last_put_s_ + piece_s_ * static_cast<double>(payload) / static_cast<double>(piece_bytes_);
    if (until > sg4::Engine::get_clock()) sg4::this_actor::sleep_until(until);
  }
  last_put_s_ = sg4::Engine::get_clock();
  inflight_.push_back(box_->put_async(&g_payload, static_cast<std::uint64_t>(ctx_.wire_bytes(m_, payload))));
}

void StreamSend::finish() {
  for (auto& c : inflight_) c->wait();
  inflight_.clear();
}

StreamRecv::StreamRecv(SimContext& ctx, const Mechanics& m, sg4::Mailbox* box, int from, int to, int pieces, int depth)
    : ctx_(ctx), m_(m), box_(box), from_(from), to_(to), pieces_(pieces) {
  for (int k = 0; k < std::max(1, depth); ++k) post();
}

void StreamRecv::post() {
  if (posted_ >= pieces_) return;
  pending_.push_back(box_->get_async(&got_));
  ++posted_;
}

void StreamRecv::take(std::int64_t payload, double ready_s) {
  auto comm = pending_.front();
  pending_.pop_front();
  comm->wait();
  ctx_.pace_step(m_, from_, to_, payload, comm, true);
  if (taken_ > 0 && m_.channel_cap_Bps > 0) {
    const double until = ready_s + static_cast<double>(payload) / m_.channel_cap_Bps;
    if (until > sg4::Engine::get_clock()) sg4::this_actor::sleep_until(until);
  }
  ++taken_;
  post();
}

}  // namespace redsim
