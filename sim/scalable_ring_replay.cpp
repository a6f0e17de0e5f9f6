#include "sim/scalable_ring_replay.h"

#include <algorithm>
#include <cstddef>

namespace redsim::scalable {

namespace {

struct Replay {
  const ReplayRing& r;
  std::size_t P, count;
  std::vector<double> clock, next_put, put, get;  // put and get: [piece * P + rank]
  std::vector<std::size_t> arrived;

  explicit Replay(const ReplayRing& ring)
      : r(ring),
        P(ring.hops.size()),
        count(static_cast<std::size_t>(ring.loops) * static_cast<std::size_t>(ring.steps) * static_cast<std::size_t>(ring.slices)),
        clock(P, 0.0),
        next_put(P, 0.0),
        put(count * P, 0.0),
        get(count * P, 0.0),
        arrived(P, 0) {}

  std::size_t prev(std::size_t j) const { return (j + P - 1) % P; }
  std::size_t next(std::size_t j) const { return (j + 1) % P; }
  std::size_t step_of(std::size_t i) const { return i / static_cast<std::size_t>(r.slices) % static_cast<std::size_t>(r.steps); }

  // Rank j takes in every piece up to `last` in order: the receive ends, then pace_step holds
  // it for the hop's latency and the piece's time at the cap from the comm's start; a proxied
  // receiver then posts its receive `window` pieces ahead.
  void take_until(std::size_t j, std::size_t last) {
    const auto& h = r.hops[prev(j)];
    for (; arrived[j] <= last && arrived[j] < count; ++arrived[j]) {
      const std::size_t k = arrived[j];
      const double start = std::max(put[k * P + prev(j)], get[k * P + j]);
      clock[j] = std::max({clock[j], start + h.route_s + h.transfer_s,
                           start + std::max(h.hop_s, h.route_s) + std::max(h.transfer_s, h.cap_s)});
      if (step_of(k) < static_cast<std::size_t>(r.rs_steps)) clock[j] += r.reduce_s;
      if (h.proxied && k + static_cast<std::size_t>(r.window) < count) get[(k + static_cast<std::size_t>(r.window)) * P + j] = clock[j];
    }
  }

  // Piece i up to its put (and a synchronous receiver's get): what the ranks' loops do before
  // they wait on piece i's send, so that every rank's put is known before any send waits.
  void start_piece(std::size_t i) {
    for (std::size_t j = 0; j < P; ++j) {
      if (step_of(i) > 0 && i >= static_cast<std::size_t>(r.slices)) take_until(j, i - static_cast<std::size_t>(r.slices));
      const auto& out = r.hops[j];
      if (out.proxied) clock[j] = std::max(clock[j], next_put[j]);
      put[i * P + j] = clock[j];
      if (!r.hops[prev(j)].proxied) get[i * P + j] = clock[j];
      if (out.proxied) next_put[j] = clock[j] + out.cap_s;
    }
  }

  // The rest of piece i: a synchronous send waits for its receiver and is paced like a receipt.
  void finish_piece(std::size_t i) {
    for (std::size_t j = 0; j < P; ++j) {
      const auto& out = r.hops[j];
      double start = 0;
      if (!out.proxied) {
        start = std::max(put[i * P + j], get[i * P + next(j)]);
        clock[j] = std::max(clock[j], start + out.route_s + out.transfer_s);
      }
      if (!r.hops[prev(j)].proxied) take_until(j, i);
      if (!out.proxied)
        clock[j] = std::max(clock[j], start + std::max(out.hop_s, out.route_s) + std::max(out.transfer_s, out.cap_s));
    }
  }

  double run() {
    if (P == 0 || count == 0) return 0.0;
    for (std::size_t j = 0; j < P; ++j)
      if (r.hops[prev(j)].proxied)
        for (std::size_t k = 0; k < std::min(count, static_cast<std::size_t>(r.window)); ++k) get[k * P + j] = 0.0;
    for (std::size_t i = 0; i < count; ++i) {
      start_piece(i);
      finish_piece(i);
    }
    double end = 0;
    for (std::size_t j = 0; j < P; ++j) {
      take_until(j, count - 1);
      end = std::max(end, clock[j]);
      const auto& out = r.hops[j];
      if (!out.proxied) continue;
      for (std::size_t i = 0; i < count; ++i)
        end = std::max(end, std::max(put[i * P + j], get[i * P + next(j)]) + out.route_s + out.transfer_s);
    }
    return end;
  }
};

}  // namespace

std::int64_t replay_work(const ReplayRing& ring) {
  return std::int64_t{ring.loops} * ring.steps * ring.slices * static_cast<std::int64_t>(ring.hops.size());
}

double ring_replay_s(const ReplayRing& ring) { return Replay(ring).run(); }

}  // namespace redsim::scalable
