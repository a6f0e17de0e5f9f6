#include "sim/scalable_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_map>

#include "core/pipeline.h"
#include "sim/ring_order.h"
#include "sim/ring_pass.h"
#include "sim/sim_context.h"
#include "sim/tree_allreduce.h"

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

int tree_depth(int q) {
  int d = 0;
  for (int x = q + 1; x > 1; x >>= 1) ++d;
  return d;
}

// Height of heap position q in a heap of n: how many levels its deepest descendant lies below it.
int tree_height(int q, int n) {
  int h = 0;
  for (std::int64_t first = 2 * static_cast<std::int64_t>(q) + 1; first < n; first = 2 * first + 1) ++h;
  return h;
}

}  // namespace

double round_time_s(const Flow& flow, double route_latency_s, double duration_s) {
  const double transfer = std::max(0.0, duration_s - route_latency_s);
  return route_latency_s + transfer / std::max(1, flow.rounds) + flow.round_extra_s;
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

const Model::Tree& Model::tree(std::uint32_t stream, int channel, int channels) {
  auto key = std::make_tuple(stream, channel, channels);
  auto it = trees_.find(key);
  if (it != trees_.end()) return it->second;
  Tree t;
  t.order = tree_order(cluster_, channel, channels);
  const int n = static_cast<int>(t.order.size());
  t.pos.assign(static_cast<std::size_t>(n), 0);
  for (int i = 0; i < n; ++i) t.pos[static_cast<std::size_t>(t.order[static_cast<std::size_t>(i)])] = i;
  t.up.assign(static_cast<std::size_t>(n), 0);
  t.down.assign(static_cast<std::size_t>(n), 0);
  t.up_paced.assign(static_cast<std::size_t>(n), 0);
  t.down_paced.assign(static_cast<std::size_t>(n), 0);
  // A binary heap has no translation symmetry: trees run on the unfolded links. Paced copies,
  // one per edge, stream and channel, so that flows never share a pace link.
  for (int q = 1; q < n; ++q) {
    const int child = t.order[static_cast<std::size_t>(q)], parent = t.order[static_cast<std::size_t>((q - 1) / 2)];
    t.up[static_cast<std::size_t>(q)] = routes_.between(child, parent, unfolded_);
    t.down[static_cast<std::size_t>(q)] = routes_.between(parent, child, unfolded_);
    if (n - 1 <= kMaxDataflowFlows) {  // larger trees are computed, not run as flows
      t.up_paced[static_cast<std::size_t>(q)] = routes_.between(child, parent, unfolded_, true);
      t.down_paced[static_cast<std::size_t>(q)] = routes_.between(parent, child, unfolded_, true);
    }
  }
  if (n > 1) {
    t.up_rate = fair_rates(routes_, std::vector<std::uint32_t>(t.up.begin() + 1, t.up.end()), false);
    t.down_rate = fair_rates(routes_, std::vector<std::uint32_t>(t.down.begin() + 1, t.down.end()), false);
  }
  return trees_.emplace(key, std::move(t)).first->second;
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
    if (op.kind == OpKind::allreduce && op.algorithm == Algorithm::tree) {
      tree(op.stream, c, op.channels);
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
      st.flows.push_back(fl);
    }
  } else {
    for (std::size_t p = 0; p < P; ++p) {
      Flow fl;
      fl.route = routes[p];
      fl.bytes = stay_rs[p] + stay_ag[p];
      fl.rounds = steps;
      fl.post_delay_s = (steps - 1) * routes_.latency_s(fl.route) + static_cast<double>(stay_rs[p]) * reduce_s_per_byte_;
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

std::pair<double, double> Model::tree_round(Tree& t, std::int64_t chunk) {
  auto it = t.round_s.find(chunk);
  if (it != t.round_s.end()) return it->second;
  std::pair<double, double> r{0, 0};
  const auto c = static_cast<double>(chunk);
  if (plan_.world_size - 1 <= kMaxDataflowFlows) {
    r.first = fluid_round_s(routes_, std::vector<std::uint32_t>(t.up.begin() + 1, t.up.end()), c);
    r.second = fluid_round_s(routes_, std::vector<std::uint32_t>(t.down.begin() + 1, t.down.end()), c);
  } else {
    // Large trees: the slowest edge at its (unweighted) fair rate among all the phase's edges.
    for (std::size_t q = 1; q < t.up.size(); ++q) {
      r.first = std::max(r.first, routes_.latency_s(t.up[q]) + c / t.up_rate[q - 1]);
      r.second = std::max(r.second, routes_.latency_s(t.down[q]) + c / t.down_rate[q - 1]);
    }
  }
  return t.round_s.emplace(chunk, r).first->second;
}

std::pair<bool, bool> Model::trees_in_phase(std::uint32_t stream, int channels) {
  auto key = std::make_pair(stream, channels);
  auto it = trees_in_phase_.find(key);
  if (it != trees_in_phase_.end()) return it->second;
  std::pair<bool, bool> locked{channels > 1, channels > 1};
  if (channels > 1) {
    for (int phase = 0; phase < 2; ++phase) {
      // Per channel: flows per link, and the links where its demand per unit of capacity peaks.
      std::vector<std::unordered_map<std::uint64_t, int>> count(static_cast<std::size_t>(channels));
      for (int c = 0; c < channels; ++c) {
        const auto& t = tree(stream, c, channels);
        for (std::size_t q = 1; q < t.up.size(); ++q)
          for (const auto& l : routes_.routes()[phase == 0 ? t.up[q] : t.down[q]]) count[static_cast<std::size_t>(c)][l.key()] += 1;
      }
      bool shared = false;
      for (int c = 0; c < channels && !shared; ++c) {
        double peak = 0;
        for (const auto& [key, n] : count[static_cast<std::size_t>(c)])
          peak = std::max(peak, n / link_bandwidth_Bps(cluster_, LinkRef::from_key(key)));
        for (const auto& [key, n] : count[static_cast<std::size_t>(c)]) {
          if (n / link_bandwidth_Bps(cluster_, LinkRef::from_key(key)) < peak * (1 - 1e-9)) continue;
          for (int o = 0; o < channels && !shared; ++o)
            shared = o != c && count[static_cast<std::size_t>(o)].count(key) > 0;
        }
      }
      (phase == 0 ? locked.first : locked.second) = shared;
    }
  }
  return trees_in_phase_.emplace(key, locked).first->second;
}

const std::vector<std::vector<double>>& Model::joint_tree_rates(std::uint32_t stream, int channels, bool up) {
  auto key = std::make_tuple(stream, channels, up);
  auto it = joint_rates_.find(key);
  if (it != joint_rates_.end()) return it->second;
  std::vector<std::uint32_t> all;
  for (int c = 0; c < channels; ++c) {
    const auto& t = tree(stream, c, channels);
    all.insert(all.end(), (up ? t.up : t.down).begin() + 1, (up ? t.up : t.down).end());
  }
  const auto rate = fair_rates(routes_, all, false);
  std::vector<std::vector<double>> per(static_cast<std::size_t>(channels));
  const std::size_t edges = all.size() / static_cast<std::size_t>(channels);
  for (std::size_t c = 0; c < per.size(); ++c)
    per[c].assign(rate.begin() + static_cast<std::ptrdiff_t>(c * edges), rate.begin() + static_cast<std::ptrdiff_t>((c + 1) * edges));
  return joint_rates_.emplace(key, std::move(per)).first->second;
}

std::vector<Stage> Model::computed_tree_stages(const PlanOp& op, int c, Tree& t, std::int64_t bytes) {
  const int n = plan_.world_size;
  const int P = pipeline_chunks(bytes);
  const auto first_chunk = static_cast<double>(split_piece(bytes, P, 0));
  const double chunk = static_cast<double>(bytes) / P;
  auto kids = [n](int q) { return (2 * q + 1 < n ? 1 : 0) + (2 * q + 2 < n ? 1 : 0); };
  if (t.up_level_rate.empty()) {
    // Each wave level's edges share the links among themselves.
    for (int phase = 0; phase < 2; ++phase) {
      std::map<int, std::vector<int>> by_level;
      for (int q = 1; q < n; ++q) by_level[phase == 0 ? tree_height(q, n) : tree_depth(q)].push_back(q);
      auto& out = phase == 0 ? t.up_level_rate : t.down_level_rate;
      out.assign(static_cast<std::size_t>(n - 1), 0.0);
      for (const auto& [level, qs] : by_level) {
        std::vector<std::uint32_t> ids;
        for (int q : qs) ids.push_back((phase == 0 ? t.up : t.down)[static_cast<std::size_t>(q)]);
        const auto r = fair_rates(routes_, ids, false);
        for (std::size_t i = 0; i < qs.size(); ++i) out[static_cast<std::size_t>(qs[i] - 1)] = r[i];
      }
    }
  }
  const auto locked = trees_in_phase(op.stream, op.channels);
  std::vector<Stage> stages;
  for (int phase = 1; phase <= 2; ++phase) {
    const bool up = phase == 1;
    const auto& ids = up ? t.up : t.down;
    const auto& level_rate = up ? t.up_level_rate : t.down_level_rate;
    // The first chunk: the critical path through the tree with each edge at its level's rate.
    std::vector<double> done(static_cast<std::size_t>(n), 0.0);  // up: q has sent; down: q has received
    double wave = 0;
    if (up) {
      for (int q = n - 1; q >= 0; --q) {
        double ready = 0;
        for (int k = 2 * q + 1; k <= 2 * q + 2 && k < n; ++k) ready = std::max(ready, done[static_cast<std::size_t>(k)]);
        ready += kids(q) > 0 ? chunk * kids(q) * reduce_s_per_byte_ : 0.0;
        if (q == 0) {
          wave = ready;
          break;
        }
        const auto id = ids[static_cast<std::size_t>(q)];
        done[static_cast<std::size_t>(q)] = ready + routes_.latency_s(id) + first_chunk / level_rate[static_cast<std::size_t>(q - 1)];
      }
    } else {
      for (int q = 1; q < n; ++q) {
        const auto id = ids[static_cast<std::size_t>(q)];
        done[static_cast<std::size_t>(q)] = done[static_cast<std::size_t>((q - 1) / 2)] + routes_.latency_s(id) +
                                            first_chunk / level_rate[static_cast<std::size_t>(q - 1)];
        wave = std::max(wave, done[static_cast<std::size_t>(q)]);
      }
    }
    Stage w;
    w.fixed_s = wave;
    w.tree_phase = phase;
    w.level = 0;
    w.dataflow = true;
    if (!up) w.fixed_round_s.assign(done.begin() + 1, done.end());  // arrival of each q >= 1
    stages.push_back(std::move(w));
    if (P > 1) {
      // The other P-1 chunks: rounds of the channel alone (paced channels), or with every
      // channel's edges sharing the links (channels locked in phase).
      const auto rest_chunk = split_piece(bytes, P, 1);
      double round = 0;
      if (up ? locked.first : locked.second) {
        const auto& joint = joint_tree_rates(op.stream, op.channels, up)[static_cast<std::size_t>(c)];
        for (int q = 1; q < n; ++q)
          round = std::max(round, routes_.latency_s(ids[static_cast<std::size_t>(q)]) + rest_chunk / joint[static_cast<std::size_t>(q - 1)]);
      } else {
        const auto r = tree_round(t, rest_chunk);
        round = up ? r.first : r.second;
      }
      double extra = 0;
      if (up)
        for (int q = 0; q < n; ++q) extra = std::max(extra, chunk * kids(q) * reduce_s_per_byte_);
      Stage rest;
      rest.fixed_s = (P - 1) * (round + extra);
      rest.tree_phase = phase;
      stages.push_back(std::move(rest));
    }
  }
  return stages;
}

void Model::pace(Stage& st, double round_s) const {
  // Each flow is capped at one chunk per round of its channel alone (the round: its edges'
  // lockstep round, plus the slowest reduction), its latency inside the round.
  double extra = 0;
  for (const auto& f : st.flows) extra = std::max(extra, f.round_extra_s);
  const double round = round_s + extra;
  st.paced = true;
  for (auto& f : st.flows) {
    const double span = f.rounds * round - routes_.latency_s(f.route);
    f.rate_cap_Bps = span > 0 && f.bytes > 0 ? static_cast<double>(f.bytes) / span : 0.0;
    f.post_delay_s = 0;
  }
}

std::vector<Stage> Model::channel_stages(const PlanOp& op, int c) {
  std::vector<Stage> stages;
  const int n = plan_.world_size;
  if (n < 2) return stages;
  const std::int64_t bytes = split_piece(op.bytes, op.channels, c);
  const int dpn = cluster_.devices_per_node, nodes = cluster_.nodes;

  if (op.kind == OpKind::allreduce && op.algorithm == Algorithm::tree && n - 1 > kMaxDataflowFlows) {
    stages = computed_tree_stages(op, c, const_cast<Tree&>(tree(op.stream, c, op.channels)), bytes);
  } else if (op.kind == OpKind::allreduce && op.algorithm == Algorithm::tree) {
    auto& t = const_cast<Tree&>(tree(op.stream, c, op.channels));
    const int P = pipeline_chunks(bytes);
    const std::int64_t first_chunk = split_piece(bytes, P, 0);
    const double chunk = static_cast<double>(bytes) / P;
    const auto locked = trees_in_phase(op.stream, op.channels);
    for (int phase = 1; phase <= 2; ++phase) {
      const bool up = phase == 1;
      const bool paced = !(up ? locked.first : locked.second);
      // The first chunk as a dataflow: up, an edge carries it once its child has heard from
      // its own children and reduced; down, once the parent has received it.
      Stage wave;
      Stage rest;
      for (int q = 1; q < n; ++q) {
        const int parent = (q - 1) / 2;
        const int kids = (2 * parent + 1 < n ? 1 : 0) + (2 * parent + 2 < n ? 1 : 0);
        Flow f;
        f.route = up ? t.up[static_cast<std::size_t>(q)] : t.down[static_cast<std::size_t>(q)];
        f.round_extra_s = up ? chunk * kids * reduce_s_per_byte_ : 0.0;  // the parent reduces its children's chunks
        f.bytes = first_chunk;
        f.rounds = 1;
        f.post_delay_s = f.round_extra_s;
        f.group = 0;
        if (up) {
          // Flow q-1 carries q's chunk up once q's children (flows 2q, 2q+1) have delivered
          // theirs and q has reduced them.
          const int own_kids = (2 * q + 1 < n ? 1 : 0) + (2 * q + 2 < n ? 1 : 0);
          if (2 * q + 1 < n) f.after[0] = 2 * q;
          if (2 * q + 2 < n) f.after[1] = 2 * q + 1;
          f.after_extra_s = chunk * own_kids * reduce_s_per_byte_;
        } else if (parent > 0) {
          f.after[0] = parent - 1;  // down: once the parent has received it
        }
        wave.flows.push_back(f);
        if (P > 1) {
          if (paced) f.route = up ? t.up_paced[static_cast<std::size_t>(q)] : t.down_paced[static_cast<std::size_t>(q)];
          f.bytes = bytes - first_chunk;
          f.rounds = P - 1;
          f.post_delay_s = (P - 2) * routes_.latency_s(f.route) + (P - 1) * f.round_extra_s;
          rest.flows.push_back(f);
        }
      }
      wave.tree_phase = phase;
      wave.level = 0;
      wave.dataflow = true;
      stages.push_back(std::move(wave));
      if (P > 1) {
        rest.tree_phase = phase;
        // Channels that share a bottleneck lock into phase: their flows then share links round
        // by round, each round paying its latency (post delays as set above). Otherwise each
        // channel is paced at its own round.
        if (paced) {
          const auto round = tree_round(t, split_piece(bytes, P, 1));
          pace(rest, up ? round.first : round.second);
        }
        stages.push_back(std::move(rest));
      }
    }
  } else if (op.kind == OpKind::allreduce && op.algorithm == Algorithm::hierarchical) {
    std::vector<std::int64_t> intra_chunks;
    for (int j = 0; j < dpn; ++j) intra_chunks.push_back(split_piece(bytes, dpn, j));
    RingFamily intra;
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
    const int P = pipeline_chunks(bytes);
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
  if (op.kind == OpKind::allreduce && op.algorithm == Algorithm::tree) {
    // A rank is done once the last chunk has reached it and it has passed it on to its
    // children: the down wave's arrival times, then the other P-1 chunks (the down phase's
    // last stage).
    const auto& t = tree(op.stream, c, op.channels);
    double wave_start = run.start_s, rest_s = 0;
    std::vector<double> arrival(static_cast<std::size_t>(n), 0.0);  // per position, from wave_start
    for (std::size_t k = 0; k < stages.size(); ++k) {
      const double begin = k == 0 ? run.start_s : run.stage_end_s[k - 1];
      if (stages[k].tree_phase != 2) continue;
      if (stages[k].level < 0) {
        rest_s = run.stage_end_s[k] - begin;
      } else {
        wave_start = begin;
        for (int q = 1; q < n; ++q) arrival[static_cast<std::size_t>(q)] = run.round_s[k][static_cast<std::size_t>(q - 1)];
      }
    }
    for (int q = 0; q < n; ++q) {
      double through = arrival[static_cast<std::size_t>(q)];
      for (int k = 2 * q + 1; k <= 2 * q + 2 && k < n; ++k) through = std::max(through, arrival[static_cast<std::size_t>(k)]);
      merge(t.order[static_cast<std::size_t>(q)], wave_start + through + rest_s);
    }
    return;
  }
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
  if (op.kind == OpKind::allreduce && op.algorithm == Algorithm::tree) {
    const auto& t = tree(op.stream, c, op.channels);
    for (int q = 0; q < n; ++q) {
      const std::int64_t kids = (2 * q + 1 < n ? 1 : 0) + (2 * q + 2 < n ? 1 : 0);
      const std::int64_t parent = q > 0 ? 1 : 0;
      // Up: to the parent, from each child; down: from the parent, to each child.
      add(t.order[static_cast<std::size_t>(q)], (parent + kids) * bytes, (kids + parent) * bytes);
    }
    return;
  }
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
