// How NCCL's tuning model changed from 2.6 on, release by release, restated as data so that a
// cluster file's nccl_version ranks algorithms and protocols as that release does. Each field
// names the tag of NVIDIA/nccl (src/graph/tuning.cc) it was read from; the rules that use them
// are in nccl_tuning.cpp. The defaults are 2.18.5's. Releases before 2.5 had no tuning model (a
// tree threshold and an LL threshold, v2.4.8-1 src/init.cc and enqueue.cc) and no LL128: they
// rank as 2.5.7 without LL128.
#pragma once
#include <array>
#include <cstdint>

#include "collectives/nccl_constants.h"

namespace redsim::nccl {

struct Release {
  int first_version = 0;  // ClusterSpec::nccl_version encoding (2.19.3 = 21903)
  const char* tag = "";
  AlgoProto base_lat_us{};
  std::array<AlgoProto, 3> hw_lat_us{};
  GenNodes ll_max_GBps{};
  // 2.21.5: a ring's LL bus bandwidth is half the graph's (before, a quarter; a third for a
  // one-node allgather, reduce-scatter or broadcast).
  bool ring_ll_half = false;
  // 2.19.3: NVLS reads min(inside, across) per channel and NVLSTree min(inside, across, halved
  // from 3 nodes); both convert bus to algorithm bandwidth at 5/6 (before: NVLSTree at
  // 0.7 x nodes / (2 x (nodes - 1)), reading the speed inside on up to 2 nodes). Their latency is
  // the NVLink hop's plus, for NVLSTree, 2 x log2(nodes) network hops (before: 2 x (nodes - 1)).
  bool nvls_min_bw = false;
  // 2.23.4: no 0.7 on a ring's LL128 with one GPU a node; one GPU a node takes the tree's network
  // latency for every algorithm; a multi-node ring allreduce has 2 x (nodes - 1) network steps
  // (before: 2 x nodes).
  bool v2_23_rules = false;
  // 2.21.5 (enqueue.cc, transport/nvls.cc): NVLSTree's chunk starts at NCCL_NVLS_CHUNKSIZE, 128 KiB
  // (64 KiB from 4 nodes), where it had started at a Simple step of 512 KiB (0 here).
  std::int64_t nvls_chunk_bytes = 0;
  // 2.28.3: NVLS and NVLSTree per channel at min(inside x nvls_efficiency x (channels - 1) /
  // channels x 2 for allreduce ((ppn - 1) / ppn otherwise), across (x2 for NVLSTree on up to 2
  // nodes), NVLSTree's cap nvls_tree_max_GBps), and bus to algorithm bandwidth as a ring's,
  // ranks / (2 (ranks - 1)) for allreduce (before: 5/6).
  bool nvls_v2_28 = false;
  std::array<double, 4> nvls_efficiency{0.0, 0.0, 0.85, 0.74};  // by generation
  GenNodes nvls_tree_max_GBps{{{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0.0, 57.7, 45.5}, {0.0, 96.0, 43.1}}};
  // 2.25.1: a Blackwell GPU (compute capability 10.0 and newer) reads the tables' fourth row;
  // before, Hopper's (from 2.17; by exact capability before that, exact_cc_rows).
  bool blackwell_rows = false;
  // The compute capabilities LL128 runs on by default (tuning.cc, "Enable LL128 by default"):
  // 7.0, 8.0 and 9.0; 10.0 and 12.0 too from 2.25.1; any from 7.0 from 2.27.3.
  enum class Ll128Cc { volta_ampere_hopper, and_blackwell, from_volta };
  Ll128Cc ll128_cc = Ll128Cc::volta_ampere_hopper;
  // 2.29.2: NVLSTree allreduce on Blackwell (x86 hosts) takes the tree's size correction too.
  bool nvls_tree_corrected_on_blackwell = false;
  // PAT's share of the tree graph's bandwidth (tuning.cc "busBw *= .85" in 2.23.4, .75 from
  // 2.24.3); 0: the release has no PAT (before 2.23).
  double pat_bus_share = 0;

  // Before 2.18 (fields below; 2.18.5's values by default).
  // Per-channel caps, GB/s, [generation][nodes] (2.18.3 split LL128's by ring and tree).
  GenNodes ring_ll128_max_GBps = kPerChMaxRingLl128GBps;
  GenNodes tree_ll128_max_GBps = kPerChMaxTreeLl128GBps;
  GenNodes tree_max_GBps = kPerChMaxTreeGBps;
  // 2.9.9: LL128's per-channel cap by collective (broadcast, reduce, allgather, reduce-scatter,
  // allreduce: NCCL's order) instead of by generation; all 0 where the tables above apply.
  std::array<double, 5> ll128_op_max_GBps{};
  // A cap on any algorithm's whole bus bandwidth by generation, 0 for none (Ampere 235 GB/s to
  // 2.17; Hopper 370 in 2.17; dropped in 2.18.1).
  std::array<double, 4> bus_cap_GBps{};
  // Before 2.15 a Hopper GPU reads the Volta rows (the model knew only sm_80 as "Ampere") and
  // has no LL128 by default.
  bool hopper_as_volta = false;
  // Before 2.17 the rows are read by exact compute capability: 8.0 Ampere's, 9.0 Hopper's, any
  // other (8.6, 8.9) Volta's.
  bool exact_cc_rows = false;
  // To 2.17: with several nodes an LL hop inside a node counts 1.8 times hwLat.
  bool ll_intra_lat_x1_8 = false;
  // To 2.11 a ring allreduce crosses nodes 2 x (nodes - 1) times in the model (2.12-2.22: 2 x nodes).
  bool ring_inter_nodes_minus_1 = false;
  // From 2.18.1 a ring step inside a node costs at least the network post overhead (1 us, 3 for
  // Simple) when there are several nodes.
  bool net_overhead = true;
  // The ring's "plateau": Simple ring allreduce across nodes multiplies its latency by
  // plateau_factor (1.9 below compute capability plateau_new_cc, plateau_new_factor from it) from
  // bytes / (channels x ranks) >= 64 (2.18.1 on), or, plateau_by_ranks, from ranks / 16 x 64 KiB.
  bool plateau_by_ranks = false;
  double plateau_new_cc = 8.0;
  double plateau_new_factor = 1.4;
  // Tree LL128 with several nodes runs at this share of the bus (2.9.9: 0.915).
  double tree_ll128_net_factor = 120.0 / 128.0;
  // The tree size correction, [protocol][floor(log2(bytes / 64))] (2.9.9's LL128 row and all of
  // 2.6-2.7's differ; those end at 128 MiB, 1.0 after).
  TreeCorrection tree_correction_table = kTreeCorrection;
  // 2.18.3: x0.85 on a tree whose search relaxed BALANCED_TREE to TREE (SM90).
  bool tree_pattern_factor = true;
  // NVLS from 2.17.1 (bus to algorithm bandwidth 3/4 there, 5/6 from 2.18.3), NVLSTree from 2.18.1.
  bool has_nvls = true;
  bool has_nvls_tree = true;
  double nvls_ratio = 5.0 / 6.0;

  // Before 2.8 (2.6.4, 2.7.8): no LL cap (ll_max_GBps all 0); a ring's LL128 at ring_ll128_share
  // (0.7 with one GPU a node from 2.7; 2.6: 120/128 under ll128_op_max_GBps on the whole bus,
  // Volta only); trees at tree_share of the bus (0.9) under a cap on the whole tree, [up to 2
  // nodes, more] (Ampere's LL128 its own from 2.7), LL at tree_ll_share (2.6: a third), LL128 under
  // its per-channel cap x tree_ll128_cap_share (2.7: 7/9; 0, none, in 2.6).
  bool ring_ll_quarter_always = false;  // 2.6: a quarter for every collective
  double ring_ll128_share = 0.92;
  double ring_ll128_share_one_gpu = 0.7;
  bool ll128_op_cap_whole = false;
  bool ll128_volta_only = false;
  bool has_ll128 = true;  // before 2.5: no LL128 protocol
  double tree_share = 0.92;
  std::array<double, 2> tree_whole_cap_GBps{};  // 0: the per-channel table
  int tree_whole_cap_from_nodes = 3;  // the second cap from this many nodes (2.5: 2)
  std::array<double, 2> tree_whole_cap_ampere_ll128_GBps{};
  double tree_ll_share = 1.0 / 3.8;
  double tree_ll128_cap_share = 1.0;
  // 2.6: every step of a ring costs the hop of its slowest class (the network's with several
  // nodes), and no plateau.
  bool ring_lat_all_steps = false;
  bool ring_plateau = true;

  // What NCCL's network plugin reports as its latency (graph latencyInter; the cluster file's
  // inter_node.net_plugin_latency_us) does to a network step of a ring or tree: nothing to 2.11,
  // stands in for hwLat from 2.12.7 when set, adds to it from 2.18.1 (twice for Simple, "the
  // flush extra latency"); NVLS and NVLSTree read it from 2.19.3.
  enum class PluginLatency { ignored, replaces, adds };
  PluginLatency plugin_latency = PluginLatency::adds;
  bool nvls_plugin_latency = false;
};

// The release whose model applies to nccl_version (the newest not after it; 2.5.7 without LL128
// before that).
const Release& release_of(int nccl_version);

// NCCL's tree bandwidth correction by size (nccl_constants.h) with the release's LL128 row.
double tree_correction(const Release& r, Protocol p, std::int64_t bytes, bool one_longer = false);

}  // namespace redsim::nccl
