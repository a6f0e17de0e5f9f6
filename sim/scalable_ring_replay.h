// The exact fidelity's ring pass (sim/ring_pass.cpp) replayed without SimGrid, for the scalable
// fidelity's Simple rings across nodes: each rank's sequence of puts, waits and paced receipts
// over a folded period of ranks, every piece of every loop. With synchronous and proxied hops
// mixed, a closed form over the rounds (the cycle's average latency) misses how the network
// hop's latency and the channel's cap time overlap through the two slices Simple keeps in
// flight: on EFA's 75 us hop it put aws-p4d-x2's rings 30% fast at 1 KiB and 7% slow at
// 64 MiB. Transfers take a piece at the link's own rate (the flows that run beside this share
// the links among channels); the ranks at positions j and j + period behave alike.
#pragma once
#include <cstdint>
#include <vector>

namespace redsim::scalable {

struct ReplayHop {  // hop j -> j + 1 of the period, as sim/ring_pass.cpp and pace_step see it
  double hop_s = 0;       // the protocol's synchronisation latency for the hop's class
  double route_s = 0;     // the route's latency
  bool proxied = false;   // through the network's proxy: the sender does not wait for it
  double transfer_s = 0;  // a piece at the link's rate
  double cap_s = 0;       // a piece at the channel's cap (0: none)
};

struct ReplayRing {
  std::vector<ReplayHop> hops;
  int loops = 1, slices = 1;
  int rs_steps = 0, steps = 0;  // a loop's reduce-scatter steps and all its steps
  double reduce_s = 0;          // reducing a received reduce-scatter piece
  int window = 8;               // pieces a proxied receiver has posted ahead
};

// Pieces x ranks of the period a replay walks at most (two doubles each: 32 MiB): a 16,384-rank
// allreduce's 65,532 pieces over an 8-rank period take 0.5 M.
inline constexpr std::int64_t kMaxReplayWork = std::int64_t{1} << 21;
// The pieces x ranks a replay of this ring walks.
std::int64_t replay_work(const ReplayRing& ring);
// How long the ring pass lasts, from every rank's start to its last receipt and send.
double ring_replay_s(const ReplayRing& ring);

}  // namespace redsim::scalable
