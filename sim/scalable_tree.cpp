// The scalable fidelity's tree allreduce (NCCL's tree, collectives/shapes.h). The exact fidelity
// pipelines chunks up the tree and down again at once; here a channel is three stages:
//   1. the first chunk up, as a dataflow: an edge starts once its source has heard from all its
//      children and reduced their chunks, so the stage lasts the heaviest leaf-to-root path;
//   2. the other P-1 chunks, up and down at once, one flow per edge and direction;
//   3. the last chunk down, as a dataflow from the root to the leaves.
// Trees beyond kMaxDataflowFlows edges are computed instead: each edge's rate is its max-min fair
// share among the edges of its wave level (stages 1 and 3) or of its direction (stage 2).
#include <algorithm>
#include <map>

#include "collectives/shapes.h"
#include "sim/scalable_model.h"
#include "sim/sim_context.h"

namespace redsim::scalable {

const Model::Tree& Model::tree(int channel, int channels) {
  auto key = std::make_pair(channel, channels);
  auto it = trees_.find(key);
  if (it != trees_.end()) return *it->second;
  auto shape_key = tree_shape_key(cluster_, channel, channels);
  if (auto same = tree_by_shape_.find(shape_key); same != tree_by_shape_.end())
    return *trees_.emplace(key, &same->second).first->second;
  const auto shape = tree_shape(cluster_, channel, channels);
  Tree t;
  t.rank = shape.order;
  const auto n = t.rank.size();
  std::vector<int> pos(n);
  for (std::size_t q = 0; q < n; ++q) pos[static_cast<std::size_t>(t.rank[q])] = static_cast<int>(q);
  t.parent.assign(n, -1);
  t.kids.assign(n, {});
  // A tree too large for a dataflow of SimGrid flows is computed: its edges are described, not
  // interned as routes (no host, no table entry).
  const bool flows = static_cast<int>(n) - 1 <= kMaxDataflowFlows;
  if (flows) {
    t.up.assign(n, 0);
    t.down.assign(n, 0);
  } else {
    t.up_edge.assign(n, {});
    t.down_edge.assign(n, {});
    t.edge_links.reserve(8 * n);  // a few links per edge and direction
  }
  t.depth.assign(n, 0);
  t.height.assign(n, 0);
  for (std::size_t q = 1; q < n; ++q) {
    const int p = pos[static_cast<std::size_t>(shape.parent[static_cast<std::size_t>(t.rank[q])])];
    t.parent[q] = p;
    t.kids[static_cast<std::size_t>(p)].push_back(static_cast<int>(q));
    t.depth[q] = t.depth[static_cast<std::size_t>(p)] + 1;
    const int child = t.rank[q], parent = t.rank[static_cast<std::size_t>(p)];
    if (flows) {
      t.up[q] = routes_.between(child, parent, unfolded_);
      t.down[q] = routes_.between(parent, child, unfolded_);
    } else {
      t.up_edge[q] = routes_.describe_between(child, parent, unfolded_, t.edge_links);
      t.down_edge[q] = routes_.describe_between(parent, child, unfolded_, t.edge_links);
    }
  }
  for (std::size_t q = n; q-- > 1;)
    t.height[static_cast<std::size_t>(t.parent[q])] = std::max(t.height[static_cast<std::size_t>(t.parent[q])], t.height[q] + 1);
  const Tree* built = &tree_by_shape_.emplace(std::move(shape_key), std::move(t)).first->second;
  return *trees_.emplace(key, built).first->second;
}

std::vector<Stage> Model::tree_stages(const PlanOp& op, int c, std::int64_t bytes) {
  const Tree& t = tree(c, op.channels);
  const int n = static_cast<int>(t.rank.size());
  if (n - 1 > kMaxDataflowFlows) return computed_tree_stages(op, t, bytes);
  const auto& m = mech(op);
  const int P = m.chunks(bytes);
  const auto first = split_piece(bytes, P, 0), last = split_piece(bytes, P, P - 1);
  const double chunk = static_cast<double>(bytes) / P;
  auto reduce_s = [&](int q) { return chunk * static_cast<double>(t.kids[static_cast<std::size_t>(q)].size()) * m.reduce_s_per_byte; };
  Stage up_wave, steady, down_wave;
  for (int q = 1; q < n; ++q) {
    const int p = t.parent[static_cast<std::size_t>(q)];
    Flow f;  // q's chunk to its parent, once q has its children's and has reduced them
    f.route = t.up[static_cast<std::size_t>(q)];
    f.bytes = stream_message_bytes(m, routes_.hw(f.route), bytes, P, first, false);
    f.round_extra_s = reduce_s(p);
    f.post_delay_s = f.round_extra_s;
    int k = 0;
    for (int kid : t.kids[static_cast<std::size_t>(q)]) f.after[k++] = kid - 1;
    // On a network hop the chunk leaves with the step it goes in. Gathering that step takes
    // none of the first chunk's time: the step's later pieces come at the pace the leaves set,
    // which the steady stage charges once, and after a network hop a step is passed on at the
    // links' rate (sim/stream_edge.h, StreamSend).
    f.after_extra_s = reduce_s(q);
    apply_protocol(f, m, 1);
    // The first chunk crosses at the links' rate: the cap is the pace of the chunks behind it,
    // charged once (sim/stream_edge.h, StreamRecv::take; Simple: tree_allreduce.cpp).
    f.min_transfer_s = 0;
    up_wave.flows.push_back(f);
    Flow d;  // the parent's last chunk to q, once the parent has it
    d.route = t.down[static_cast<std::size_t>(q)];
    d.bytes = stream_message_bytes(m, routes_.hw(d.route), bytes, P, last, true);
    if (p > 0) d.after[0] = p - 1;
    apply_protocol(d, m, 1);
    d.min_transfer_s = 0;  // as on the way up
    down_wave.flows.push_back(d);
    if (P > 1)
      for (bool up : {true, false}) {
        Flow s;
        s.route = up ? t.up[static_cast<std::size_t>(q)] : t.down[static_cast<std::size_t>(q)];
        s.bytes = bytes - stream_message_bytes(m, routes_.hw(s.route), bytes, P, up ? first : last, !up);
        s.rounds = P - 1;
        s.round_extra_s = up ? reduce_s(p) : 0.0;
        s.post_delay_s = (P - 1) * s.round_extra_s;
        apply_protocol(s, m, 1, false);
        overlap_rest_latencies(s, m, P);
        steady.flows.push_back(s);
      }
  }
  up_wave.dataflow = down_wave.dataflow = true;
  steady.with_previous = m.streams();
  up_wave.tree_phase = 1;
  steady.tree_phase = 3;
  down_wave.tree_phase = 2;
  std::vector<Stage> stages{std::move(up_wave)};
  if (P > 1) stages.push_back(std::move(steady));
  stages.push_back(std::move(down_wave));
  return stages;
}

const Model::TreeRates& Model::tree_rates(const Tree& t) {
  auto it = tree_rates_.find(&t);
  if (it != tree_rates_.end()) return it->second;
  const int n = static_cast<int>(t.rank.size());
  TreeRates r;
  // Each edge's rate among the edges of its wave level (up: by height, down: by depth).
  auto level_rates = [&](bool up) {
    std::map<int, std::vector<int>> by_level;
    for (int q = 1; q < n; ++q) by_level[up ? t.height[static_cast<std::size_t>(q)] : t.depth[static_cast<std::size_t>(q)]].push_back(q);
    std::vector<double> rate(static_cast<std::size_t>(n), 0.0);
    for (const auto& [level, qs] : by_level) {
      std::vector<EdgeLinks> edges;
      for (int q : qs) edges.push_back((up ? t.up_edge : t.down_edge)[static_cast<std::size_t>(q)]);
      const auto got = fair_rates(routes_, edges, t.edge_links, false);
      for (std::size_t i = 0; i < qs.size(); ++i) rate[static_cast<std::size_t>(qs[i])] = got[i];
    }
    return rate;
  };
  r.up_level = level_rates(true);
  r.down_level = level_rates(false);
  if (n > 1) {
    r.up_all = fair_rates(routes_, std::vector<EdgeLinks>(t.up_edge.begin() + 1, t.up_edge.end()), t.edge_links, false);
    r.down_all = fair_rates(routes_, std::vector<EdgeLinks>(t.down_edge.begin() + 1, t.down_edge.end()), t.edge_links, false);
  }
  return tree_rates_.emplace(&t, std::move(r)).first->second;
}

std::vector<Stage> Model::computed_tree_stages(const PlanOp& op, const Tree& t, std::int64_t bytes) {
  const int n = static_cast<int>(t.rank.size());
  const auto& m = mech(op);
  const int P = m.chunks(bytes);
  const double chunk = static_cast<double>(bytes) / P;
  const auto first = split_piece(bytes, P, 0), last = split_piece(bytes, P, P - 1);
  const double wire = m.wire_factor;
  const TreeRates& rates = tree_rates(t);
  const auto& up_rate = rates.up_level;
  const auto& down_rate = rates.down_level;
  // A chunk over one edge: the route's latency, or the hop's protocol latency for the first
  // chunk (the later ones stream behind it; with LL and LL128 without waiting a latency each),
  // and its bytes at the edge's rate or the cap (the first chunk at the edge's rate: the cap is
  // the later chunks' pace, as in tree_stages).
  auto hop = [&](const EdgeLinks& e, double payload, double rate, bool first_chunk = true) {
    const double lat = e.latency_s;
    const double h = first_chunk ? std::max(lat, m.hop_latency(static_cast<nccl::Hw>(e.hw))) : m.streams() ? 0.0 : lat;
    // A later chunk's hop latency passes while the sender waits for the cap (CapPacer).
    const double linked = h + payload * wire / rate;
    return m.channel_cap_Bps > 0 && !first_chunk ? std::max(linked, payload / m.channel_cap_Bps) : linked;
  };
  // As in tree_stages: over a network hop the first chunk up leaves with the whole step it goes
  // in, and the last chunk down arrives with its step, passed on at the links' rate
  // (sim/stream_edge.h).
  auto message = [&](const EdgeLinks& e, std::int64_t piece, bool down) { return static_cast<double>(stream_message_bytes(m, e.hw, bytes, P, piece, down)); };
  // Up: a position is done once its children are and it has reduced them and sent its chunk.
  std::vector<double> done(static_cast<std::size_t>(n), 0.0), arrive(static_cast<std::size_t>(n), 0.0);
  double up_wave = 0, down_wave = 0, round = 0;
  for (int q = n - 1; q >= 0; --q) {
    double ready = 0;
    for (int k : t.kids[static_cast<std::size_t>(q)]) ready = std::max(ready, done[static_cast<std::size_t>(k)]);
    ready += chunk * static_cast<double>(t.kids[static_cast<std::size_t>(q)].size()) * m.reduce_s_per_byte;
    if (q == 0) {
      up_wave = ready;
      continue;
    }
    const auto& e = t.up_edge[static_cast<std::size_t>(q)];
    done[static_cast<std::size_t>(q)] = ready + hop(e, message(e, first, false), up_rate[static_cast<std::size_t>(q)]);
  }
  // Down: the last chunk reaches q once its parent has it and has passed its step on.
  for (int q = 1; q < n; ++q) {
    const int p = t.parent[static_cast<std::size_t>(q)];
    const auto& e = t.down_edge[static_cast<std::size_t>(q)];
    arrive[static_cast<std::size_t>(q)] = arrive[static_cast<std::size_t>(p)] + hop(e, message(e, last, true), down_rate[static_cast<std::size_t>(q)]);
    down_wave = std::max(down_wave, arrive[static_cast<std::size_t>(q)]);
  }
  if (P > 1) {
    // The other chunks: every edge of a direction at once; a round lasts its slowest edge.
    for (bool up : {true, false}) {
      const auto& ids = up ? t.up_edge : t.down_edge;
      const auto& r = up ? rates.up_all : rates.down_all;
      for (int q = 1; q < n; ++q) {
        const auto& e = ids[static_cast<std::size_t>(q)];
        const double rest = (static_cast<double>(bytes) - message(e, up ? first : last, !up)) / (P - 1);
        round = std::max(round, hop(e, rest, r[static_cast<std::size_t>(q - 1)], false));
      }
    }
  }
  Stage a, b, d;
  a.fixed_s = up_wave;
  a.tree_phase = 1;
  a.dataflow = true;
  b.fixed_s = (P - 1) * round;
  b.tree_phase = 3;
  d.fixed_s = down_wave;
  d.tree_phase = 2;
  d.dataflow = true;
  d.fixed_round_s.assign(arrive.begin() + 1, arrive.end());
  std::vector<Stage> stages{std::move(a)};
  if (P > 1) stages.push_back(std::move(b));
  stages.push_back(std::move(d));
  return stages;
}

void Model::merge_tree_ends(const PlanOp& op, int c, const std::vector<Stage>& stages, const ChannelRun& run,
                            std::vector<double>& end_s) {
  // A rank is done once the last chunk has reached it and it has passed it to its children.
  const Tree& t = tree(c, op.channels);
  const int n = static_cast<int>(t.rank.size());
  const std::size_t k = stages.size() - 1;  // the down wave
  const double begin = k == 0 ? run.start_s : run.stage_end_s[k - 1];
  const double end = run.stage_end_s.back();
  std::vector<double> arrival(static_cast<std::size_t>(n), 0.0);
  for (int q = 1; q < n; ++q) arrival[static_cast<std::size_t>(q)] = run.round_s[k][static_cast<std::size_t>(q - 1)];
  for (int q = 0; q < n; ++q) {
    double through = arrival[static_cast<std::size_t>(q)];
    for (int kid : t.kids[static_cast<std::size_t>(q)]) through = std::max(through, arrival[static_cast<std::size_t>(kid)]);
    auto& e = end_s[static_cast<std::size_t>(t.rank[static_cast<std::size_t>(q)])];
    e = std::max(e, std::min(begin + through, end));
  }
}

void Model::add_tree_rank_bytes(const PlanOp& op, int c, std::int64_t bytes, std::vector<std::int64_t>& sent,
                                std::vector<std::int64_t>& received) {
  // Up: to the parent, from each child; down: from the parent, to each child.
  const Tree& t = tree(c, op.channels);
  for (std::size_t q = 0; q < t.rank.size(); ++q) {
    const auto links = static_cast<std::int64_t>(t.kids[q].size()) + (q > 0 ? 1 : 0);
    sent[static_cast<std::size_t>(t.rank[q])] += links * bytes;
    received[static_cast<std::size_t>(t.rank[q])] += links * bytes;
  }
}

}  // namespace redsim::scalable
