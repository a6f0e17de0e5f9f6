#include "sim/scalable_model.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "collectives/shapes.h"
#include "sim/ring_pass.h"
#include "sim/sim_context.h"

namespace redsim::scalable {
namespace {

int mod(int a, int n) { return ((a % n) + n) % n; }

}  // namespace

std::int64_t stream_message_bytes(const Mechanics& m, int hw, std::int64_t bytes, int chunks, std::int64_t piece, bool last) {
  if (m.stream_net_step_bytes <= 0 || hw != static_cast<int>(nccl::Hw::net) || chunks <= 1) return piece;
  const int group = m.stream_group(true, std::max<std::int64_t>(1, split_piece(bytes, chunks, 0)));
  const int messages = (chunks + group - 1) / group;
  const int in_message = last ? chunks - group * (messages - 1) : std::min(group, chunks);
  return static_cast<std::int64_t>(static_cast<double>(bytes) * in_message / chunks);
}

double stream_message_extra_s(const Mechanics& m, int hw, std::int64_t bytes, int chunks, std::int64_t piece, bool last) {
  if (m.channel_cap_Bps <= 0) return 0.0;
  const std::int64_t message = stream_message_bytes(m, hw, bytes, chunks, piece, last);
  return static_cast<double>(message - piece) / m.channel_cap_Bps;
}

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
  const auto hw = static_cast<nccl::Hw>(routes_.hw(f.route));
  const double hop = m.hop_latency(hw);
  const int rounds = f.rounds * round_factor;
  f.hop_extra_s = hop_each_round ? std::max(0.0, hop - lat) : 0.0;
  // Each added round pays the route's latency; every round pays the hop's extra.
  f.post_delay_s += (rounds - f.rounds) * lat + rounds * f.hop_extra_s;
  if (m.hop_cap_Bps(hw) > 0) f.min_transfer_s = m.hop_cap_time_s(hw, f.bytes, rounds);
  f.bytes = wire_bytes(m, f.bytes);
  f.rounds = rounds;
}

void Model::overlap_rest_latencies(Flow& f, const Mechanics& m, int P) const {
  const double lat = routes_.latency_s(f.route), rest_s = rest_latencies(m, P) * lat;
  if (m.channel_cap_Bps <= 0 || m.streams()) {
    f.post_delay_s += rest_s;  // no cap: the latencies follow one another
    return;
  }
  // The chunks leave at the cap's pace and each crosses at the link's rate: the flow lasts its
  // chunks' time at the cap, or their transfers with a latency each, whichever is longer. The
  // first of them leaves a cap-time after the wave's chunk did, which the wave's hop latency
  // (in the wave) has already covered.
  f.overlap_latency_s = rest_s;
  f.overlap_capped = false;
  f.min_transfer_s = std::max(0.0, f.min_transfer_s - first_hop_s(m, f.route));
}

double Model::first_hop_s(const Mechanics& m, std::uint32_t route) const {
  return std::max(routes_.latency_s(route), m.hop_latency(static_cast<nccl::Hw>(routes_.hw(route))));
}

Model::Model(const Plan& plan, const ClusterSpec& cluster, bool allow_fold)
    : plan_(plan), cluster_(cluster), fold_(choose_fold(cluster, allow_fold)), wave_fold_(fold_),
      unfolded_(choose_fold(cluster, false)), routes_(cluster) {
  if (wave_fold_.period_nodes == 1 && cluster.nodes > 1) {
    wave_fold_.period_nodes = 2;
    wave_fold_.period_ranks = 2 * cluster.devices_per_node;
  }
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
    } else if (op.kind == OpKind::broadcast && op.algorithm == Algorithm::binomial) {
      // Routes exist before the platform is built from them.
      const auto t = binomial_tree(plan_.world_size, op.root);
      for (int r = 0; r < plan_.world_size; ++r)
        for (int k : t.children[static_cast<std::size_t>(r)]) routes_.between(r, k, unfolded_);
    } else if (op.kind == OpKind::reduce || op.kind == OpKind::broadcast) {
      chain_rest_routes(c, op.channels);
    } else if (op.algorithm == Algorithm::pat) {
      if (c == 0) pat_routes();
    } else {
      world_ring(c, op.channels);
    }
  }
}

const std::vector<std::uint32_t>& Model::chain_rest_routes(int channel, int channels) {
  const auto key = std::make_pair(channel, channels);
  if (auto it = chain_rest_routes_.find(key); it != chain_rest_routes_.end()) return it->second;
  std::vector<std::uint32_t> ids;
  for (const auto id : world_ring(channel, channels).routes) {
    const bool net = routes_.hw(id) == static_cast<int>(nccl::Hw::net);
    ids.push_back(net ? routes_.intern(Route(routes_.routes()[id]), true) : id);
  }
  return chain_rest_routes_.emplace(key, std::move(ids)).first->second;
}

std::vector<std::int64_t> Model::world_chunks(const PlanOp& op, int channel, const WorldRing& wr) {
  const int n = plan_.world_size;
  std::vector<std::int64_t> chunks(static_cast<std::size_t>(n));
  if (op.kind == OpKind::allreduce) return ring_allreduce_chunks(mech(op), op.bytes, op.channels, channel, n);
  const auto shards = op_shards(op, n);
  std::vector<std::int64_t> channel_shards(shards.size());
  for (std::size_t r = 0; r < shards.size(); ++r) channel_shards[r] = split_piece(shards[r], op.channels, channel);
  return chunks_for_shards(wr.ring, channel_shards);
}

std::vector<Stage> Model::channel_stages(const PlanOp& op, int c) {
  std::vector<Stage> stages;
  if (plan_.world_size < 2) return stages;
  const std::int64_t bytes = split_piece(op.bytes, op.channels, c);
  const bool allreduce = op.kind == OpKind::allreduce;
  if (allreduce && op.algorithm == Algorithm::nvls) stages = nvls_stages(op, c);
  else if (allreduce && op.algorithm == Algorithm::nvls_tree) stages = nvls_tree_stages(op, c, bytes);
  else if (allreduce && op.algorithm == Algorithm::tree) stages = tree_stages(op, c, bytes);
  else if (allreduce && op.algorithm == Algorithm::hierarchical) stages = hierarchical_stages(op, c, bytes);
  else if (op.kind == OpKind::broadcast && op.algorithm == Algorithm::binomial) stages = binomial_stages(op, bytes);
  else if (op.kind == OpKind::reduce || op.kind == OpKind::broadcast) stages = chain_stages(op, c, bytes);
  else if (op.algorithm == Algorithm::pat) stages = pat_stages(op, c);
  else stages = world_ring_stages(op, c);
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
  if ((op.kind == OpKind::reduce || op.kind == OpKind::broadcast) && op.algorithm != Algorithm::binomial) {
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
  if (op.kind == OpKind::allreduce && op.algorithm == Algorithm::nvls) return add_nvls_rank_bytes(op, c, sent, received);
  if (op.kind == OpKind::allreduce && op.algorithm == Algorithm::nvls_tree) return add_nvls_tree_rank_bytes(op, c, sent, received);
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
  if (op.kind == OpKind::broadcast && op.algorithm == Algorithm::binomial) {
    // Every rank but the root receives the buffer once; each sends it to each of its children.
    const auto t = binomial_tree(n, op.root);
    for (int r = 0; r < n; ++r)
      add(r, bytes * static_cast<std::int64_t>(t.children[static_cast<std::size_t>(r)].size()), r == op.root ? 0 : bytes);
    return;
  }
  if (op.algorithm == Algorithm::pat) return add_pat_rank_bytes(op, c, sent, received);
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
