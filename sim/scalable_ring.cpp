// Rings in the scalable fidelity: a family of rings over one period of edges (allreduce,
// reduce-scatter, allgather, hierarchical's two levels) and the chains of reduce and broadcast,
// as stages of long-lived flows (scalable_model.h).
#include "sim/scalable_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "collectives/shapes.h"
#include "sim/ring_pass.h"
#include "sim/sim_context.h"

namespace redsim::scalable {
namespace {

int mod(int a, int n) { return ((a % n) + n) % n; }

// Relative tolerance under which chunk sizes count as equal when steps are grouped (splitting a
// buffer leaves chunks that differ by a byte; they must not split a ring into many stages).
constexpr double kChunkTolerance = 1e-3;
// Several rings with uneven chunks at once are grouped by rotation; beyond this much grouping
// work (period^2 x rings) they fall back to the uniform treatment at the largest chunk.
constexpr std::int64_t kMaxGroupingWork = std::int64_t{1} << 24;

int chunk_bin(std::int64_t v) {
  if (v <= 0) return -1;
  return static_cast<int>(std::floor(std::log(static_cast<double>(v)) / std::log1p(kChunkTolerance)));
}

}  // namespace

std::vector<Stage> Model::uneven_ring_stages(const RingFamily& f) const {
  // A ring step waits only for its neighbours, so with uneven chunks the ring lasts as long as
  // its heaviest path through the steps. Two paths bound it from below and are usually tight:
  // following the largest chunk around the ring (each step costs that chunk on the edge it is
  // on), or staying at one edge (every chunk it forwards). Both are estimated with the edges'
  // fair rates; the longer one runs, as a wave of one flow per edge the chunk visits, or as
  // one flow per edge at once.
  const int n = f.n, period = f.period;
  const auto& ch = f.chunks[0];
  const auto& routes = *f.routes[0];
  const auto big = static_cast<int>(std::max_element(ch.begin(), ch.end()) - ch.begin());
  const std::int64_t cmax = ch[static_cast<std::size_t>(big)];
  std::int64_t total = 0;
  for (auto v : ch) total += v;
  auto at = [&](int j) { return ch[static_cast<std::size_t>(mod(j, n))]; };
  const auto P = static_cast<std::size_t>(period);
  std::vector<int> follow_rs(P, 0), follow_ag(P, 0);
  std::vector<std::int64_t> stay_rs(P, 0), stay_ag(P, 0);
  int steps = 0;
  if (f.reduce_scatter) {
    for (int k = 0; k < n - 1; ++k) follow_rs[static_cast<std::size_t>(mod(big + k, n) % period)] += 1;
    for (int p = 0; p < n; ++p) {
      auto& v = stay_rs[static_cast<std::size_t>(p % period)];
      v = std::max(v, total - at(p + 1));
    }
    steps += n - 1;
  }
  if (f.allgather) {
    for (int k = 0; k < n - 1; ++k) follow_ag[static_cast<std::size_t>(mod(big - 1 + k, n) % period)] += 1;
    for (int p = 0; p < n; ++p) {
      auto& v = stay_ag[static_cast<std::size_t>(p % period)];
      v = std::max(v, total - at(p + 2));
    }
    steps += n - 1;
  }
  const auto rate = fair_rates(routes_, routes);
  const double reduce_s_per_byte = f.reduce_s_per_byte();
  double follow_s = 0, stay_s = 0;
  for (std::size_t p = 0; p < P; ++p) {
    const double a = routes_.latency_s(routes[p]);
    const int visits = follow_rs[p] + follow_ag[p];
    follow_s += visits * (a + cmax / rate[p]) + follow_rs[p] * cmax * reduce_s_per_byte;
    stay_s = std::max(stay_s, steps * a + static_cast<double>(stay_rs[p] + stay_ag[p]) / rate[p] +
                                  static_cast<double>(stay_rs[p]) * reduce_s_per_byte);
  }
  Stage st;
  if (follow_s >= stay_s) {
    st.sequential = true;
    for (int i = 0; i < period; ++i) {
      const auto p = static_cast<std::size_t>(mod(big + i, period));
      const int visits = follow_rs[p] + follow_ag[p];
      if (visits == 0) continue;
      Flow fl;
      fl.route = routes[p];
      fl.bytes = cmax * visits;
      fl.rounds = visits;
      fl.post_delay_s = (visits - 1) * routes_.latency_s(fl.route) + static_cast<double>(cmax) * follow_rs[p] * reduce_s_per_byte;
      if (f.mech) apply_protocol(fl, *f.mech, f.step_factor);
      st.flows.push_back(fl);
    }
  } else {
    for (std::size_t p = 0; p < P; ++p) {
      Flow fl;
      fl.route = routes[p];
      fl.bytes = stay_rs[p] + stay_ag[p];
      fl.rounds = steps;
      fl.post_delay_s = (steps - 1) * routes_.latency_s(fl.route) + static_cast<double>(stay_rs[p]) * reduce_s_per_byte;
      if (f.mech) apply_protocol(fl, *f.mech, f.step_factor);
      st.flows.push_back(fl);
    }
  }
  return {std::move(st)};
}

Flow Model::ring_flow(const RingFamily& f, std::uint32_t route, std::int64_t bytes, std::int64_t rs_bytes,
                     int steps, bool whole_ring) const {
  Flow fl;
  fl.route = route;
  fl.bytes = bytes;
  fl.rounds = steps;
  const double reduce_s_per_byte = f.reduce_s_per_byte();
  fl.post_delay_s = (steps - 1) * routes_.latency_s(route) + static_cast<double>(rs_bytes) * reduce_s_per_byte;
  if (!f.mech) return fl;
  const double per_round_s = first_hop_s(*f.mech, route);
  apply_protocol(fl, *f.mech, f.step_factor);
  if (whole_ring && f.replay_s > 0) {
    // The replayed pass holds every round's latency, cap time and reduction: each of the ring's
    // flows lasts at least that, and its transfer (the links shared among channels) beside it.
    fl.post_delay_s = 0;
    fl.overlap_latency_s = f.replay_s - routes_.latency_s(route);
    fl.overlap_side_by_side = true;
    return fl;
  }
  // A proxied network hop does not hold its sender (sim/ring_pass.cpp): its rounds cost what
  // the ring's cycle of hops costs a round, and the pipeline fills once.
  if (f.proxied_round_s <= 0 || routes_.hw(route) != static_cast<int>(nccl::Hw::net)) return fl;
  const int slices = std::max(1, f.mech->slices);
  if (!f.all_proxied && slices == 1) {
    // One slice a step (LL, LL128): a step forwards what the step before brought, so the ring
    // lasts its slowest run of consecutive hops that takes its rounds, the network's included.
    fl.post_delay_s += chain_latency_s(f, fl.rounds) - fl.rounds * per_round_s;
    return fl;
  }
  if (!f.all_proxied) {
    // Simple's two slices a step: a synchronous sender's own slices interleave with the chain,
    // so the ring runs at its cycle's average pace, and the proxied hop adds its fill.
    fl.post_delay_s += fl.rounds * (f.proxied_round_s - per_round_s) + f.proxied_fill_s;
    return fl;
  }
  // Every hop proxied: the rounds' latency overlaps the transfers (each slice waits for the one
  // `slices` back), and a loop's first step, which forwards nothing, waits for nobody.
  const int loops = std::max(1, f.step_factor / slices);
  fl.post_delay_s -= fl.rounds * per_round_s - routes_.latency_s(route);
  fl.overlap_latency_s = (fl.rounds - (loops - 1) * slices) * f.proxied_round_s - routes_.latency_s(route);
  fl.overlap_slices = slices;
  return fl;
}

std::vector<Stage> Model::ring_family_stages(const RingFamily& f) const {
  std::vector<Stage> stages;
  const int n = f.n, period = f.period;
  if (n < 2 || f.chunks.empty() || period < 1) return stages;
  const std::size_t rings = f.chunks.size();
  // Representative edge p stands for edges p, p+period, ...: in a step it carries the largest
  // chunk any of them carries (a lockstep ring step lasts as long as its slowest edge).
  RingLoad load;
  load.M.assign(rings, std::vector<std::int64_t>(static_cast<std::size_t>(period), 0));
  std::int64_t lo = std::numeric_limits<std::int64_t>::max(), hi = 0;
  for (std::size_t i = 0; i < rings; ++i) {
    for (int j = 0; j < n; ++j) {
      auto& m = load.M[i][static_cast<std::size_t>(j % period)];
      m = std::max(m, f.chunks[i][static_cast<std::size_t>(j)]);
    }
    for (auto v : load.M[i]) lo = std::min(lo, v), hi = std::max(hi, v);
  }
  // Reduce-scatter step k sends chunk p-k, allgather step k chunk p+1-k: edge p at rotation rho
  // carries M[p - rho].
  load.rs_count.assign(static_cast<std::size_t>(period), 0);
  load.ag_count.assign(static_cast<std::size_t>(period), 0);
  if (f.reduce_scatter)
    for (int k = 0; k < n - 1; ++k) load.rs_count[static_cast<std::size_t>(k % period)] += 1;
  if (f.allgather)
    for (int k = 0; k < n - 1; ++k) load.ag_count[static_cast<std::size_t>(mod(k - 1, period))] += 1;

  const bool uniform = hi <= static_cast<double>(lo) * (1 + kChunkTolerance);
  const bool too_much = static_cast<std::int64_t>(period) * period * static_cast<std::int64_t>(rings) > kMaxGroupingWork;
  if (uniform || too_much) {
    int rs_steps = 0, steps = 0;
    for (int r = 0; r < period; ++r) {
      const auto k = static_cast<std::size_t>(r);
      rs_steps += load.rs_count[k];
      steps += load.rs_count[k] + load.ag_count[k];
    }
    Stage st;
    for (std::size_t i = 0; i < rings; ++i) {
      const std::int64_t biggest = *std::max_element(load.M[i].begin(), load.M[i].end());
      for (int p = 0; p < period; ++p)
        st.flows.push_back(ring_flow(f, (*f.routes[i])[static_cast<std::size_t>(p)], biggest * steps, biggest * rs_steps, steps, true));
    }
    stages.push_back(std::move(st));
    return stages;
  }
  if (rings == 1) return uneven_ring_stages(f);
  return rotation_group_stages(f, load);
}

std::vector<Stage> Model::rotation_group_stages(const RingFamily& f, const RingLoad& load) const {
  // Uneven chunks in several rings at once: rotations that load the representative edges alike
  // run as one stage; the stages follow one another (lockstep steps, each as long as its slowest
  // edge: an upper bound on the ring's dataflow).
  const int period = f.period;
  const std::size_t rings = f.chunks.size();
  const auto& M = load.M;
  struct Group {
    int steps = 0;
    std::vector<std::int64_t> bytes, rs_bytes;  // per ring x period
  };
  std::map<std::vector<int>, std::size_t> index;
  std::vector<Group> groups;
  std::vector<int> key(rings * static_cast<std::size_t>(period));
  for (int rho = 0; rho < period; ++rho) {
    const int rs = load.rs_count[static_cast<std::size_t>(rho)], ag = load.ag_count[static_cast<std::size_t>(rho)];
    if (rs + ag == 0) continue;
    for (std::size_t i = 0; i < rings; ++i)
      for (int p = 0; p < period; ++p)
        key[i * static_cast<std::size_t>(period) + static_cast<std::size_t>(p)] = chunk_bin(M[i][static_cast<std::size_t>(mod(p - rho, period))]);
    auto [it, fresh] = index.emplace(key, groups.size());
    if (fresh) {
      groups.emplace_back();
      groups.back().bytes.assign(key.size(), 0);
      groups.back().rs_bytes.assign(key.size(), 0);
    }
    auto& g = groups[it->second];
    g.steps += rs + ag;
    for (std::size_t i = 0; i < rings; ++i)
      for (int p = 0; p < period; ++p) {
        const auto v = M[i][static_cast<std::size_t>(mod(p - rho, period))];
        g.bytes[i * static_cast<std::size_t>(period) + static_cast<std::size_t>(p)] += v * (rs + ag);
        g.rs_bytes[i * static_cast<std::size_t>(period) + static_cast<std::size_t>(p)] += v * rs;
      }
  }
  std::vector<Stage> stages;
  for (const auto& g : groups) {
    Stage st;
    for (std::size_t i = 0; i < rings; ++i)
      for (int p = 0; p < period; ++p) {
        const auto k = i * static_cast<std::size_t>(period) + static_cast<std::size_t>(p);
        st.flows.push_back(ring_flow(f, (*f.routes[i])[static_cast<std::size_t>(p)], g.bytes[k], g.rs_bytes[k], g.steps));
      }
    stages.push_back(std::move(st));
  }
  return stages;
}

// Hierarchical: a reduce-scatter ring in each node, a ring across nodes per local position over
// that position's shard, an allgather ring in each node.
std::vector<Stage> Model::hierarchical_stages(const PlanOp& op, int c, std::int64_t bytes) {
  std::vector<Stage> stages;
  const int dpn = cluster_.devices_per_node, nodes = cluster_.nodes;
  std::vector<std::int64_t> intra_chunks;
  for (int j = 0; j < dpn; ++j) intra_chunks.push_back(split_piece(bytes, dpn, j));
  RingFamily intra;
  intra.mech = &mech(op);
  intra.step_factor = ring_loops(*intra.mech, intra_chunks) * std::max(1, intra.mech->slices);
  if (dpn > 1) {
    const auto& ir = intra_rings(c, op.channels);
    intra.n = intra.period = dpn;
    for (const auto& r : ir.routes) {
      intra.chunks.push_back(intra_chunks);
      intra.routes.push_back(&r);
    }
    intra.allgather = false;
    proxied_rounds(intra);
    for (auto& s : ring_family_stages(intra)) stages.push_back(std::move(s));
  }
  if (nodes > 1) {
    const auto& nr = node_rings();
    const int shift = local_shift(c, op.channels);
    RingFamily inter;
    inter.mech = intra.mech;
    inter.n = nodes;
    inter.period = fold_.period_nodes;
    for (int l = 0; l < dpn; ++l) {
      const int pos = mod(l - shift, dpn);
      const std::int64_t shard = intra_chunks[static_cast<std::size_t>((pos + 1) % dpn)];
      std::vector<std::int64_t> ch;
      for (int j = 0; j < nodes; ++j) ch.push_back(split_piece(shard, nodes, j));
      inter.chunks.push_back(std::move(ch));
      inter.routes.push_back(&nr.routes[static_cast<std::size_t>(l)]);
    }
    inter.step_factor = ring_loops(*inter.mech, inter.chunks.front()) * std::max(1, inter.mech->slices);
    proxied_rounds(inter);
    for (auto& s : ring_family_stages(inter)) stages.push_back(std::move(s));
  }
  if (dpn > 1) {
    intra.reduce_scatter = false;
    intra.allgather = true;
    for (auto& s : ring_family_stages(intra)) stages.push_back(std::move(s));
  }
  return stages;
}

// The most places one rank's position differs by between the channels' chains (0 when every
// channel runs the same ring).
int Model::chain_place_spread(const PlanOp& op) {
  if (auto it = chain_place_spread_.find(op.id); it != chain_place_spread_.end()) return it->second;
  const int n = plan_.world_size;
  std::vector<int> lo(static_cast<std::size_t>(n), n), hi(static_cast<std::size_t>(n), -1);
  for (int c = 0; c < op.channels; ++c) {
    const auto& wr = world_ring(c, op.channels);
    const int root_pos = wr.pos[static_cast<std::size_t>(op.root)];
    const int first = op.kind == OpKind::reduce ? root_pos + 1 : root_pos;
    for (int r = 0; r < n; ++r) {
      const int j = mod(wr.pos[static_cast<std::size_t>(r)] - first, n);
      lo[static_cast<std::size_t>(r)] = std::min(lo[static_cast<std::size_t>(r)], j);
      hi[static_cast<std::size_t>(r)] = std::max(hi[static_cast<std::size_t>(r)], j);
    }
  }
  int spread = 0;
  for (int r = 0; r < n; ++r) spread = std::max(spread, hi[static_cast<std::size_t>(r)] - lo[static_cast<std::size_t>(r)]);
  return chain_place_spread_.emplace(op.id, spread).first->second;
}

// The hops the wave runs (positions after the chain's head) and how often its lap counts: the
// whole chain (N-1 hops) when the cluster does not fold, else one lap of the period's edges,
// counted (N-1)/period times.
std::vector<int> Model::chain_wave_hops(const PlanOp& op, const WorldRing& wr, int first, double& repeat) {
  const int n = plan_.world_size;
  const int wave_period = static_cast<int>(wr.wave_routes.size());
  const int hops = wave_period == n ? n - 1 : wave_period;
  repeat = static_cast<double>(n - 1) / hops;
  std::vector<int> wave_hops(static_cast<std::size_t>(hops));
  for (int h = 0; h < hops; ++h) wave_hops[static_cast<std::size_t>(h)] = h;
  if (op.rendezvous) return wave_hops;
  // A later back-to-back iteration (sim/collective_sweep.cpp): each rank starts it once it has
  // finished the previous one, its upstream already sending, so most of the chain's fill is not
  // paid again. What is: a middle rank's two hops (the first chunk in, the last out), plus the
  // spread of its places along the channels' chains, since it starts every channel when its
  // last channel ends (sim/README.md, "Back-to-back chains").
  const int span = std::min(n - 1, chain_place_spread(op) + 2);
  if (span >= hops) {
    repeat = static_cast<double>(span) / hops;
    return wave_hops;
  }
  // The window of `span` hops the slowest by their latencies, past the head.
  const auto& m = mech(op);
  auto window_s = [&](int h0) {
    double s = 0;
    for (int k = h0; k < h0 + span; ++k)
      s += m.hop_latency(static_cast<nccl::Hw>(routes_.hw(wr.wave_routes[static_cast<std::size_t>(mod(first + k, wave_period))])));
    return s;
  };
  int best = 1;
  for (int h0 = 2; h0 + span <= hops; ++h0)
    if (window_s(h0) > window_s(best)) best = h0;
  repeat = 1;
  wave_hops.resize(static_cast<std::size_t>(span));
  for (int k = 0; k < span; ++k) wave_hops[static_cast<std::size_t>(k)] = best + k;
  return wave_hops;
}

// Reduce and broadcast: a chain along the world ring from its head.
std::vector<Stage> Model::chain_stages(const PlanOp& op, int c, std::int64_t bytes) {
  std::vector<Stage> stages;
  const int n = plan_.world_size;
  const auto& wr = world_ring(c, op.channels);
  const bool reduce = op.kind == OpKind::reduce;
  const int period = static_cast<int>(wr.routes.size());
  const auto& m = mech(op);
  const int P = m.chunks(bytes);
  const std::int64_t first_chunk = split_piece(bytes, P, 0);
  const double round_extra = reduce ? static_cast<double>(bytes) / P * m.reduce_s_per_byte : 0.0;
  const int root_pos = wr.pos[static_cast<std::size_t>(op.root)];
  const int first = reduce ? root_pos + 1 : root_pos;  // the chain's head
  // The wave: the first chunk hop by hop from the head (chain_wave_hops).
  Stage wave;
  wave.sequential = true;
  const int wave_period = static_cast<int>(wr.wave_routes.size());
  const std::vector<int> wave_hops = chain_wave_hops(op, wr, first, wave.repeat);
  for (int h : wave_hops) {
    Flow f;
    f.route = wr.wave_routes[static_cast<std::size_t>(mod(first + h, wave_period))];
    f.bytes = stream_message_bytes(m, routes_.hw(f.route), bytes, P, first_chunk, false);
    f.rounds = 1;
    f.round_extra_s = round_extra;
    // A hop's sender gathers the first step before it sends it (sim/stream_edge.h), except the
    // head, which holds all its data. A folded wave counts its first hop `repeat` times, once
    // as the head's: that hop pays the gather in (repeat - 1) / repeat of them.
    const double gather_s = stream_message_extra_s(m, routes_.hw(f.route), bytes, P, first_chunk, false);
    f.post_delay_s = round_extra + (h == 0 ? gather_s * (wave.repeat - 1) / wave.repeat : gather_s);
    f.group = mod(first + h, wave_period);
    apply_protocol(f, m, 1);
    f.min_transfer_s = 0;  // the cap is the later chunks' pace (as in tree_stages)
    wave.flows.push_back(f);
  }
  stages.push_back(std::move(wave));
  // The other P-1 chunks follow at the pace of the slowest edge: one flow per representative
  // edge (the edge into the head carries nothing; when folded it stands for used edges too).
  if (P > 1) {
    const int unused = reduce ? root_pos : mod(root_pos - 1, n);
    Stage rest;
    rest.with_previous = m.streams();
    bool uniform = true;  // every edge of the chain the same kind of hop
    for (int p = 1; p < period; ++p)
      uniform = uniform && routes_.hw(wr.routes[static_cast<std::size_t>(p)]) == routes_.hw(wr.routes[0]);
    for (int p = 0; p < period; ++p) {
      if (period == n && p == unused) continue;
      Flow f;
      f.route = wr.routes[static_cast<std::size_t>(p)];
      f.bytes = bytes - stream_message_bytes(m, routes_.hw(f.route), bytes, P, first_chunk, false);
      f.rounds = P - 1;
      f.round_extra_s = round_extra;
      f.post_delay_s = (P - 1) * round_extra + stream_message_extra_s(m, routes_.hw(f.route), bytes, P, first_chunk, true);
      f.group = p;
      apply_protocol(f, m, 1, false);
      overlap_rest_latencies(f, m, P);
      if (!op.rendezvous && !m.streams() && uniform) {
        // Back to back, a Simple step being a rendezvous of its two ends, a rank's neighbours
        // run a chunk out of phase with it, and every other later chunk waits a first chunk's
        // hop latency instead of the route's, as many as the chain has hops past the wave's
        // two: the steady state of the exact engine's recurrence (sim/README.md). Only on a
        // chain of one kind of hop: where a slower hop sets the later chunks' pace, it absorbs
        // most of that (the same recurrence with one hop 3x slower: 3 us where this says 18).
        const double extra_s = first_hop_s(m, f.route) - routes_.latency_s(f.route);
        f.post_delay_s += static_cast<double>(std::min((P - 1) / 2, std::max(0, n - 3))) * extra_s;
      }
      if (m.streams() && m.channel_cap_Bps > 0 && routes_.hw(f.route) == static_cast<int>(nccl::Hw::net)) {
        f.route = chain_rest_routes(c, op.channels)[static_cast<std::size_t>(p)];
        f.rate_cap_Bps = m.channel_cap_Bps * m.wire_factor;  // wire bytes a second
        f.after_wave = true;
      }
      rest.flows.push_back(f);
    }
    stages.push_back(std::move(rest));
  }
  return stages;
}

std::vector<Stage> Model::binomial_stages(const PlanOp& op, std::int64_t bytes) {
  const int n = plan_.world_size;
  const auto t = binomial_tree(n, op.root);
  Stage st;
  st.dataflow = true;
  std::vector<std::int32_t> into(static_cast<std::size_t>(n), -1);  // the flow that brings each rank its data
  std::vector<int> order{op.root};
  for (std::size_t i = 0; i < order.size(); ++i) {
    const int from = order[i];
    for (int to : t.children[static_cast<std::size_t>(from)]) {
      Flow f;
      f.route = routes_.between(from, to, unfolded_);
      f.bytes = bytes;
      f.after[0] = into[static_cast<std::size_t>(from)];
      into[static_cast<std::size_t>(to)] = static_cast<std::int32_t>(st.flows.size());
      st.flows.push_back(f);
      order.push_back(to);
    }
  }
  return {std::move(st)};
}

// Ring allreduce, reduce-scatter, allgather over the whole world.
std::vector<Stage> Model::world_ring_stages(const PlanOp& op, int c) {
  const auto& wr = world_ring(c, op.channels);
  RingFamily fam;
  fam.n = plan_.world_size;
  fam.period = static_cast<int>(wr.routes.size());
  fam.chunks.push_back(world_chunks(op, c, wr));
  fam.mech = &mech(op);
  fam.step_factor = ring_loops(*fam.mech, fam.chunks.back()) * std::max(1, fam.mech->slices);
  fam.routes.push_back(&wr.routes);
  fam.reduce_scatter = op.kind != OpKind::allgather;
  fam.allgather = op.kind != OpKind::reduce_scatter;
  proxied_rounds(fam);
  return ring_family_stages(fam);
}

}  // namespace redsim::scalable
