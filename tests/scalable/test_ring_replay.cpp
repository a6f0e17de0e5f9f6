// The exact engine's ring pass replayed without SimGrid (sim/scalable_ring_replay.h), on rings
// whose time follows from the pass's rules by hand.
#include <catch2/catch.hpp>

#include "sim/scalable_ring_replay.h"

using redsim::scalable::ReplayHop;
using redsim::scalable::ReplayRing;
using redsim::scalable::ring_replay_s;

namespace {

ReplayRing ring_of(int period, const ReplayHop& hop, int steps, int slices = 1, int loops = 1) {
  ReplayRing r;
  r.hops.assign(static_cast<std::size_t>(period), hop);
  r.steps = steps;
  r.slices = slices;
  r.loops = loops;
  return r;
}

}  // namespace

TEST_CASE("a synchronous ring's pieces follow one another a hop's latency apart", "[scalable][replay]") {
  // Every piece is a rendezvous of its two ends, both held max(hop, route) from its start, and a
  // rank puts its next piece only then: pieces x max(hop, route).
  ReplayHop h;
  h.hop_s = 5e-6;
  h.route_s = 1e-6;
  CHECK(ring_replay_s(ring_of(4, h, 3)) == Approx(3 * 5e-6));
  CHECK(ring_replay_s(ring_of(8, h, 14, 2, 3)) == Approx(14 * 2 * 3 * 5e-6));
  // A route slower than the hop's latency sets the pace instead.
  h.route_s = 7e-6;
  CHECK(ring_replay_s(ring_of(4, h, 3)) == Approx(3 * 7e-6));
}

TEST_CASE("a synchronous ring at its cap, and its reductions", "[scalable][replay]") {
  // No latency: each piece lasts the longer of its transfer and its time at the cap.
  ReplayHop h;
  h.transfer_s = 1e-6;
  h.cap_s = 2e-6;
  CHECK(ring_replay_s(ring_of(4, h, 6)) == Approx(6 * 2e-6));
  // A reduce-scatter piece is reduced after it is taken in, before the rank goes on.
  ReplayRing r = ring_of(4, h, 6);
  r.rs_steps = 3;
  r.reduce_s = 0.5e-6;
  CHECK(ring_replay_s(r) == Approx(6 * 2e-6 + 3 * 0.5e-6));
}

TEST_CASE("a proxied ring: each step forwards what arrived a hop's latency after it left", "[scalable][replay]") {
  // Every hop proxied, one slice a step: the sender does not wait, and a step's piece leaves when
  // the previous step's arrived, max(hop, route) after that one left; the last arrives a hop
  // later: steps x max(hop, route), whatever the receive window.
  ReplayHop h;
  h.proxied = true;
  h.hop_s = 3e-6;
  h.route_s = 10e-6;
  CHECK(ring_replay_s(ring_of(4, h, 7)) == Approx(7 * 10e-6));
  ReplayRing narrow = ring_of(4, h, 7);
  narrow.window = 1;
  CHECK(ring_replay_s(narrow) == Approx(7 * 10e-6));
  // A loop's first step forwards nothing: it leaves with the previous loop's last step, so two
  // loops of 7 steps take 13 hops' latency.
  CHECK(ring_replay_s(ring_of(4, h, 7, 1, 2)) == Approx(13 * 10e-6));
}

TEST_CASE("a proxied sender's pieces leave a cap time apart", "[scalable][replay]") {
  // Every hop proxied, no latency: a rank puts a piece a cap time after the one before, and a
  // forwarded piece cannot leave before it arrived, a cap time after it left: pieces x cap.
  ReplayHop h;
  h.proxied = true;
  h.cap_s = 4e-6;
  CHECK(ring_replay_s(ring_of(4, h, 5)) == Approx(5 * 4e-6));
}
