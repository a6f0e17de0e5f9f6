// The scalable fidelity's rings across nodes under NCCL's protocols: what a round costs in latency
// when some hops go through the network's proxy (sim/ring_pass.cpp) and others are synchronous.
#include <algorithm>

#include "sim/scalable_model.h"
#include "sim/scalable_ring_replay.h"
#include "sim/scalable_topology.h"

namespace redsim::scalable {

void Model::proxied_rounds(RingFamily& f) const {
  // The exact engine's ring (sim/ring_pass.cpp): a rank behind a synchronous hop waits for its
  // neighbours' slice a round; a rank behind a proxied network hop waits for the slice
  // `slices` rounds back to arrive, the hop's latency later. Around the ring, a cycle of S
  // synchronous and P proxied hops spans S + slices x P rounds, so a round costs at least the
  // cycle's latency over that many, and never less than the slowest synchronous hop. The fill
  // (half the network hop beyond a round) is the measured middle of its bounds (sim/README.md).
  f.proxied_round_s = f.proxied_fill_s = f.replay_s = 0;
  f.all_proxied = false;
  f.hop_round_s.clear();
  f.hop_rounds.clear();
  if (!f.mech || f.mech->hop_latency(nccl::Hw::net) <= 0 || f.routes.empty()) return;
  const int slices = std::max(1, f.mech->slices);
  double cycle_s = 0, sync_max_s = 0, net_max_s = 0;
  int sync = 0, proxied = 0;
  for (const auto route : *f.routes.front()) {
    const int hw = routes_.hw(route);
    const double per_round_s = std::max(f.mech->hop_latency(static_cast<nccl::Hw>(hw)), routes_.latency_s(route));
    cycle_s += per_round_s;
    f.hop_round_s.push_back(per_round_s);
    f.hop_rounds.push_back(hw == static_cast<int>(nccl::Hw::net) ? slices : 1);
    if (hw == static_cast<int>(nccl::Hw::net)) {
      ++proxied;
      net_max_s = std::max(net_max_s, per_round_s);
    } else {
      ++sync;
      sync_max_s = std::max(sync_max_s, per_round_s);
    }
  }
  if (proxied == 0) return;
  f.all_proxied = sync == 0;
  // Simple's two slices a step: the pass is replayed, for every hop proxied too when the family
  // is one ring (several rings of one family, hierarchical's across nodes, send their slices
  // together and share the NIC below the cap, which the closed form's overlap follows).
  if (slices > 1 && (!f.all_proxied || f.chunks.size() == 1)) f.replay_s = replay_s(f);
  f.proxied_round_s = std::max(sync_max_s, cycle_s / (sync + slices * proxied));
  f.proxied_fill_s = sync > 0 ? 0.5 * std::max(0.0, net_max_s - f.proxied_round_s) : 0.0;
}

double Model::replay_s(const RingFamily& f) const {
  const Mechanics& m = *f.mech;
  ReplayRing r;
  r.slices = std::max(1, m.slices);
  r.loops = std::max(1, f.step_factor / r.slices);
  r.rs_steps = f.reduce_scatter ? f.n - 1 : 0;
  r.steps = r.rs_steps + (f.allgather ? f.n - 1 : 0);
  r.window = nccl::kSteps / (r.slices > 1 ? nccl::kRingSliceSteps : 1);
  // Every piece as large as the largest (the uniform rings this is used for differ by a byte).
  std::int64_t chunk = 0;
  for (const auto& c : f.chunks)
    for (auto v : c) chunk = std::max(chunk, v);
  const std::int64_t per = std::int64_t{r.loops} * r.slices;
  const std::int64_t piece = (chunk + per - 1) / per;
  r.reduce_s = static_cast<double>(piece) * m.reduce_s_per_byte;
  const auto& routes = *f.routes.front();
  r.hops.resize(routes.size());
  // Past the bound the closed form stands (the rounds' average latency and the fill).
  if (replay_work(r) > kMaxReplayWork) return 0.0;
  const auto rate = fair_rates(routes_, routes);
  for (std::size_t p = 0; p < routes.size(); ++p) {
    const auto hw = static_cast<nccl::Hw>(routes_.hw(routes[p]));
    auto& h = r.hops[p];
    h.hop_s = m.hop_latency(hw);
    h.route_s = routes_.latency_s(routes[p]);
    h.proxied = hw == nccl::Hw::net;
    h.transfer_s = rate[p] > 0 ? static_cast<double>(wire_bytes(m, piece)) / rate[p] : 0.0;
    h.cap_s = m.hop_cap_time_s(hw, piece);
  }
  std::vector<double> key{static_cast<double>(r.loops), static_cast<double>(r.slices), static_cast<double>(r.rs_steps),
                          static_cast<double>(r.steps), r.reduce_s, static_cast<double>(r.window)};
  for (const auto& h : r.hops) key.insert(key.end(), {h.hop_s, h.route_s, h.proxied ? 1.0 : 0.0, h.transfer_s, h.cap_s});
  auto it = replays_.find(key);
  if (it == replays_.end()) it = replays_.emplace(std::move(key), ring_replay_s(r)).first;
  return it->second;
}

double Model::chain_latency_s(const RingFamily& f, int rounds) {
  const auto P = f.hop_round_s.size();
  if (P == 0 || rounds <= 0) return 0.0;
  double lap_s = 0;
  int lap_rounds = 0;
  for (std::size_t j = 0; j < P; ++j) lap_s += f.hop_round_s[j], lap_rounds += f.hop_rounds[j];
  const int laps = rounds / lap_rounds, rest = rounds % lap_rounds;
  // The costliest stretch taking `rest` rounds, by two pointers around the period: each start's
  // stretch ends no earlier than the previous one's (rounds and latencies are never negative),
  // and `rest` is short of a lap, so a stretch may cross the period's end but never covers a lap.
  double worst = 0, s = 0;
  int r = 0;
  std::size_t end = 0;
  for (std::size_t start = 0; rest > 0 && start < P; ++start) {
    for (; r < rest; ++end) s += f.hop_round_s[end % P], r += f.hop_rounds[end % P];
    worst = std::max(worst, s);
    s -= f.hop_round_s[start], r -= f.hop_rounds[start];
  }
  return laps * lap_s + worst;
}

}  // namespace redsim::scalable
