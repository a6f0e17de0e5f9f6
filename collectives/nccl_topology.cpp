#include "collectives/nccl_topology.h"

#include <algorithm>
#include <cmath>
#include <span>

namespace redsim::nccl {
namespace {

constexpr int kMaxRingChannels = kMaxChannels / 2;  // ring graphs: MAXCHANNELS/2 (init.cc L875-911)

int generation_of(double cc) { return cc < 8.0 ? 0 : cc < 9.0 ? 1 : cc < 10.0 ? 2 : 3; }

std::span<const double> speeds(int generation, bool multi_node) {
  if (generation >= 3)
    return multi_node ? std::span<const double>(kSm100SpeedInter) : std::span<const double>(kSm100SpeedIntra);
  if (generation >= 2) return multi_node ? std::span<const double>(kSm90SpeedInter) : std::span<const double>(kSm90SpeedIntra);
  return multi_node ? std::span<const double>(kSpeedInter) : std::span<const double>(kSpeedIntra);
}

double nic_GBps(const ClusterSpec& c) { return c.inter.nic_bandwidth_gbps / 8.0; }  // topo.cc L338: Mb/s / 8000

// A device's NVLink bandwidth in all (nvswitch: its port; nvlink: the sum of its links).
double nvlink_total_GBps(const ClusterSpec& c) {
  if (c.intra.fabric == IntraFabric::nvswitch) return c.devices_per_node > 1 ? c.intra.link_bandwidth_GBps : 0.0;
  if (c.intra.fabric != IntraFabric::nvlink) return 0.0;
  double best = 0;
  for (const auto& row : c.intra.nvlinks) {
    int links = 0;
    for (int l : row) links += l;
    best = std::max(best, links * c.intra.link_bandwidth_GBps);
  }
  return best;
}

double pcie_GBps(const ClusterSpec& c) {
  if (c.intra.fabric == IntraFabric::pcie) return c.intra.link_bandwidth_GBps;
  return c.device.pcie_GBps;  // 0: not given, not a bottleneck
}

double min_known(double a, double b) { return a <= 0 ? b : b <= 0 ? a : std::min(a, b); }

// Directed NVLink capacity between devices of an nvlink fabric, GB/s.
std::vector<std::vector<double>> nvlink_capacity(const ClusterSpec& c) {
  const auto d = static_cast<std::size_t>(c.devices_per_node);
  std::vector<std::vector<double>> cap(d, std::vector<double>(d, 0.0));
  for (std::size_t i = 0; i < d; ++i)
    for (std::size_t j = 0; j < d; ++j) cap[i][j] = c.intra.nvlinks[i][j] * c.intra.link_bandwidth_GBps;
  return cap;
}

// Hamiltonian cycles over the links with room for `s`, as device orders starting at device 0
// (each direction of travel counts as its own cycle). Bounded: a few thousand at most.
void cycles_from(const std::vector<std::vector<double>>& cap, double s, std::vector<int>& path, std::vector<char>& used,
                 std::vector<std::vector<int>>& out) {
  const int d = static_cast<int>(cap.size());
  if (out.size() >= 4096) return;
  const int last = path.back();
  if (static_cast<int>(path.size()) == d) {
    if (cap[static_cast<std::size_t>(last)][0] >= s) out.push_back(path);
    return;
  }
  for (int next = 1; next < d; ++next) {
    if (used[static_cast<std::size_t>(next)] || cap[static_cast<std::size_t>(last)][static_cast<std::size_t>(next)] < s) continue;
    used[static_cast<std::size_t>(next)] = 1;
    path.push_back(next);
    cycles_from(cap, s, path, used, out);
    path.pop_back();
    used[static_cast<std::size_t>(next)] = 0;
  }
}

// Depth-first packing of cycles (each may repeat) onto the links, most rings first; `budget`
// bounds the states visited so that large link matrices stay cheap.
void pack_rings(const std::vector<std::vector<int>>& cycles, std::size_t from, std::vector<std::vector<double>>& cap, double s,
                std::vector<std::size_t>& picked, std::vector<std::size_t>& best, long& budget) {
  if (picked.size() > best.size()) best = picked;
  if (static_cast<int>(picked.size()) >= kMaxRingChannels || --budget <= 0) return;
  const auto d = cap.size();
  for (std::size_t i = from; i < cycles.size() && budget > 0; ++i) {
    const auto& cyc = cycles[i];
    bool fits = true;
    for (std::size_t k = 0; k < d && fits; ++k) fits = cap[static_cast<std::size_t>(cyc[k])][static_cast<std::size_t>(cyc[(k + 1) % d])] >= s - 1e-9;
    if (!fits) continue;
    for (std::size_t k = 0; k < d; ++k) cap[static_cast<std::size_t>(cyc[k])][static_cast<std::size_t>(cyc[(k + 1) % d])] -= s;
    picked.push_back(i);
    pack_rings(cycles, i, cap, s, picked, best, budget);
    picked.pop_back();
    for (std::size_t k = 0; k < d; ++k) cap[static_cast<std::size_t>(cyc[k])][static_cast<std::size_t>(cyc[(k + 1) % d])] += s;
  }
}

// Rings of `s` GB/s on the NVLinks: as many as fit (NCCL's search maximises channels x speed).
std::vector<std::vector<int>> pack_nvlink_rings(const ClusterSpec& c, double s) {
  auto cap = nvlink_capacity(c);
  const auto d = cap.size();
  if (d < 2) return {};
  std::vector<std::vector<int>> cycles;
  std::vector<int> path{0};
  std::vector<char> used(d, 0);
  used[0] = 1;
  cycles_from(cap, s, path, used, cycles);
  std::vector<std::size_t> picked, best;
  long budget = 200000;
  pack_rings(cycles, 0, cap, s, picked, best, budget);
  std::vector<std::vector<int>> rings;
  for (auto i : best) rings.push_back(cycles[i]);
  return rings;
}

// How many ring channels of `s` GB/s fit inside a node: every channel passes each device once;
// with several nodes each channel enters and leaves a node through one device, which then uses a
// NIC instead of the fabric for that direction.
int intra_ring_channels(const ClusterSpec& c, double s, std::vector<std::vector<int>>* rings) {
  const int d = c.devices_per_node;
  if (d < 2) return kMaxRingChannels;
  auto fits = [&](int n, double capacity, double per_channel_load) {
    return capacity <= 0 || n * per_channel_load * s <= capacity * (1 + 1e-9);
  };
  auto device_load = [&](int n) { return c.nodes > 1 ? static_cast<double>(n - n / d) / n : 1.0; };
  if (c.intra.fabric == IntraFabric::nvlink) {
    auto r = pack_nvlink_rings(c, s);
    if (rings) *rings = r;
    return static_cast<int>(r.size());
  }
  int best = 0;
  for (int n = 1; n <= kMaxRingChannels; ++n) {
    bool ok = true;
    if (c.intra.fabric == IntraFabric::nvswitch) {
      ok = fits(n, c.intra.link_bandwidth_GBps, device_load(n));
    } else {
      const int per_switch = c.intra.devices_per_pcie_switch > 0 ? c.intra.devices_per_pcie_switch : d;
      // Without peer-to-peer every hop goes up to host memory and down again, so each uplink
      // carries the traffic of every device behind it; with it, a ring crosses each uplink once.
      const double uplink_load = c.intra.p2p ? (c.pcie_switches_per_node() > 1 ? 1.0 : 0.0) : per_switch;
      ok = fits(n, c.intra.link_bandwidth_GBps, device_load(n)) &&
           (uplink_load == 0 || fits(n, c.intra.pcie_uplink_GBps, uplink_load)) &&
           (c.intra.sockets < 2 || fits(n, c.intra.socket_link_GBps, 1.0));
    }
    if (!ok) break;
    best = n;
  }
  return best;
}

int ring_channels(const ClusterSpec& c, double s, std::vector<std::vector<int>>* rings) {
  int n = intra_ring_channels(c, s, rings);
  if (c.nodes > 1) {
    // Each channel leaves and enters a node through a NIC (each direction once).
    const int per_nic = static_cast<int>(std::floor(nic_GBps(c) / s + 1e-9));
    n = std::min(n, per_nic * c.inter.nics_per_node);
    const double gpu_pcie = c.device.pcie_GBps;
    if (gpu_pcie > 0) n = std::min(n, static_cast<int>(std::floor(gpu_pcie / s + 1e-9)) * c.devices_per_node);
  }
  return std::min(n, kMaxRingChannels);
}

Graph search_ring(const ClusterSpec& c, int generation, std::vector<std::vector<int>>& rings) {
  const bool multi = c.nodes > 1;
  const double nvl = nvlink_total_GBps(c);
  const double pcie = pcie_GBps(c);
  double max_bw = 0;  // the best single path from a device (to a peer, or to the network)
  if (multi) {
    max_bw = min_known(nic_GBps(c), c.device.pcie_GBps);
  } else if (c.intra.fabric == IntraFabric::nvlink) {
    for (const auto& row : nvlink_capacity(c))
      for (double v : row) max_bw = std::max(max_bw, v);
  } else {
    max_bw = c.intra.fabric == IntraFabric::nvswitch ? nvl : pcie;
  }
  const double total_bw = std::max(nvl, pcie > 0 ? pcie : max_bw);
  Graph g;
  g.intra_hw = c.intra.fabric == IntraFabric::pcie && c.devices_per_node > 1 ? Hw::pci : Hw::nvlink;
  double best_s = 0;
  int best_n = 0;
  for (double s : speeds(generation, multi)) {
    if (s > max_bw * (1 + 1e-9) || (total_bw > 0 && s > total_bw * (1 + 1e-9))) continue;
    if (best_s > 0 && s <= 0.49 * best_s) break;
    std::vector<std::vector<int>> r;
    const int n = ring_channels(c, s, &r);
    if (n >= 1 && n * s > best_n * best_s * (1 + 1e-9)) {
      best_n = n, best_s = s;
      rings = r;
    }
    if (n >= 1 && n * s >= total_bw * (1 - 1e-9)) break;  // the links are full: NCCL stops here
  }
  if (best_n == 0) best_n = 1, best_s = speeds(generation, multi).back();
  g.channels = best_n;
  g.bw_intra_GBps = g.bw_inter_GBps = best_s;
  // Fast channels are split in two (search.cc L986-997): A100's 6 x 40 become 12 x 20.
  const double cc = c.device.compute_capability;
  if (best_s >= 25 && !(cc > 8.0 + 1e-6 && best_s < 50 && best_n > 4)) {
    g.channels = std::min(2 * best_n, kMaxRingChannels);
    g.bw_intra_GBps /= 2;
    g.bw_inter_GBps /= 2;
    if (!rings.empty()) {
      const auto n = rings.size();
      for (std::size_t i = 0; i < n && rings.size() < static_cast<std::size_t>(g.channels); ++i) rings.push_back(rings[i]);
    }
  }
  return g;
}

Graph tree_graph(const ClusterSpec& c, const Graph& ring, int generation) {
  Graph t = ring;
  if (c.nodes > 1) {
    // Pass 2 raises the intra-node speed of trees while it stays below twice the network's and
    // the node's chains still fit (search.cc L965-972).
    const double nvl = nvlink_total_GBps(c);
    const double load = static_cast<double>(c.devices_per_node - 1) / c.devices_per_node;
    for (double s : speeds(generation, true))
      if (s >= ring.bw_intra_GBps && s < 2 * ring.bw_inter_GBps && (nvl <= 0 ? s <= ring.bw_intra_GBps : t.channels * s * load <= nvl)) {
        t.bw_intra_GBps = std::max(t.bw_intra_GBps, s);
      }
    t.tree_pattern = generation >= 2;  // on SM90 the search relaxes BALANCED_TREE to TREE
  }
  return t;
}

Graph nvls_graph(const ClusterSpec& c, const Graph& ring, int generation) {
  Graph g;
  const int d = c.devices_per_node;
  const auto intra = speeds(generation, false);
  // One head per device; each device's port carries (d + 1) x speed (transport search.cc L306-337).
  for (std::size_t i = 0; i < intra.size(); ++i) {
    const double s = intra[i];
    if ((d + 1) * s > c.intra.link_bandwidth_GBps * (1 + 1e-9)) continue;
    g.channels = d;
    g.bw_intra_GBps = s;
    g.bw_inter_GBps = c.nodes > 1 ? ring.bw_inter_GBps : s;
    // Pass 2 raises a one-node NVLS graph's speed across while it is under twice the speed
    // inside; nothing inside a node carries it (search.cc, from 2.19), so a DGX H100 reads
    // 40/60 GB/s. Only 2.28's NVLS rule reads it (nvls_v2_28).
    for (std::size_t k = i; c.nodes == 1 && k > 0 && g.bw_inter_GBps < 2 * s; --k) g.bw_inter_GBps = intra[k - 1];
    break;
  }
  return g;
}

// NVLS channels (transport/nvls.cc): 16 on Hopper; on Blackwell 32, or 24 within one node from
// 2.27.3 (NVLS_NCHANNELS_SM100_NVL).
int nvls_channels(const ClusterSpec& c, int generation) {
  if (generation < 3) return kNvlsChannels;
  return c.nodes == 1 && c.nccl_version >= 22700 ? kNvlsChannelsSm100OneNode : kNvlsChannelsSm100;
}

}  // namespace

bool is_cc(double cc, double want) { return std::fabs(cc - want) < 0.05; }

Topology topology_of(const ClusterSpec& c, int channels) {
  Topology t;
  t.generation = generation_of(c.device.compute_capability);
  t.nodes = c.nodes;
  t.ranks = c.world_size();
  t.ring = search_ring(c, t.generation, t.rings);
  t.tree = tree_graph(c, t.ring, t.generation);
  const double cc = c.device.compute_capability;
  t.nvls = c.intra.fabric == IntraFabric::nvswitch && c.intra.nvls && t.generation >= 2 && c.devices_per_node > 2;
  if (t.nvls) {
    t.nvls_graph = nvls_graph(c, t.ring, t.generation);
    t.nvls = t.nvls_graph.channels > 0;
  }
  if (t.nvls) t.nvls_channels = std::min(nvls_channels(c, t.generation), kMaxChannels);
  // LL128 (tuning.cc L246, L280-294): NVLink inside the node; which compute capabilities a
  // release enables it on is the release's (Release::ll128_cc).
  const bool nvlink_intra = c.devices_per_node < 2 || c.intra.fabric != IntraFabric::pcie;
  t.ll128 = nvlink_intra && cc >= 7.0 - 0.05;
  // Execution channels: twice the search channels (connect.cc L391), twice again with several
  // nodes and fast rings (L404-407): from 2.18.1 on compute capability 9.0 while within
  // MAXCHANNELS (32), from 2.20.3 only under 16 channels, from 2.25.1 on 9.0 and newer.
  t.comm_channels = std::min(kMaxChannels, 2 * t.ring.channels);
  const int v = c.nccl_version;
  const bool fast_rings = c.nodes > 1 && t.ring.bw_intra_GBps > 45 && v >= 21800 &&
                          (v >= 22500 ? cc >= 9.0 - 0.05 : is_cc(cc, 9.0));
  if (fast_rings && (v >= 22000 ? t.comm_channels < 16 : 2 * t.comm_channels <= kMaxChannels)) t.comm_channels *= 2;
  if (channels > 0) {
    t.comm_channels = channels;
    if (t.nvls) t.nvls_channels = channels;
  }
  return t;
}

Hw hop_hw(const ClusterSpec& c, int src, int dst) {
  if (c.node_of(src) != c.node_of(dst)) return Hw::net;
  switch (c.intra.fabric) {
    case IntraFabric::nvswitch:
      return Hw::nvlink;
    case IntraFabric::nvlink:
      return c.intra.nvlinks[static_cast<std::size_t>(c.local_of(src))][static_cast<std::size_t>(c.local_of(dst))] > 0 ? Hw::nvlink : Hw::pci;
    case IntraFabric::pcie:
      break;
  }
  return Hw::pci;
}

}  // namespace redsim::nccl
