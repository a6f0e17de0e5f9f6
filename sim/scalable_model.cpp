#include "sim/scalable_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_map>

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

double round_time_s(const Flow& flow, double route_latency_s, double duration_s) {
  const double transfer = std::max(std::max(0.0, duration_s - route_latency_s), flow.min_transfer_s);
  return route_latency_s + transfer / std::max(1, flow.rounds) + flow.round_extra_s + flow.hop_extra_s;
}

const Mechanics& Model::mech(const PlanOp& op) {
  auto it = mech_.find(op.id);
  if (it == mech_.end()) it = mech_.emplace(op.id, mechanics_of(op, cluster_, plan_.world_size)).first;
  return it->second;
}

void Model::apply_protocol(Flow& f, const Mechanics& m, int round_factor, bool hop_each_round) const {
  if (m.channel_cap_Bps <= 0 && m.wire_factor == 1.0 && round_factor == 1 && m.hop_latency_s == std::array<double, 3>{}) return;
  const double lat = routes_.latency_s(f.route);
  const double hop = m.hop_latency(static_cast<nccl::Hw>(routes_.hw(f.route)));
  const int rounds = f.rounds * round_factor;
  f.hop_extra_s = hop_each_round ? std::max(0.0, hop - lat) : 0.0;
  // Each added round pays the route's latency; every round pays the hop's extra.
  f.post_delay_s += (rounds - f.rounds) * lat + rounds * f.hop_extra_s;
  if (m.channel_cap_Bps > 0) f.min_transfer_s = static_cast<double>(f.bytes) / m.channel_cap_Bps;
  f.bytes = wire_bytes(m, f.bytes);
  f.rounds = rounds;
}

Model::Model(const Plan& plan, const ClusterSpec& cluster, bool allow_fold)
    : plan_(plan), cluster_(cluster), fold_(choose_fold(cluster, allow_fold)), wave_fold_(fold_),
      unfolded_(choose_fold(cluster, false)), routes_(cluster) {
  if (wave_fold_.period_nodes == 1 && cluster.nodes > 1) {
    wave_fold_.period_nodes = 2;
    wave_fold_.period_ranks = 2 * cluster.devices_per_node;
  }
  if (cluster.device.reduce_GBps > 0) reduce_s_per_byte_ = 1.0 / (cluster.device.reduce_GBps * 1e9);
}

int Model::local_shift(int channel, int channels) const {
  const int dpn = cluster_.devices_per_node;
  return channels > 0 ? (channel * dpn / channels) % dpn : 0;
}

const Model::WorldRing& Model::world_ring(int channel, int channels) {
  auto key = std::make_pair(channel, channels);
  auto it = world_rings_.find(key);
  if (it != world_rings_.end()) return it->second;
  WorldRing wr;
  wr.ring = ring_order(cluster_, channel, channels);
  const int n = static_cast<int>(wr.ring.size());
  wr.pos.assign(static_cast<std::size_t>(n), 0);
  for (int i = 0; i < n; ++i) wr.pos[static_cast<std::size_t>(wr.ring[static_cast<std::size_t>(i)])] = i;
  const int period = std::min(n, fold_.period_ranks);
  for (int p = 0; p < period && n > 1; ++p)
    wr.routes.push_back(routes_.between(wr.ring[static_cast<std::size_t>(p)], wr.ring[static_cast<std::size_t>((p + 1) % n)], fold_));
  const int wave_period = std::min(n, wave_fold_.period_ranks);
  for (int p = 0; p < wave_period && n > 1; ++p)
    wr.wave_routes.push_back(
        routes_.between(wr.ring[static_cast<std::size_t>(p)], wr.ring[static_cast<std::size_t>((p + 1) % n)], wave_fold_));
  return world_rings_.emplace(key, std::move(wr)).first->second;
}

const Model::IntraRings& Model::intra_rings(int channel, int channels) {
  auto key = std::make_pair(channel, channels);
  auto it = intra_.find(key);
  if (it != intra_.end()) return it->second;
  IntraRings ir;
  const int dpn = cluster_.devices_per_node;
  const int shift = local_shift(channel, channels);
  // Every node runs the same local ring on its own links: the period's nodes stand for all.
  for (int m = 0; m < fold_.period_nodes; ++m) {
    std::vector<int> ring;
    for (int i = 0; i < dpn; ++i) ring.push_back(m * dpn + (i + shift) % dpn);
    std::vector<std::uint32_t> r;
    for (int i = 0; i < dpn && dpn > 1; ++i)
      r.push_back(routes_.between(ring[static_cast<std::size_t>(i)], ring[static_cast<std::size_t>((i + 1) % dpn)], fold_));
    ir.rings.push_back(std::move(ring));
    ir.routes.push_back(std::move(r));
  }
  return intra_.emplace(key, std::move(ir)).first->second;
}

const Model::NodeRings& Model::node_rings() {
  if (!node_rings_.empty()) return node_rings_.front();
  NodeRings nr;
  const int dpn = cluster_.devices_per_node, nodes = cluster_.nodes;
  for (int l = 0; l < dpn; ++l) {
    std::vector<std::uint32_t> r;
    for (int m = 0; m < fold_.period_nodes && nodes > 1; ++m)
      r.push_back(routes_.between(m * dpn + l, ((m + 1) % nodes) * dpn + l, fold_));
    nr.routes.push_back(std::move(r));
  }
  node_rings_.push_back(std::move(nr));
  return node_rings_.front();
}

void Model::prepare(const PlanOp& op) {
  if (plan_.world_size < 2) return;
  for (int c = 0; c < op.channels; ++c) {
    if (op.kind == OpKind::allreduce && (op.algorithm == Algorithm::nvls || op.algorithm == Algorithm::nvls_tree)) {
      for (int r = 0; r < fold_.period_ranks; ++r) {
        const int sw = switch_endpoint(cluster_, cluster_.node_of(r));
        routes_.between(r, sw, fold_);
        routes_.between(sw, r, fold_);
      }
    } else if (op.kind == OpKind::allreduce && op.algorithm == Algorithm::tree) {
      tree(c, op.channels);
    } else if (op.kind == OpKind::allreduce && op.algorithm == Algorithm::hierarchical) {
      if (cluster_.devices_per_node > 1) intra_rings(c, op.channels);
      if (cluster_.nodes > 1) node_rings();
    } else {
      world_ring(c, op.channels);
    }
  }
}

std::vector<std::int64_t> Model::world_chunks(const PlanOp& op, int channel, const WorldRing& wr) const {
  const int n = plan_.world_size;
  std::vector<std::int64_t> chunks(static_cast<std::size_t>(n));
  if (op.kind == OpKind::allreduce) {
    const std::int64_t bytes = split_piece(op.bytes, op.channels, channel);
    for (int j = 0; j < n; ++j) chunks[static_cast<std::size_t>(j)] = split_piece(bytes, n, j);
    return chunks;
  }
  const auto shards = op_shards(op, n);
  std::vector<std::int64_t> channel_shards(shards.size());
  for (std::size_t r = 0; r < shards.size(); ++r) channel_shards[r] = split_piece(shards[r], op.channels, channel);
  return chunks_for_shards(wr.ring, channel_shards);
}

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
  double follow_s = 0, stay_s = 0;
  for (std::size_t p = 0; p < P; ++p) {
    const double a = routes_.latency_s(routes[p]);
    const int visits = follow_rs[p] + follow_ag[p];
    follow_s += visits * (a + cmax / rate[p]) + follow_rs[p] * cmax * reduce_s_per_byte_;
    stay_s = std::max(stay_s, steps * a + static_cast<double>(stay_rs[p] + stay_ag[p]) / rate[p] +
                                  static_cast<double>(stay_rs[p]) * reduce_s_per_byte_);
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
      fl.post_delay_s = (visits - 1) * routes_.latency_s(fl.route) + static_cast<double>(cmax) * follow_rs[p] * reduce_s_per_byte_;
      if (f.mech) apply_protocol(fl, *f.mech, f.step_factor);
      st.flows.push_back(fl);
    }
  } else {
    for (std::size_t p = 0; p < P; ++p) {
      Flow fl;
      fl.route = routes[p];
      fl.bytes = stay_rs[p] + stay_ag[p];
      fl.rounds = steps;
      fl.post_delay_s = (steps - 1) * routes_.latency_s(fl.route) + static_cast<double>(stay_rs[p]) * reduce_s_per_byte_;
      if (f.mech) apply_protocol(fl, *f.mech, f.step_factor);
      st.flows.push_back(fl);
    }
  }
  return {std::move(st)};
}

std::vector<Stage> Model::ring_family_stages(const RingFamily& f) const {
  std::vector<Stage> stages;
  const int n = f.n, period = f.period;
  if (n < 2 || f.chunks.empty() || period < 1) return stages;
  const std::size_t rings = f.chunks.size();
  // Representative edge p stands for edges p, p+period, ...: in a step it carries the largest
  // chunk any of them carries (a lockstep ring step lasts as long as its slowest edge).
  std::vector<std::vector<std::int64_t>> M(rings, std::vector<std::int64_t>(static_cast<std::size_t>(period), 0));
  std::int64_t lo = std::numeric_limits<std::int64_t>::max(), hi = 0;
  for (std::size_t i = 0; i < rings; ++i) {
    for (int j = 0; j < n; ++j) {
      auto& m = M[i][static_cast<std::size_t>(j % period)];
      m = std::max(m, f.chunks[i][static_cast<std::size_t>(j)]);
    }
    for (auto v : M[i]) lo = std::min(lo, v), hi = std::max(hi, v);
  }
  // Reduce-scatter step k sends chunk p-k, allgather step k chunk p+1-k: edge p at rotation rho
  // carries M[p - rho].
  std::vector<int> rs_count(static_cast<std::size_t>(period), 0), ag_count(static_cast<std::size_t>(period), 0);
  if (f.reduce_scatter)
    for (int k = 0; k < n - 1; ++k) rs_count[static_cast<std::size_t>(k % period)] += 1;
  if (f.allgather)
    for (int k = 0; k < n - 1; ++k) ag_count[static_cast<std::size_t>(mod(k - 1, period))] += 1;

  auto make_flow = [&](std::uint32_t route, std::int64_t bytes, std::int64_t rs_bytes, int steps) {
    Flow fl;
    fl.route = route;
    fl.bytes = bytes;
    fl.rounds = steps;
    fl.post_delay_s = (steps - 1) * routes_.latency_s(route) + static_cast<double>(rs_bytes) * reduce_s_per_byte_;
    if (f.mech) apply_protocol(fl, *f.mech, f.step_factor);
    return fl;
  };

  const bool uniform = hi <= static_cast<double>(lo) * (1 + kChunkTolerance);
  const bool too_much = static_cast<std::int64_t>(period) * period * static_cast<std::int64_t>(rings) > kMaxGroupingWork;
  if (uniform || too_much) {
    int rs_steps = 0, steps = 0;
    for (int r = 0; r < period; ++r) rs_steps += rs_count[static_cast<std::size_t>(r)], steps += rs_count[static_cast<std::size_t>(r)] + ag_count[static_cast<std::size_t>(r)];
    Stage st;
    for (std::size_t i = 0; i < rings; ++i) {
      const std::int64_t biggest = *std::max_element(M[i].begin(), M[i].end());
      for (int p = 0; p < period; ++p)
        st.flows.push_back(make_flow((*f.routes[i])[static_cast<std::size_t>(p)], biggest * steps, biggest * rs_steps, steps));
    }
    stages.push_back(std::move(st));
    return stages;
  }

  if (rings == 1) return uneven_ring_stages(f);

  // Uneven chunks in several rings at once: rotations that load the representative edges alike
  // run as one stage; the stages follow one another (lockstep steps, each as long as its slowest
  // edge: an upper bound on the ring's dataflow).
  struct Group {
    int steps = 0;
    std::vector<std::int64_t> bytes, rs_bytes;  // per ring x period
  };
  std::map<std::vector<int>, std::size_t> index;
  std::vector<Group> groups;
  std::vector<int> key(rings * static_cast<std::size_t>(period));
  for (int rho = 0; rho < period; ++rho) {
    const int rs = rs_count[static_cast<std::size_t>(rho)], ag = ag_count[static_cast<std::size_t>(rho)];
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
  for (const auto& g : groups) {
    Stage st;
    for (std::size_t i = 0; i < rings; ++i)
      for (int p = 0; p < period; ++p) {
        const auto k = i * static_cast<std::size_t>(period) + static_cast<std::size_t>(p);
        st.flows.push_back(make_flow((*f.routes[i])[static_cast<std::size_t>(p)], g.bytes[k], g.rs_bytes[k], g.steps));
      }
    stages.push_back(std::move(st));
  }
  return stages;
}

std::vector<Stage> Model::channel_stages(const PlanOp& op, int c) {
  std::vector<Stage> stages;
  const int n = plan_.world_size;
  if (n < 2) return stages;
  const std::int64_t bytes = split_piece(op.bytes, op.channels, c);
  const int dpn = cluster_.devices_per_node, nodes = cluster_.nodes;

  if (op.kind == OpKind::allreduce && op.algorithm == Algorithm::nvls) {
    stages = nvls_stages(op, bytes);
  } else if (op.kind == OpKind::allreduce && op.algorithm == Algorithm::nvls_tree) {
    stages = nvls_tree_stages(op, c, bytes);
  } else if (op.kind == OpKind::allreduce && op.algorithm == Algorithm::tree) {
    stages = tree_stages(op, c, bytes);
  } else if (op.kind == OpKind::allreduce && op.algorithm == Algorithm::hierarchical) {
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
      for (auto& s : ring_family_stages(inter)) stages.push_back(std::move(s));
    }
    if (dpn > 1) {
      intra.reduce_scatter = false;
      intra.allgather = true;
      for (auto& s : ring_family_stages(intra)) stages.push_back(std::move(s));
    }
  } else if (op.kind == OpKind::reduce || op.kind == OpKind::broadcast) {
    const auto& wr = world_ring(c, op.channels);
    const bool reduce = op.kind == OpKind::reduce;
    const int period = static_cast<int>(wr.routes.size());
    const auto& m = mech(op);
    const int P = m.chunks(bytes);
    const std::int64_t first_chunk = split_piece(bytes, P, 0);
    const double round_extra = reduce ? static_cast<double>(bytes) / P * reduce_s_per_byte_ : 0.0;
    const int root_pos = wr.pos[static_cast<std::size_t>(op.root)];
    const int first = reduce ? root_pos + 1 : root_pos;  // the chain's head
    // The wave: the first chunk hop by hop from the head, over the whole chain (N-1 hops) when
    // the cluster does not fold, else over one lap of the period's edges, counted (N-1)/period times.
    Stage wave;
    wave.sequential = true;
    const int wave_period = static_cast<int>(wr.wave_routes.size());
    const int hops = wave_period == n ? n - 1 : wave_period;
    wave.repeat = static_cast<double>(n - 1) / hops;
    for (int h = 0; h < hops; ++h) {
      Flow f;
      f.route = wr.wave_routes[static_cast<std::size_t>(mod(first + h, wave_period))];
      f.bytes = first_chunk;
      f.rounds = 1;
      f.round_extra_s = round_extra;
      f.post_delay_s = round_extra;
      f.group = mod(first + h, wave_period);
      apply_protocol(f, m, 1);
      wave.flows.push_back(f);
    }
    stages.push_back(std::move(wave));
    // The other P-1 chunks follow at the pace of the slowest edge: one flow per representative
    // edge (the edge into the head carries nothing; when folded it stands for used edges too).
    if (P > 1) {
      const int unused = reduce ? root_pos : mod(root_pos - 1, n);
      Stage rest;
      for (int p = 0; p < period; ++p) {
        if (period == n && p == unused) continue;
        Flow f;
        f.route = wr.routes[static_cast<std::size_t>(p)];
        f.bytes = bytes - first_chunk;
        f.rounds = P - 1;
        f.round_extra_s = round_extra;
        f.post_delay_s = (P - 2) * routes_.latency_s(f.route) + (P - 1) * round_extra;
        f.group = p;
        apply_protocol(f, m, 1, false);
        rest.flows.push_back(f);
      }
      stages.push_back(std::move(rest));
    }
  } else {
    // Ring allreduce, reduce-scatter, allgather over the whole world.
    const auto& wr = world_ring(c, op.channels);
    RingFamily fam;
    fam.n = n;
    fam.period = static_cast<int>(wr.routes.size());
    fam.chunks.push_back(world_chunks(op, c, wr));
    fam.mech = &mech(op);
    fam.step_factor = ring_loops(*fam.mech, fam.chunks.back()) * std::max(1, fam.mech->slices);
    fam.routes.push_back(&wr.routes);
    fam.reduce_scatter = op.kind != OpKind::allgather;
    fam.allgather = op.kind != OpKind::reduce_scatter;
    stages = ring_family_stages(fam);
  }
  stats_.stages += static_cast<std::int64_t>(stages.size());
  for (const auto& s : stages) stats_.flows += static_cast<std::int64_t>(s.flows.size());
  return stages;
}

void Model::merge_rank_ends(const PlanOp& op, int c, const std::vector<Stage>& stages, const ChannelRun& run,
                            std::vector<double>& end_s) {
  const int n = plan_.world_size;
  const double end = run.stage_end_s.empty() ? run.start_s : run.stage_end_s.back();
  auto merge = [&](int rank, double t) {
    auto& e = end_s[static_cast<std::size_t>(rank)];
    e = std::max(e, std::min(t, end));
  };
  if (n < 2 || stages.empty()) {
    for (int r = 0; r < n; ++r) merge(r, end);
    return;
  }
  if (op.kind == OpKind::reduce || op.kind == OpKind::broadcast) {
    // Chain index i is done once it has passed its last chunk on: the wave's time up to its own
    // hop, then the remaining chunks at the slowest edge's pace (the second stage).
    const auto& wr = world_ring(c, op.channels);
    const int period = static_cast<int>(wr.wave_routes.size());
    std::vector<double> t_of(static_cast<std::size_t>(period), 0.0);
    const auto& wave = stages.front();
    for (std::size_t k = 0; k < wave.flows.size(); ++k)
      t_of[static_cast<std::size_t>(wave.flows[k].group)] = run.round_s[0][k];
    const int root_pos = wr.pos[static_cast<std::size_t>(op.root)];
    const int first = op.kind == OpKind::reduce ? root_pos + 1 : root_pos;
    double total = 0;
    for (int i = 0; i < n - 1; ++i) total += t_of[static_cast<std::size_t>(mod(first + i, n) % period)];
    const double wave_s = run.stage_end_s[0] - run.start_s;
    const double scale = total > 0 ? wave_s / total : 0.0;
    const double rest_s = end - run.stage_end_s[0];
    double prefix = 0;
    for (int i = 0; i < n; ++i) {
      const int pos = mod(first + i, n);
      if (i < n - 1) prefix += t_of[static_cast<std::size_t>(pos % period)];
      merge(wr.ring[static_cast<std::size_t>(pos)], i == n - 1 ? end : run.start_s + prefix * scale + rest_s);
    }
    return;
  }
  if (op.kind == OpKind::allreduce && op.algorithm == Algorithm::tree) return merge_tree_ends(op, c, stages, run, end_s);
  for (int r = 0; r < n; ++r) merge(r, end);
}

void Model::add_rank_bytes(const PlanOp& op, int c, std::vector<std::int64_t>& sent, std::vector<std::int64_t>& received) {
  const int n = plan_.world_size;
  if (n < 2) return;
  const std::int64_t bytes = split_piece(op.bytes, op.channels, c);
  auto add = [&](int rank, std::int64_t s, std::int64_t r) {
    sent[static_cast<std::size_t>(rank)] += s;
    received[static_cast<std::size_t>(rank)] += r;
  };
  if (op.kind == OpKind::allreduce && op.algorithm == Algorithm::nvls) return add_nvls_rank_bytes(op, bytes, sent, received);
  if (op.kind == OpKind::allreduce && op.algorithm == Algorithm::nvls_tree) return add_nvls_tree_rank_bytes(op, c, bytes, sent, received);
  if (op.kind == OpKind::allreduce && op.algorithm == Algorithm::tree) return add_tree_rank_bytes(op, c, bytes, sent, received);
  if (op.kind == OpKind::allreduce && op.algorithm == Algorithm::hierarchical) {
    const int dpn = cluster_.devices_per_node, nodes = cluster_.nodes;
    const int shift = local_shift(c, op.channels);
    std::vector<std::int64_t> ch;
    for (int j = 0; j < dpn; ++j) ch.push_back(split_piece(bytes, dpn, j));
    auto at = [&](const std::vector<std::int64_t>& v, int i) { return v[static_cast<std::size_t>(mod(i, static_cast<int>(v.size())))]; };
    for (int r = 0; r < n; ++r) {
      const int p = mod(cluster_.local_of(r) - shift, dpn);
      std::int64_t s = 0, rcv = 0;
      if (dpn > 1) {
        s += (bytes - at(ch, p + 1)) + (bytes - at(ch, p + 2));
        rcv += (bytes - at(ch, p)) + (bytes - at(ch, p + 1));
      }
      if (nodes > 1) {
        const std::int64_t shard = at(ch, p + 1);
        const int q = cluster_.node_of(r);
        auto piece = [&](int j) { return split_piece(shard, nodes, mod(j, nodes)); };
        s += 2 * shard - piece(q + 1) - piece(q + 2);
        rcv += 2 * shard - piece(q) - piece(q + 1);
      }
      add(r, s, rcv);
    }
    return;
  }
  const auto& wr = world_ring(c, op.channels);
  if (op.kind == OpKind::reduce || op.kind == OpKind::broadcast) {
    const int root_pos = wr.pos[static_cast<std::size_t>(op.root)];
    const int first = op.kind == OpKind::reduce ? root_pos + 1 : root_pos;
    for (int i = 0; i < n; ++i)
      add(wr.ring[static_cast<std::size_t>(mod(first + i, n))], i < n - 1 ? bytes : 0, i > 0 ? bytes : 0);
    return;
  }
  const auto chunks = world_chunks(op, c, wr);
  std::int64_t total = 0;
  for (auto v : chunks) total += v;
  auto at = [&](int i) { return chunks[static_cast<std::size_t>(mod(i, n))]; };
  for (int p = 0; p < n; ++p) {
    std::int64_t s = 0, r = 0;
    if (op.kind != OpKind::allgather) s += total - at(p + 1), r += total - at(p);
    if (op.kind != OpKind::reduce_scatter) s += total - at(p + 2), r += total - at(p + 1);
    add(wr.ring[static_cast<std::size_t>(p)], s, r);
  }
}

ModelStats count_scalable_activities(const Plan& plan, const ClusterSpec& cluster, bool allow_fold) {
  Model m(plan, cluster, allow_fold);
  for (const auto& op : plan.ops)
    if (op_kind_is_collective(op.kind))
      for (int c = 0; c < op.channels; ++c) m.channel_stages(op, c);
  return m.stats();
}

}  // namespace redsim::scalable
