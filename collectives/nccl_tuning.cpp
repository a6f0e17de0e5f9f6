#include "collectives/nccl_tuning.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "collectives/nccl_algo_pin.h"
#include "core/cluster_json.h"
#include "core/error.h"

namespace redsim::nccl {
namespace {

int nodes_index(int nodes) { return nodes <= 1 ? 0 : nodes == 2 ? 1 : 2; }
std::size_t u(int i) { return static_cast<std::size_t>(i); }

// Steps a ring takes for one collective (tuning.cc L158-163), and how many cross nodes.
int ring_steps(OpKind kind, int n) {
  if (kind == OpKind::allreduce) return 2 * (n - 1);
  if (kind == OpKind::allgather || kind == OpKind::reduce_scatter) return n - 1;
  return n;
}
int inter_steps(OpKind kind, int nodes, const Release& r) {
  if (kind == OpKind::allreduce)
    return nodes > 1 ? (r.v2_23_rules || r.ring_inter_nodes_minus_1 ? 2 * (nodes - 1) : 2 * nodes) : 0;
  if (kind == OpKind::allgather || kind == OpKind::reduce_scatter) return nodes - 1;
  return nodes;
}

// NCCL's collective index (broadcast, reduce, allgather, reduce-scatter, allreduce), -1 otherwise.
int func_index(OpKind kind) {
  switch (kind) {
    case OpKind::broadcast: return 0;
    case OpKind::reduce: return 1;
    case OpKind::allgather: return 2;
    case OpKind::reduce_scatter: return 3;
    case OpKind::allreduce: return 4;
    default: return -1;
  }
}

// A network step with what the network plugin reports as its latency (graph latencyInter).
double with_plugin_latency(double hw_us, Protocol p, const Release& r, double plugin_us) {
  if (plugin_us <= 0) return hw_us;
  switch (r.plugin_latency) {
    case Release::PluginLatency::ignored: return hw_us;
    case Release::PluginLatency::replaces: return plugin_us;
    case Release::PluginLatency::adds: return hw_us + plugin_us * (p == Protocol::simple ? 2 : 1);
  }
  return hw_us;
}

// The generation row a release reads: before 2.17 only compute capability 8.0 reads Ampere's and
// 9.0 Hopper's (from 2.15; Volta's before), anything else Volta's; Blackwell reads Hopper's
// before 2.25.
int gen_row(const Topology& t, const Release& r, double cc) {
  if (!r.exact_cc_rows) return std::min(t.generation, r.blackwell_rows ? 3 : 2);
  return is_cc(cc, 8.0) ? 1 : is_cc(cc, 9.0) && !r.hopper_as_volta ? 2 : 0;
}

// Whether the release runs LL128 by default on this compute capability (tuning.cc).
bool ll128_on(const Release& r, double cc) {
  switch (r.ll128_cc) {
    case Release::Ll128Cc::from_volta: return cc >= 7.0 - 0.05;
    case Release::Ll128Cc::and_blackwell:
      if (is_cc(cc, 10.0) || is_cc(cc, 12.0)) return true;
      [[fallthrough]];
    case Release::Ll128Cc::volta_ampere_hopper: return is_cc(cc, 7.0) || is_cc(cc, 8.0) || is_cc(cc, 9.0);
  }
  return false;
}

std::string format_cc(double cc) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", cc);
  return b;
}

// What a release's bandwidth refinements read (tuning.cc ncclTopoTuneModel, "Various model
// refinements").
struct BusRules {
  const Release& r;
  OpKind kind;
  Protocol p;
  int nodes, ppn, gen, ni, channels;
  bool cc80;  // compute capability 8.0 exactly (2.7's tree caps for LL128)
};

// LL at `share` of the bus under a cap on all its channels together (none before 2.8).
void share_ll(Entry& e, double& bus, double share, double ll_max) {
  e.uncapped_bus_GBps = bus * share;
  e.total_cap_GBps = ll_max;
  bus = ll_max > 0 ? std::min(ll_max, bus * share) : bus * share;
}

// LL128's cap over `channels`: by collective (2.6-2.9; 2.6 on the whole bus) or by generation.
double ll128_cap_GBps(const BusRules& c, const GenNodes& table) {
  const int fi = func_index(c.kind);
  if (fi >= 0 && c.r.ll128_op_max_GBps[u(fi)] > 0)
    return c.r.ll128_op_max_GBps[u(fi)] * (c.r.ll128_op_cap_whole ? 1 : c.channels);
  return table[u(c.gen)][u(c.ni)] * c.channels;
}

double ring_bus_GBps(const BusRules& c, Entry& e, double bus, double ll_max) {
  const Release& r = c.r;
  if (c.p == Protocol::ll) {
    const bool quarter = r.ring_ll_quarter_always || c.nodes > 1 || c.kind == OpKind::allreduce || c.kind == OpKind::reduce;
    share_ll(e, bus, r.ring_ll_half ? 0.5 : quarter ? 0.25 : 1.0 / 3, ll_max);
  } else if (c.p == Protocol::ll128) {
    const double share = c.ppn < 2 && !r.v2_23_rules ? r.ring_ll128_share_one_gpu : r.ring_ll128_share;
    bus = std::min(bus * share, ll128_cap_GBps(c, r.ring_ll128_max_GBps));
  }
  return bus;
}

double tree_bus_GBps(const BusRules& c, Entry& e, double bus, double ll_max, bool tree_pattern) {
  const Release& r = c.r;
  const bool ampere_ll128 = c.cc80 && c.p == Protocol::ll128 && r.tree_whole_cap_ampere_ll128_GBps[0] > 0;
  const auto& whole = ampere_ll128 ? r.tree_whole_cap_ampere_ll128_GBps : r.tree_whole_cap_GBps;
  const double cap = whole[0] > 0 ? whole[c.nodes >= r.tree_whole_cap_from_nodes ? 1 : 0]
                                  : c.channels * r.tree_max_GBps[u(c.gen)][u(c.ni)];
  bus = std::min(bus * r.tree_share, cap);
  if (c.p == Protocol::ll) share_ll(e, bus, r.tree_ll_share, ll_max);
  if (c.p == Protocol::ll128) {
    bus *= c.nodes == 1 ? 7.0 / 9.0 : r.tree_ll128_net_factor;
    if (r.tree_ll128_cap_share > 0) bus = std::min(bus, ll128_cap_GBps(c, r.tree_ll128_max_GBps) * r.tree_ll128_cap_share);
  }
  if (tree_pattern && r.tree_pattern_factor) bus *= 0.85, e.uncapped_bus_GBps *= 0.85, e.total_cap_GBps *= 0.85;
  return bus;
}

}  // namespace

Tuning::Tuning(const ClusterSpec& cluster, int forced_channels)
    : cluster_(cluster), topo_(topology_of(cluster, forced_channels)), release_(release_of(cluster.nccl_version)) {}

bool Tuning::supported(OpKind kind, Algorithm a, Protocol p, DType dtype, ReduceOp op) const {
  return unsupported_reason(cluster_, *this, kind, a, p, dtype, op).empty();
}

// NCCL's NCCL_NVLS_SUPPORTS (2.17.1-2.18.5 src/include/collectives.h; ncclNvlsSupported in
// device.h from 2.19, the same table): the switch reduces float and double with sum only, half,
// bfloat16 and 32- or 64-bit integers with sum, max or min, 8-bit types not at all. Avg is no
// switch reduction: NCCL runs it as a sum with a pre-multiplication (floating point) or a
// post-division (integers) (enqueue.cc hostToDevRedOp), and prod is never one.
bool nvls_reduces(DType dtype, ReduceOp op) {
  const bool sum = op == ReduceOp::sum, min_max = op == ReduceOp::max || op == ReduceOp::min;
  switch (dtype) {
    case DType::fp32:
    case DType::fp64: return sum;
    case DType::fp16:
    case DType::bf16:
    case DType::int32:
    case DType::int64: return sum || min_max;
    case DType::uint8:
    case DType::bool8: return false;
  }
  return false;
}

namespace {

// Why NCCL would not run PAT here (tuning.cc ncclPatEnable and the algorithm loop, enqueue.cc
// the reduce-scatter's scaling ops); empty when it would.
std::string pat_unsupported_reason(const ClusterSpec& c, const Tuning& t, OpKind kind, Protocol p, ReduceOp op) {
  const auto& topo = t.topology();
  if (t.release().pat_bus_share <= 0) return "NCCL " + nccl_version_name(c.nccl_version) + " has no PAT (from 2.23)";
  if (kind != OpKind::allgather && kind != OpKind::reduce_scatter) return "PAT runs allgather and reduce_scatter only";
  if (topo.ranks != topo.nodes) return "PAT needs one GPU a node (NCCL enables it only there)";
  if (c.device.compute_capability < kPatMinComputeCapability - 0.05)
    return "PAT needs compute capability 6.0 or newer, not " + format_cc(c.device.compute_capability);
  // NCCL runs avg as a pre-multiplied sum (floating point) or a post-divided one (integers),
  // which its PAT reduce-scatter does not take.
  if (kind == OpKind::reduce_scatter && op == ReduceOp::avg) return "NCCL's PAT reduce-scatter does not run avg";
  if (p != Protocol::simple) return "PAT runs the Simple protocol only";
  return "";
}

}  // namespace

std::string unsupported_reason(const ClusterSpec& c, const Tuning& t, OpKind kind, Algorithm a, Protocol p, DType dtype,
                               ReduceOp op) {
  const auto& topo = t.topology();
  if (a == Algorithm::hierarchical) return "hierarchical is not an NCCL algorithm";
  if (a == Algorithm::pat) return pat_unsupported_reason(c, t, kind, p, op);
  if (kind != OpKind::allreduce && a != Algorithm::ring)
    return "redsim runs " + std::string(op_kind_name(kind)) + " with rings or PAT, as NCCL does (the NVLS allgather and reduce-scatter of 2.19+ are not modelled)";
  // Built only when a reason is returned: this runs for every choice the model ranks.
  const auto nccl_release = [&c] { return "NCCL " + nccl_version_name(c.nccl_version); };
  if (p == Protocol::ll128 && !t.release().has_ll128) return nccl_release() + " has no LL128 (from 2.5)";
  if (p == Protocol::ll128 && !topo.ll128) return "LL128 needs NVLink inside the node and compute capability 7.0 or newer";
  if (p == Protocol::ll128 && !ll128_on(t.release(), c.device.compute_capability))
    return nccl_release() + " enables LL128 on compute capability 7.0, 8.0 and 9.0 (10.0 and 12.0 from 2.25, " +
           "any from 7.0 from 2.27), not " + format_cc(c.device.compute_capability);
  if (p == Protocol::ll128 && topo.generation >= 2 && t.release().hopper_as_volta)
    return nccl_release() + " enables LL128 on Hopper only from 2.15";
  if (p == Protocol::ll128 && topo.generation != 0 && t.release().ll128_volta_only)
    return nccl_release() + " enables LL128 on Volta only (others from 2.7)";
  switch (a) {
    case Algorithm::collnet_direct:
    case Algorithm::collnet_chain:
      return "CollNet needs in-network reduction (SHARP) switches, which redsim does not model";
    case Algorithm::nvls:
    case Algorithm::nvls_tree:
      if (!t.release().has_nvls) return nccl_release() + " has no NVLS (from 2.17)";
      if (a == Algorithm::nvls_tree && !t.release().has_nvls_tree)
        return nccl_release() + " has no NVLSTree (from 2.18)";
      if (!topo.nvls) return "NVLS needs an NVSwitch with NVLink SHARP (intra_node.nvls) and more than 2 devices";
      if (a == Algorithm::nvls && c.nodes > 1) return "NVLS across nodes needs CollNet (SHARP); NCCL uses NVLSTree there";
      if (a == Algorithm::nvls_tree && c.nodes == 1) return "NVLSTree needs several nodes";
      if (!nvls_reduces(dtype, op))
        return "NVLS reduces float and double with sum only, half, bfloat16 and 32- or 64-bit integers with sum, "
               "min or max, and nothing else (not " + std::string(dtype_name(dtype)) + " with " +
               std::string(reduce_op_name(op)) + ")";
      if (p != Protocol::simple) return "NVLS runs the Simple protocol only";
      return "";
    default:
      return "";
  }
}

namespace {

// A graph's per-channel bandwidth as the release reads it: inside the node on up to 2 nodes (a
// quirk NCCL keeps; `across_nodes` reads the speed across on 2 nodes too), else across; from
// 2.19 NVLS takes the lesser, NVLSTree too (the speed across halved from 3 nodes).
double channel_bw_GBps(const Graph& g, Algorithm a, int nodes, bool across_nodes, const Release& r) {
  if (r.nvls_min_bw && a == Algorithm::nvls) return std::min(g.bw_intra_GBps, g.bw_inter_GBps);
  if (r.nvls_min_bw && a == Algorithm::nvls_tree)
    return std::min(g.bw_intra_GBps, nodes <= 2 ? g.bw_inter_GBps : g.bw_inter_GBps / 2);
  const bool inside = nodes == 1 || (nodes == 2 && !across_nodes);
  return inside ? g.bw_intra_GBps : g.bw_inter_GBps;
}

// 2.28's NVLS and NVLSTree bandwidth a channel (tuning.cc, "Convert to NVLS busBW/channel"): the
// switch's speed inside at the generation's efficiency over all channels but one, twice for an
// allreduce's two pipelined operations; the speed across, twice for NVLSTree on up to 2 nodes;
// NVLSTree's per-channel cap. 0 (disabled) under 2 channels.
double nvls_v2_28_channel_GBps(const Graph& g, const Release& r, Algorithm a, OpKind kind, int nodes, int ppn, int gen,
                               int ni) {
  if (g.channels < 2) return 0.0;
  double intra = g.bw_intra_GBps * r.nvls_efficiency[u(gen)] * (g.channels - 1) / g.channels;
  intra *= kind == OpKind::allreduce ? 2.0 : (ppn - 1.0) / ppn;
  const double inter = g.bw_inter_GBps * (a == Algorithm::nvls_tree && nodes <= 2 ? 2.0 : 1.0);
  const double cap = a == Algorithm::nvls_tree ? r.nvls_tree_max_GBps[u(gen)][u(ni)] : std::numeric_limits<double>::infinity();
  return std::min({intra, inter, cap});
}

}  // namespace

// PAT reads the tree graph (init.cc hands the algorithm index past NVLSTree the tree's graph):
// its channels x speed (inside the node on up to 2 nodes, as the other algorithms) at the
// release's share, taken as the algorithm bandwidth of the whole buffer. Its latency: a base,
// the tree's network hop (a Simple one: the plugin's latency twice) over 3.5 a doubling of the
// nodes, and 2.8 us a rank.
Entry Tuning::pat_entry() const {
  Entry e;
  const Release& r = release_;
  const Graph& g = topo_.tree;
  if (g.channels == 0 || r.pat_bus_share <= 0) return e;
  const int n = topo_.ranks, N = topo_.nodes;
  const double bus = g.channels * channel_bw_GBps(g, Algorithm::tree, N, false, r) * r.pat_bus_share;
  e.bus_bw_GBps = e.uncapped_bus_GBps = e.bw_GBps = bus;
  const std::size_t tree = u(algo_index(Algorithm::tree)), simple = u(proto_index(Protocol::simple));
  const double net_us = with_plugin_latency(r.hw_lat_us[u(static_cast<int>(Hw::net))][tree][simple], Protocol::simple, r,
                                            cluster_.inter.net_plugin_latency_us);
  e.latency_us = kPatBaseUs + log2i(N) * (net_us / kPatLogLatencyDivisor) + n * kPatRankUs;
  e.enabled = e.bw_GBps > 0;
  return e;
}

Entry Tuning::entry(OpKind kind, Algorithm a, Protocol p, bool across_nodes) const {
  if (a == Algorithm::pat) return p == Protocol::simple ? pat_entry() : Entry{};
  Entry e;
  const int ai = algo_index(a);
  if (ai < 0) return e;
  const Release& r = release_;
  const int n = topo_.ranks, N = topo_.nodes, ppn = n / N, ni = nodes_index(N);
  const int gen = gen_row(topo_, r, cluster_.device.compute_capability);
  // 2.17's NVLS (before NVLSTree) reads the ring graph: "we only need the NVSwitch speed".
  const bool nvls_on_ring = a == Algorithm::nvls && !r.has_nvls_tree;
  const Graph& g = a == Algorithm::tree ? topo_.tree : a == Algorithm::ring || nvls_on_ring ? topo_.ring : topo_.nvls_graph;
  if (g.channels == 0) return e;
  const bool nvls_28 = r.nvls_v2_28 && (a == Algorithm::nvls || a == Algorithm::nvls_tree);
  double bus = g.channels * (nvls_28 ? nvls_v2_28_channel_GBps(g, r, a, kind, N, ppn, gen, ni)
                                     : channel_bw_GBps(g, a, N, across_nodes, r));
  if (const double cap = r.bus_cap_GBps[u(gen)]; cap > 0) bus = std::min(bus, cap);
  const BusRules c{r, kind, p, N, ppn, gen, ni, g.channels, is_cc(cluster_.device.compute_capability, 8.0)};
  // With several nodes the LL cap's row is the host CPU's: AMD's (row 1), else Intel's (row 0).
  const double ll_max = r.ll_max_GBps[u(N == 1 ? gen : cluster_.host_cpu_vendor == CpuVendor::amd ? 1 : 0)][u(ni)];
  if (a == Algorithm::ring) bus = ring_bus_GBps(c, e, bus, ll_max);
  if (a == Algorithm::tree) bus = tree_bus_GBps(c, e, bus, ll_max, g.tree_pattern);
  if (e.total_cap_GBps <= 0) e.uncapped_bus_GBps = bus;
  double ratio = 0.5;
  if (a == Algorithm::ring || nvls_28) ratio = static_cast<double>(n) / ring_steps(kind, n);
  else if (a == Algorithm::nvls) ratio = r.nvls_ratio;
  else if (a == Algorithm::nvls_tree && r.nvls_min_bw) ratio = 5.0 / 6.0;
  else if (a == Algorithm::nvls_tree) ratio = 0.70 * N / (2.0 * (N - 1));
  e.bus_bw_GBps = bus;
  e.bw_GBps = bus * ratio;
  e.latency_us = latency_us(kind, a, p, g.intra_hw);
  e.enabled = e.bw_GBps > 0;
  return e;
}

// The model's latency (tuning.cc L202-239 in 2.18.5; the release's tables and rules after).
double Tuning::latency_us(OpKind kind, Algorithm a, Protocol p, Hw intra_hw) const {
  const Release& r = release_;
  const int ai = algo_index(a), pi = proto_index(p);
  const int n = topo_.ranks, N = topo_.nodes;
  const Hw hw = N == 1 ? intra_hw : Hw::net;
  double intra_lat = r.hw_lat_us[u(static_cast<int>(intra_hw))][u(ai)][u(pi)];
  if (r.ll_intra_lat_x1_8 && N > 1 && p == Protocol::ll) intra_lat *= 1.8;
  // From 2.23 one GPU a node pays the tree's network latency whatever the algorithm.
  const int net_algo = r.v2_23_rules && n == N ? algo_index(Algorithm::tree) : ai;
  double inter_lat = r.hw_lat_us[u(static_cast<int>(Hw::net))][u(net_algo)][u(pi)];
  if ((a != Algorithm::nvls && a != Algorithm::nvls_tree) || r.nvls_plugin_latency)
    inter_lat = with_plugin_latency(inter_lat, p, r, cluster_.inter.net_plugin_latency_us);
  double lat = r.base_lat_us[u(ai)][u(pi)];
  const int nsteps = ring_steps(kind, n), ninter = inter_steps(kind, N, r);
  if (a == Algorithm::ring && (kind == OpKind::broadcast || kind == OpKind::reduce)) {
    const int lat_algo = p == Protocol::simple ? algo_index(Algorithm::tree) : ai;  // "some chunk latency"
    lat += nsteps * r.hw_lat_us[u(static_cast<int>(hw))][u(lat_algo)][u(pi)];
  } else if (a == Algorithm::ring && r.ring_lat_all_steps) {
    lat += nsteps * r.hw_lat_us[u(static_cast<int>(hw))][u(ai)][u(pi)];
  } else if (a == Algorithm::ring) {
    const double net_overhead = N > 1 && r.net_overhead ? net_overhead_us(cluster_) * (p == Protocol::simple ? 3 : 1) : 0.0;
    lat += (nsteps - ninter) * std::max(intra_lat, net_overhead) + ninter * inter_lat;
  } else if (a == Algorithm::tree) {
    lat += 2 * ((n / N - 1) * intra_lat + log2i(N) * inter_lat);
  } else if (a == Algorithm::nvls) {  // 2.18.5's NVLink hop for NVLS is 0: its latency is in the base
    lat += intra_lat + (N > 1 ? inter_lat : 0.0);
  } else if (a == Algorithm::nvls_tree) {
    lat += intra_lat + (r.nvls_min_bw ? 2 * log2i(N) : 2 * (N - 1)) * inter_lat;
  }
  return lat;
}

double Tuning::time_us(OpKind kind, Algorithm a, Protocol p, std::int64_t bytes) const {
  const Entry e = entry(kind, a, p);
  if (!e.enabled) return std::numeric_limits<double>::infinity();
  double bw = e.bw_GBps;
  const Release& r = release_;
  if (a == Algorithm::tree) bw *= tree_correction(r, p, bytes);
  // 2.29.2: NVLSTree allreduce on Blackwell too, over the table one size longer.
  if (a == Algorithm::nvls_tree && kind == OpKind::allreduce && r.nvls_tree_corrected_on_blackwell &&
      topo_.generation >= 3)
    bw *= tree_correction(r, p, bytes, /*one_longer=*/true);
  double lat = e.latency_us;
  // "Plateau effect of ring" (tuning.cc L392; before 2.18 from ranks / 16 x 64 KiB).
  const bool plateau = r.plateau_by_ranks
                           ? static_cast<double>(bytes) >= topo_.ranks / 16.0 * 65536
                           : bytes / (static_cast<std::int64_t>(topo_.comm_channels) * topo_.ranks) >= 64;
  if (a == Algorithm::ring && p == Protocol::simple && topo_.nodes > 1 && kind == OpKind::allreduce && plateau &&
      r.ring_plateau)
    lat *= cluster_.device.compute_capability >= r.plateau_new_cc ? r.plateau_new_factor : 1.9;
  return lat + static_cast<double>(bytes) / (1000.0 * bw);
}

int Tuning::channels_for(OpKind kind, Algorithm a, Protocol p, std::int64_t bytes, int* threads) const {
  if (a == Algorithm::pat) {
    if (threads) *threads = kPatThreads;
    return topo_.comm_channels;
  }
  if (a == Algorithm::nvls || a == Algorithm::nvls_tree) {
    if (threads) *threads = 640;
    return topo_.nvls_channels;
  }
  int nc = topo_.comm_channels;
  int nt = kMaxThreads[u(proto_index(p))];
  if (a == Algorithm::ring && p == Protocol::simple && topo_.ring.bw_intra_GBps * topo_.ring.channels <= 12.0) nt = 256;
  std::int64_t threshold = kThreadThreshold[u(proto_index(p))];
  if (a == Algorithm::ring && p == Protocol::ll) threshold *= topo_.ranks;
  // Fewer channels, then fewer threads, while each thread would get less than its threshold
  // (enqueue.cc getAlgoInfo L1189-1221).
  while (bytes < static_cast<std::int64_t>(nc) * nt * threshold) {
    if (nc >= 2) --nc;
    else if (nt % 128 == 0) nt /= 2;
    else break;
  }
  if (p == Protocol::simple) nt += a == Algorithm::ring ? 32 : a == Algorithm::tree ? 128 : 0;
  if (threads) *threads = std::max(nt, 96);
  (void)kind;
  return nc;
}

Choice Tuning::rank(OpKind kind, std::int64_t bytes, DType dtype, ReduceOp op, std::uint32_t algorithms,
                    std::uint32_t protocols, std::string* why) const {
  Choice best;
  best.model_time_us = std::numeric_limits<double>::infinity();
  for (int ai = 0; ai <= kAlgoCount; ++ai)  // kAlgoCount: PAT, past NCCL's tables
    for (int pi = 0; pi < kProtoCount; ++pi) {
      const Algorithm a = ai == kAlgoCount ? Algorithm::pat : algo_of_index(ai);
      const Protocol p = proto_of_index(pi);
      if (!(algorithms & algo_bit(a)) || !(protocols & proto_bit(p))) continue;
      if (auto r = unsupported_reason(cluster_, *this, kind, a, p, dtype, op); !r.empty()) {
        if (why->empty()) *why = r;
        continue;
      }
      const double t = time_us(kind, a, p, bytes);
      if (t < best.model_time_us) best = {a, p, 0, 0, t};
    }
  return best;
}

Choice Tuning::choose(OpKind kind, std::int64_t bytes, DType dtype, ReduceOp op, const CollectiveRequest& req) const {
  const int version = cluster_.nccl_version;
  // NCCL before 2.23 ignores the name PAT; a simulation pinned to PAT there is refused instead.
  // (In a list it is ignored, as NCCL does: the release's PAT is unsupported and never ranks.)
  if (req.algorithm == Algorithm::pat && release_.pat_bus_share <= 0)
    throw InputError("", "", "cluster \"" + cluster_.name + "\": " +
                                 pat_unsupported_reason(cluster_, *this, kind, Protocol::simple, op));
  if (req.algorithm_list || req.protocol_list)
    if (auto r = list_unsupported_reason(req, version); !r.empty())
      throw InputError("", "", "cluster \"" + cluster_.name + "\": NCCL " + nccl_version_name(version) + ": " + r);
  // NCCL_ALGO and NCCL_PROTO as the release applies them to this collective (nccl_algo_pin.h).
  const AlgoPin pin = pin_for(kind, req, version, PinSite{cluster_.nodes, topo_.nvls});
  std::string why;
  Choice best = rank(kind, bytes, dtype, op, pin.algorithms, pin.protocols, &why);
  // 2.19 to 2.23 a collective whose pinned algorithms cannot run here (PAT on nodes of several
  // GPUs; a list's NVLS without NVLink SHARP) runs rings; from 2.24 the call fails.
  if (!std::isfinite(best.model_time_us) && (req.algorithm || req.algorithm_list))
    if (const auto rings = ring_fallback(kind, req, version))
      best = rank(kind, bytes, dtype, op, rings->algorithms, rings->protocols, &why);
  if (!std::isfinite(best.model_time_us)) {
    const std::string asked = req.algorithm || req.algorithm_list ? requested_pins(req)
                              : req.protocol || req.protocol_list ? "algorithm with " + requested_pins(req)
                                                                  : "algorithm";
    throw InputError("", "", "cluster \"" + cluster_.name + "\": NCCL " + nccl_version_name(version) + " has no " +
                                 asked + " for " + std::string(op_kind_name(kind)) + (why.empty() ? "" : ": " + why));
  }
  best.channels = channels_for(kind, best.algorithm, best.protocol, bytes, &best.threads);
  return best;
}

}  // namespace redsim::nccl
