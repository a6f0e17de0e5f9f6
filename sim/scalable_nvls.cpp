// The scalable fidelity's NVLS allreduce: each device of the folded period sends to its NVSwitch
// and receives from it at once, one flow each way carrying every loop of the pipeline (the
// exact fidelity's steps, collectives' nvls_* arithmetic).
#include <algorithm>

#include "collectives/shapes.h"
#include "sim/network.h"
#include "sim/scalable_model.h"
#include "sim/sim_context.h"

namespace redsim::scalable {

namespace {

struct NvlsTotals {
  std::int64_t traffic = 0;       // payload a device sends, and as much it receives
  std::int64_t steps_bytes = 0;   // every pipeline step's bytes, the copy stages' too
  std::int64_t slices_bytes = 0;  // every step's slice: what the channel's cap paces
  int steps = 0;
  std::int64_t pieces = 0;        // the device's own pieces, over all loops
  std::int64_t first_piece = 0;
};

NvlsTotals nvls_totals(const Mechanics& m, const PlanOp& op, int c, int heads, int head) {
  NvlsTotals t;
  const auto steps = nvls_channel_steps(m, op.bytes, op.channels, c, heads, head);
  for (const auto& st : steps) {
    t.steps_bytes += st.bytes;
    t.slices_bytes += st.slice_bytes;
    if (!st.counted) continue;
    t.traffic += st.bytes;
    t.pieces += st.bytes - st.slice_bytes;
  }
  if (steps.size() > 1) t.first_piece = steps[1].bytes - steps[1].slice_bytes;
  t.steps = static_cast<int>(steps.size());
  return t;
}

}  // namespace

std::vector<Stage> Model::nvls_stages(const PlanOp& op, int c) {
  const auto& m = mech(op);
  const int heads = cluster_.devices_per_node;
  Stage st;
  for (int r = 0; r < fold_.period_ranks; ++r) {
    const auto t = nvls_totals(m, op, c, heads, cluster_.local_of(r));
    if (t.steps == 0) continue;
    const int sw = switch_endpoint(cluster_, cluster_.node_of(r));
    // Both directions carry every step's bytes, the copy stages' included, so that the
    // pipeline's fill and drain last as in the exact fidelity's steps.
    for (auto route : {routes_.between(r, sw, fold_), routes_.between(sw, r, fold_)}) {
      Flow f;
      f.route = route;
      f.bytes = t.steps_bytes;
      f.rounds = t.steps;
      f.post_delay_s = (t.steps - 1) * routes_.latency_s(route);
      apply_protocol(f, m, 1);
      // The channel's cap paces each step's slice (the exact fidelity's steps).
      if (m.channel_cap_Bps > 0) f.min_transfer_s = static_cast<double>(t.slices_bytes) / m.channel_cap_Bps;
      st.flows.push_back(f);
    }
  }
  if (st.flows.empty()) return {};
  return {st};
}

void Model::add_nvls_rank_bytes(const PlanOp& op, int c, std::vector<std::int64_t>& sent,
                                std::vector<std::int64_t>& received) {
  const auto& m = mech(op);
  for (int r = 0; r < plan_.world_size; ++r) {
    const auto t = nvls_totals(m, op, c, cluster_.devices_per_node, cluster_.local_of(r));
    sent[static_cast<std::size_t>(r)] += t.traffic;
    received[static_cast<std::size_t>(r)] += t.traffic;
  }
}

std::vector<Stage> Model::nvls_tree_stages(const PlanOp& op, int c, std::int64_t bytes) {
  // The switch's reduce-scatter and multicast run as NVLS does, in flows; the tree across nodes
  // overlaps them loop by loop. It is computed: its busiest NIC direction (over every channel's
  // tree: channels alternate between the two mirrored trees) carries its pieces at the NIC's
  // rate, and the first piece climbs and the last descends the tree hop by hop. What the tree
  // needs beyond the switch's flows is charged after them.
  auto stages = nvls_stages(op, c);
  const auto& m = mech(op);
  const int heads = cluster_.devices_per_node, nodes = cluster_.nodes;
  const auto t0 = nvls_totals(m, op, c, heads, 0);
  const double nic_Bps = link_bandwidth_Bps(cluster_, LinkRef{LinkKind::nic, 0, true});
  const int links_per_node = std::min(cluster_.inter.nics_per_node, heads);
  const int ranks_per_link = heads / links_per_node;
  // A node's NIC link, over both trees: up to its parent and down to its children.
  double busiest = 0;
  for (int tree = 0; tree < 2; ++tree) {
    const auto shape = node_tree(cluster_, tree);
    for (int node = 0; node < nodes; ++node) {
      const int r = node * heads;
      const double load = (shape.parent[static_cast<std::size_t>(r)] >= 0 ? 1 : 0) + static_cast<double>(shape.children[static_cast<std::size_t>(r)].size());
      busiest = std::max(busiest, load);
    }
  }
  const int depth = nccl::log2i(nodes);
  const double share = std::max(1, op.channels) * ranks_per_link;  // channels and devices on one NIC link
  const double wire = m.wire_factor;
  const double tree_bw_s = static_cast<double>(t0.pieces) * wire * busiest * share / nic_Bps;
  const double hop = std::max(m.hop_latency(nccl::Hw::net), route_latency_s(cluster_, route_between(cluster_, 0, heads, unfolded_)));
  const double piece_s = static_cast<double>(t0.first_piece) * wire * share / nic_Bps;
  const double wave_s = 2 * depth * (hop + piece_s);
  // The wave holds the first loop's hops; each later loop waits at least a hop. (All loops here
  // counted the first loop's hop twice, and with one loop, up to 1 MiB on 2 x 8 H100s, the
  // fidelities were 10-29% apart.)
  const double steady_s = std::max(tree_bw_s, (nvls_loops(m, bytes, heads) - 1) * hop);
  double switch_s = 0;
  // Every channel's switch flows share the devices' ports.
  for (const auto& f : stages.front().flows)
    switch_s = std::max(switch_s, static_cast<double>(f.bytes) * std::max(1, op.channels) /
                                      link_bandwidth_Bps(cluster_, routes_.routes()[f.route].front()));
  Stage extra;
  extra.fixed_s = wave_s + std::max(0.0, steady_s - switch_s);
  stages.push_back(std::move(extra));
  return stages;
}

void Model::add_nvls_tree_rank_bytes(const PlanOp& op, int c, std::vector<std::int64_t>& sent,
                                     std::vector<std::int64_t>& received) {
  add_nvls_rank_bytes(op, c, sent, received);
  const auto& m = mech(op);
  const auto shape = node_tree(cluster_, c % 2);
  for (int r = 0; r < plan_.world_size; ++r) {
    const auto t = nvls_totals(m, op, c, cluster_.devices_per_node, cluster_.local_of(r));
    const auto links = static_cast<std::int64_t>(shape.children[static_cast<std::size_t>(r)].size()) +
                       (shape.parent[static_cast<std::size_t>(r)] >= 0 ? 1 : 0);
    sent[static_cast<std::size_t>(r)] += links * t.pieces;
    received[static_cast<std::size_t>(r)] += links * t.pieces;
  }
}

}  // namespace redsim::scalable
