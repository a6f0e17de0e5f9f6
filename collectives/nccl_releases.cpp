#include "collectives/nccl_releases.h"

namespace redsim::nccl {
namespace {

// NVIDIA/nccl v2.6.4-1 src/graph/tuning.cc: baseLat, hwLat (network: Tree/Simple 50 us, ring LL
// 0.9), the whole-bus LL128 caps by collective and the tree correction.
constexpr AlgoProto kBase264{{{4.4, 4.4, 0}, {3.6, 3.6, 8.4}, {4.4, 4.4, 0}, {4.4, 4.4, 0}, {0, 0, 0}, {0, 0, 0}}};
constexpr AlgoProto kNvlink264{{{.5, 1.9, 28}, {.4, 2.5, 5.7}, {.5, 1.9, 4.0}, {.5, 1.9, 4.0}, {0, 0, 0}, {0, 0, 0}}};
constexpr AlgoProto kPci264{{{1.0, 1.9, 28}, {1.0, 2.5, 5.7}, {1.0, 1.9, 5.5}, {1.0, 1.9, 5.5}, {0, 0, 0}, {0, 0, 0}}};
constexpr AlgoProto kNet264{{{5.0, 7.5, 50}, {.9, 2.5, 6.6}, {5.0, 5.0, 10.7}, {5.0, 5.0, 10.7}, {0, 0, 0}, {0, 0, 0}}};
constexpr TreeCorrection kTreeCorrection264{{
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .5, .5, .6, .7, .8, .9, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .8, .7, .7, .7, .6, .6, .7, .7, .8, .8, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .5, .5, .6, .6, .7, .8, .9, 1.0},
}};
// v2.7.8-1 (v2.7.3-1 took 0.92 of an A100's bus where 2.7.5 caps it at 235 GB/s): 2.9.9's latency
// rules and hwLat but Tree LL128 1.2 us an NVLink hop and Tree/Simple 50 us a network hop; LL128
// 16.7 GB/s a channel for allreduce; the tree correction's first two rows changed.
constexpr AlgoProto kNvlink278{{{.52, 1.2, 28}, {.47, 1.9, 3.4}, {.5, 1.2, 4.0}, {.5, 1.2, 4.0}, {0, 0, 0}, {0, 0, 0}}};
constexpr AlgoProto kNet278{{{5.0, 8.5, 50}, {2.7, 4.0, 9.6}, {5.0, 5.0, 10.7}, {5.0, 5.0, 10.7}, {0, 0, 0}, {0, 0, 0}}};
constexpr TreeCorrection kTreeCorrection278{{
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .5, .6, .6, .7, .7, .8, .9, .9, 1.0, 1.0},
    kTreeCorrection264[2],
}};
constexpr GenNodes kNone{};

// NVIDIA/nccl v2.9.9-1 src/graph/tuning.cc (the same from v2.8.3-1): baseLat, hwLat (CollNet in
// the CollNetDirect row, the chain's taken as the same), the caps and the LL128 correction row.
constexpr AlgoProto kBase299{{{4.4, 4.4, 0}, {3.6, 10.0, 8.4}, {4.4, 4.4, 0}, {4.4, 4.4, 0}, {0, 0, 0}, {0, 0, 0}}};
constexpr AlgoProto kNvlink299{{{.52, 1.25, 28}, {.47, 1.9, 3.4}, {.5, 1.2, 4.0}, {.5, 1.2, 4.0}, {0, 0, 0}, {0, 0, 0}}};
constexpr AlgoProto kPci299{{{1.0, 1.9, 28}, {1.0, 2.5, 5.7}, {1.0, 1.9, 5.5}, {1.0, 1.9, 5.5}, {0, 0, 0}, {0, 0, 0}}};
constexpr AlgoProto kNet299{{{5.0, 8.5, 28}, {2.7, 4.0, 9.6}, {5.0, 5.0, 10.7}, {5.0, 5.0, 10.7}, {0, 0, 0}, {0, 0, 0}}};
// Hopper reads Volta's rows before 2.15 (hopper_as_volta); its row here is never read then.
constexpr GenNodes kLlMax299{{{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {39.0, 39.0, 20.4}}};
constexpr GenNodes kTreeMax299{{{26.5, 18.5, 10.0}, {24.0, 22.5, 16.0}, {26.5, 18.5, 10.0}}};
constexpr std::array<double, 23> kTreeLl128Correction299{
    1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .5, .6, .6, .7, .7, .8, .9, .9, .92, .92};
// v2.10.3-1 (to v2.11.4-1): LL128 20 GB/s a channel for every collective, Ampere's tree caps
// {24, 23.6, 17.8}, CollNet Simple 8 us inside a node.
constexpr AlgoProto kNvlink210{{{.52, 1.25, 28}, {.47, 1.9, 3.4}, {.5, 1.2, 8.0}, {.5, 1.2, 8.0}, {0, 0, 0}, {0, 0, 0}}};
constexpr AlgoProto kPci210{{{1.0, 1.9, 28}, {1.0, 2.5, 5.7}, {1.0, 1.9, 8.0}, {1.0, 1.9, 8.0}, {0, 0, 0}, {0, 0, 0}}};
constexpr GenNodes kFlat20{{{20, 20, 20}, {20, 20, 20}, {20, 20, 20}}};
constexpr GenNodes kTreeMax210{{{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {26.5, 18.5, 10.0}}};
// v2.12.7-1 (to v2.13.4-1): a ring's Simple network hop 28 us.
constexpr AlgoProto kNet212{{{5.0, 8.5, 28}, {2.7, 4.0, 28}, {5.0, 5.0, 10.7}, {5.0, 5.0, 10.7}, {0, 0, 0}, {0, 0, 0}}};
// v2.14.3-1 splits CollNet into Direct and Chain (8 us inside, 10.7 across) and puts the ring's
// Simple network hop back at 9.6 us.
constexpr AlgoProto kNvlink214{{{.52, 1.25, 28}, {.47, 1.9, 3.4}, {0, 0, 8.0}, {0, 0, 8.0}, {0, 0, 0}, {0, 0, 0}}};
constexpr AlgoProto kPci214{{{1.0, 1.9, 28}, {1.0, 2.5, 5.7}, {0, 0, 8.0}, {0, 0, 8.0}, {0, 0, 0}, {0, 0, 0}}};
constexpr AlgoProto kNet214{{{5.0, 8.5, 28}, {2.7, 4.0, 9.6}, {0, 0, 10.7}, {0, 0, 10.7}, {0, 0, 0}, {0, 0, 0}}};
// v2.15.1-1 (to v2.16.5-1): Hopper gets its own rows, Ampere's figures.
constexpr GenNodes kLlMax215{{{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {87.7, 22.5, 19.0}}};
constexpr GenNodes kTreeMax215{{{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {24.0, 23.6, 17.8}}};
// v2.17.1-1: NVLS (base 40 us, 3/4 of the bus), LL128 36.7 GB/s a channel on Hopper, Hopper's
// tree caps, a 370 GB/s bus cap on Hopper.
constexpr AlgoProto kBase217{{{4.4, 4.4, 0}, {3.6, 10.0, 8.4}, {4.4, 4.4, 0}, {4.4, 4.4, 0}, {0, 0, 40.0}, {0, 0, 0}}};
constexpr GenNodes kLl128Max217{{{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 36.7}}};
constexpr GenNodes kTreeMax217{{{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 33.0}}};
// v2.18.1-1: 2.18.5's base latencies; hwLat 0.6 us an LL hop inside, Tree/Simple still 28 us a
// hop, the ring's Simple network hop 14 us, NVLS 18 and NVLSTree 19 across nodes.
constexpr AlgoProto kNvlink2181{{{.6, 1.25, 28}, {.6, 1.9, 3.4}, {0, 0, 8.0}, {0, 0, 4.75}, {0, 0, 0}, {0, 0, 0}}};
constexpr AlgoProto kPci2181{{{1.0, 1.9, 28}, {1.0, 2.5, 5.7}, {0, 0, 8.0}, {0, 0, 8.0}, {0, 0, 0}, {0, 0, 0}}};
constexpr AlgoProto kNet2181{{{5.0, 8.5, 28}, {2.7, 4.0, 14.0}, {0, 0, 10.7}, {0, 0, 14}, {0, 0, 18}, {0, 0, 19}}};

// NVIDIA/nccl v2.19.3-1 src/graph/tuning.cc baseLat and hwLat: NVLS latencies move from baseLat
// (23) into the NVLink row, Tree/Simple gets 28 us a hop everywhere, CollNet's change.
constexpr AlgoProto kBase219{{{6.8, 14.0, 0.0}, {6.6, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}}};
constexpr AlgoProto kNvlink219{{{0.6, 1.25, 28}, {0.6, 1.9, 3.4}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 23}, {0, 0, 23}}};
constexpr AlgoProto kPci219{{{1.0, 1.9, 28}, {1.0, 2.5, 5.7}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 0}, {0, 0, 0}}};
constexpr AlgoProto kNet219{{{5.0, 8.5, 28}, {2.7, 4.0, 14.0}, {0, 0, 31}, {0, 0, 30}, {0, 0, 18}, {0, 0, 14}}};
// v2.21.5-1: NVLS on NVLink 25 us.
constexpr AlgoProto kNvlink221{{{0.6, 1.25, 28}, {0.6, 1.9, 3.4}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 25}, {0, 0, 25}}};
// v2.23.4-1: Tree/Simple base 8.4 us, 4 us a hop inside a node and 14 across (unchanged to 2.29).
constexpr AlgoProto kBase223{{{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}}};
constexpr AlgoProto kNvlink223{{{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 25}, {0, 0, 25}}};
constexpr AlgoProto kPci223{{{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 0}, {0, 0, 0}}};
constexpr AlgoProto kNet223{{{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 31}, {0, 0, 30}, {0, 0, 18}, {0, 0, 14}}};
// v2.28.9-1 (the same to v2.29.7-1): NVLSTree's network hop 20.9 us (14 to 2.28.7).
constexpr AlgoProto kNet2289{{{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 31}, {0, 0, 30}, {0, 0, 18}, {0, 0, 20.9}}};
// v2.21.5-1 llMaxBws: Hopper on one node 141 GB/s (rows 1-2 are the CPU vendor's with several
// nodes, and the Hopper row's multi-node entries are not read).
constexpr GenNodes kLlMax221{{{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}}};

// A release before 2.18: 2.18.5's defaults overridden by what changed since.
constexpr Release pre_2_18(int first, const char* tag, const AlgoProto& base, const std::array<AlgoProto, 3>& hw,
                           const GenNodes& ll_max, const GenNodes& ll128_max, const GenNodes& tree_max) {
  Release r{first, tag, base, hw, ll_max};
  r.ring_ll128_max_GBps = r.tree_ll128_max_GBps = ll128_max;
  r.tree_max_GBps = tree_max;
  r.bus_cap_GBps = {0, 235.0, 0};
  r.hopper_as_volta = first < 21500;
  r.exact_cc_rows = first < 21700;
  r.ll_intra_lat_x1_8 = true;
  r.ring_inter_nodes_minus_1 = first < 21200;
  r.plugin_latency = first < 21200 ? Release::PluginLatency::ignored : Release::PluginLatency::replaces;
  r.net_overhead = false;
  r.plateau_by_ranks = true;
  r.plateau_new_cc = 9.0;
  r.plateau_new_factor = 1.9;
  r.tree_pattern_factor = false;
  r.has_nvls = r.has_nvls_tree = false;
  return r;
}

// 2.6 and 2.7: trees under caps on the whole tree, no LL cap, no A100 rows.
constexpr Release pre_2_8(int first, const char* tag, const AlgoProto& base, const std::array<AlgoProto, 3>& hw) {
  Release r = pre_2_18(first, tag, base, hw, kNone, kNone, kNone);
  r.tree_share = 0.9;
  r.tree_whole_cap_GBps = {110.0, 80.0};
  r.tree_ll128_net_factor = 0.915;
  r.tree_ll128_cap_share = 7.0 / 9.0;
  return r;
}

constexpr Release v2_6_4() {
  Release r = pre_2_8(20600, "v2.6.4-1", kBase264, {kNvlink264, kPci264, kNet264});
  r.bus_cap_GBps = {};
  r.ll_intra_lat_x1_8 = false;
  r.plateau_by_ranks = false;
  r.ring_plateau = false;
  r.ring_lat_all_steps = true;
  r.ring_ll_quarter_always = true;
  r.ring_ll128_share = r.ring_ll128_share_one_gpu = 120.0 / 128.0;
  r.ll128_op_cap_whole = true;
  r.ll128_op_max_GBps = {113.0, 72.0, 110.0, 91.0, 100.0};
  r.ll128_volta_only = true;
  r.tree_ll_share = 1.0 / 3.0;
  r.tree_ll128_net_factor = 7.0 / 9.0;
  r.tree_ll128_cap_share = 0;
  r.tree_correction_table = kTreeCorrection264;
  return r;
}

// v2.5.7-1 (the same from v2.5.6-1): 2.6.4's rules and constants but trees under 90 GB/s on one
// node and 70 from 2 nodes (2.6: 110, and 80 from 3 nodes).
constexpr Release v2_5_7() {
  Release r = v2_6_4();
  r.first_version = 20500;
  r.tag = "v2.5.7-1";
  r.tree_whole_cap_GBps = {90.0, 70.0};
  r.tree_whole_cap_from_nodes = 2;
  return r;
}

// Before 2.5 (v2.4.8-1): a tree threshold and an LL threshold rather than a model, and no LL128;
// ranked as 2.5.7 without LL128.
constexpr Release before_2_5() {
  Release r = v2_5_7();
  r.first_version = 0;
  r.tag = "v2.5.7-1 without LL128";
  r.has_ll128 = false;
  return r;
}

constexpr Release v2_7_8() {
  Release r = pre_2_8(20700, "v2.7.8-1", kBase299, {kNvlink278, kPci299, kNet278});
  r.tree_whole_cap_ampere_ll128_GBps = {130.0, 105.0};
  r.ll128_op_max_GBps = {18.8, 12.0, 18.3, 15.2, 16.7};
  r.tree_correction_table = kTreeCorrection278;
  return r;
}

constexpr Release v2_9_9() {
  Release r = pre_2_18(20800, "v2.9.9-1", kBase299, {kNvlink299, kPci299, kNet299}, kLlMax299, kFlat20, kTreeMax299);
  r.ll128_op_max_GBps = {18.8, 12.0, 18.3, 15.2, 16.9};
  r.tree_ll128_net_factor = 0.915;
  r.tree_correction_table[1] = kTreeLl128Correction299;
  return r;
}

constexpr Release v2_17_1() {
  Release r = pre_2_18(21700, "v2.17.1-1", kBase217, {kNvlink214, kPci214, kNet214}, kLlMax215, kLl128Max217, kTreeMax217);
  r.bus_cap_GBps = {0, 235.0, 370.0};
  r.plateau_new_factor = 1.5;
  r.has_nvls = true;
  r.nvls_ratio = 0.75;
  return r;
}

constexpr Release v2_18_1() {
  Release r{21800, "v2.18.1-1", kBaseLatUs, {kNvlink2181, kPci2181, kNet2181}, kLlMaxBwGBps};
  r.ring_ll128_max_GBps = r.tree_ll128_max_GBps = kLl128Max217;
  r.tree_max_GBps = kTreeMax217;
  r.tree_pattern_factor = false;
  r.nvls_ratio = 0.75;
  return r;
}

// From 2.19.3 NVLS and NVLSTree pay the network plugin's latency too.
constexpr Release nvls_with_plugin(Release r) {
  r.nvls_plugin_latency = true;
  return r;
}

// v2.23.4-1, and the later releases that keep its constants but for the network row and PAT's
// share of the tree's bandwidth (0.85 in 2.23.4, 0.75 from 2.24.3).
constexpr Release v2_23(int first, const char* tag, const AlgoProto& net) {
  Release r = nvls_with_plugin({first, tag, kBase223, {kNvlink223, kPci223, net}, kLlMax221, true, true, true, 131072});
  r.pat_bus_share = first < 22400 ? 0.85 : 0.75;
  return r;
}

using NodesRow = std::array<double, 3>;

// Blackwell's rows (from v2.25.1-1): twice Hopper's LL cap on one node, and the release's
// per-channel caps for ring LL128, tree LL128 and trees.
constexpr Release with_blackwell(Release r, Release::Ll128Cc ll128_cc, NodesRow ring_ll128, NodesRow tree_ll128,
                                 NodesRow tree) {
  r.blackwell_rows = true;
  r.ll128_cc = ll128_cc;
  r.ll_max_GBps[3] = {2 * 141.0, 2 * 45.0, 2 * 35.0};
  r.ring_ll128_max_GBps[3] = ring_ll128;
  r.tree_ll128_max_GBps[3] = tree_ll128;
  r.tree_max_GBps[3] = tree;
  return r;
}

// v2.25.1-1 (LL128 on 10.0 and 12.0) and v2.27.3-1 (LL128 on any capability from 7.0): 2.23.4's
// model with Blackwell's rows, each twice Hopper's.
constexpr Release v2_25(int first, const char* tag, Release::Ll128Cc ll128_cc) {
  return with_blackwell(v2_23(first, tag, kNet223), ll128_cc, {2 * 36.7, 2 * 36.7, 2 * 36.7},
                        {2 * 36.7, 2 * 36.7, 2 * 29.0}, {2 * 38.7, 2 * 41.4, 2 * 36.0});
}

// v2.28.3-1 to v2.29.7-1: 2.23.4's constants with NVLS's new bandwidth rule (nvls_v2_28) and
// Blackwell's rows of that tag: ring LL128 a channel (2.28.7, 2.29.2 and 2.29.7 each changed it),
// NVLSTree's cap from 4 nodes (43.8 from 2.28.9). 2.28.9 moves NVLSTree's network hop to 20.9 us;
// 2.29.2 gives Blackwell's NVLSTree allreduce the tree's size correction.
constexpr Release v2_28(int first, const char* tag, const AlgoProto& net, NodesRow ring_ll128, double nvls_tree_n4) {
  Release r = with_blackwell(v2_23(first, tag, net), Release::Ll128Cc::from_volta, ring_ll128, {55.6, 31.67, 20.0},
                             {70.0, 42.8, 24.0});
  r.nvls_v2_28 = true;
  r.nvls_tree_max_GBps[3] = {0.0, 96.0, nvls_tree_n4};
  r.nvls_tree_corrected_on_blackwell = first >= 22902;
  return r;
}

// Ascending by first_version: the version each model applies from (the first release of a minor
// version takes its later patch release's model where no tag between them changed tuning.cc).
const Release kReleases[] = {
    before_2_5(),
    v2_5_7(),
    v2_6_4(),
    v2_7_8(),
    v2_9_9(),
    pre_2_18(21000, "v2.10.3-1", kBase299, {kNvlink210, kPci210, kNet299}, kLlMax299, kFlat20, kTreeMax210),
    pre_2_18(21200, "v2.12.7-1", kBase299, {kNvlink210, kPci210, kNet212}, kLlMax299, kFlat20, kTreeMax210),
    pre_2_18(21400, "v2.14.3-1", kBase299, {kNvlink214, kPci214, kNet214}, kLlMax299, kFlat20, kTreeMax210),
    pre_2_18(21500, "v2.15.1-1", kBase299, {kNvlink214, kPci214, kNet214}, kLlMax215, kFlat20, kTreeMax215),
    v2_17_1(),
    v2_18_1(),
    {21803, "v2.18.5-1", kBaseLatUs, kHwLatUs, kLlMaxBwGBps, false, false, false},
    nvls_with_plugin({21900, "v2.19.3-1", kBase219, {kNvlink219, kPci219, kNet219}, kLlMaxBwGBps, false, true, false}),
    nvls_with_plugin({22100, "v2.21.5-1", kBase219, {kNvlink221, kPci219, kNet219}, kLlMax221, true, true, false, 131072}),
    v2_23(22300, "v2.23.4-1", kNet223),
    v2_23(22400, "v2.24.3-1", kNet223),
    v2_25(22500, "v2.25.1-1", Release::Ll128Cc::and_blackwell),
    v2_25(22700, "v2.27.3-1", Release::Ll128Cc::from_volta),
    v2_28(22800, "v2.28.3-1", kNet223, {2 * 36.7, 2 * 36.7, 2 * 36.7}, 43.1),
    v2_28(22807, "v2.28.7-1", kNet223, {2 * 36.7, 34.6, 2 * 36.7}, 43.1),
    v2_28(22809, "v2.28.9-1", kNet2289, {2 * 36.7, 34.6, 2 * 36.7}, 43.8),
    v2_28(22902, "v2.29.2-1", kNet2289, {34.5, 34.6, 34.5}, 43.8),
    v2_28(22907, "v2.29.7-1", kNet2289, {40.0, 40.0, 40.0}, 43.8),
};

}  // namespace

const Release& release_of(int nccl_version) {
  const Release* r = &kReleases[0];
  for (const auto& k : kReleases)
    if (nccl_version >= k.first_version) r = &k;
  return *r;
}

double tree_correction(const Release& r, Protocol p, std::int64_t bytes, bool one_longer) {
  return tree_correction(r.tree_correction_table, p, bytes, one_longer);
}

}  // namespace redsim::nccl
