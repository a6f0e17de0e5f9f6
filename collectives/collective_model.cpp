#include "collectives/collective_model.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <utility>

#include "collectives/cluster_subset.h"
#include "collectives/nccl_algo_pin.h"
#include "collectives/nccl_tuning.h"
#include "collectives/reduction_work.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/pipeline.h"

namespace redsim {
namespace {

using nccl::Hw;

void choose_ideal(PlanOp& op) {
  const Algorithm a = op.request.algorithm.value_or(Algorithm::ring);
  if (a == Algorithm::binomial) {
    // Gloo's broadcast, asked for by plans of PyTorch's own broadcasts (strategies/zero_pytorch.h).
    if (op.kind != OpKind::broadcast) throw InputError("", "", "the binomial algorithm is a broadcast's (op \"" + op.name + "\")");
    op.algorithm = a;
    op.protocol.reset();
    op.channels = 1;
    return;
  }
  if (op.request.algorithm_list || op.request.protocol_list)
    throw InputError("", "", "NCCL_ALGO/NCCL_PROTO lists (" + nccl::requested_pins(op.request) +
                                 ") need a cluster with \"collective_library\": \"nccl\" (this one has ideal collectives)");
  if (a != Algorithm::ring && a != Algorithm::tree && a != Algorithm::hierarchical)
    throw InputError("", "", "algorithm " + std::string(algorithm_name(a)) +
                                 " needs a cluster with \"collective_library\": \"nccl\" (this one has ideal collectives)");
  if (op.request.protocol)
    throw InputError("", "", "protocol " + std::string(protocol_name(*op.request.protocol)) +
                                 " needs a cluster with \"collective_library\": \"nccl\" (this one has ideal collectives)");
  // As in NCCL, collectives other than allreduce run rings whatever the algorithm knob says.
  op.algorithm = op.kind == OpKind::allreduce ? a : Algorithm::ring;
  op.protocol.reset();
  op.channels = op.request.channels > 0 ? op.request.channels : 1;
}

void choose_nccl(PlanOp& op, const ClusterSpec& cluster, const nccl::Tuning& t, AvgAs avg) {
  const auto& req = op.request;
  const ReduceOp issued = op.reduce_op == ReduceOp::avg && avg == AvgAs::framework_sum ? ReduceOp::sum : op.reduce_op;
  if (op.kind == OpKind::allreduce && req.algorithm == Algorithm::hierarchical) {
    // A two-level ring NCCL does not offer: its phases are rings, with the ring's protocol.
    auto ring_req = req;
    ring_req.algorithm = Algorithm::ring;
    const auto ring = t.choose(op.kind, op.bytes, op.dtype, issued, ring_req);
    op.algorithm = Algorithm::hierarchical;
    op.protocol = ring.protocol;
    op.channels = ring.channels;
    return;
  }
  const auto c = t.choose(op.kind, op.bytes, op.dtype, issued, req);
  op.algorithm = c.algorithm;
  op.protocol = c.protocol;
  op.channels = c.channels;
  (void)cluster;
}

}  // namespace

void choose_collective(PlanOp& op, const ClusterSpec& cluster, AvgAs avg) {
  if (!op_kind_is_collective(op.kind)) return;
  if (cluster.library == CollectiveLibrary::ideal) return choose_ideal(op);
  // A grouped collective is NCCL's choice on the communicator of its group.
  const ClusterSpec on = op.group_size > 0 ? group_cluster(cluster, op.group_size, op.group_stride) : cluster;
  choose_nccl(op, on, nccl::Tuning(on, op.request.channels), avg);
}

void choose_collectives(Plan& plan, const ClusterSpec& cluster) {
  if (cluster.library == CollectiveLibrary::ideal) {
    for (auto& op : plan.ops)
      if (op_kind_is_collective(op.kind)) choose_ideal(op);
    return;
  }
  // Tunings by (group size, group stride, pinned channel count); group size 0 is the whole
  // cluster. A Tuning refers to its cluster, which std::map keeps in place.
  std::map<std::pair<int, int>, ClusterSpec> groups;
  std::map<std::tuple<int, int, int>, nccl::Tuning> tunings;
  for (auto& op : plan.ops) {
    if (!op_kind_is_collective(op.kind)) continue;
    const int stride = op.group_size > 0 ? op.group_stride : 1;
    const ClusterSpec* on = &cluster;
    if (op.group_size > 0) {
      auto g = groups.find({op.group_size, stride});
      if (g == groups.end()) g = groups.emplace(std::make_pair(op.group_size, stride), group_cluster(cluster, op.group_size, stride)).first;
      on = &g->second;
    }
    const auto key = std::make_tuple(op.group_size, stride, op.request.channels);
    auto it = tunings.find(key);
    if (it == tunings.end()) it = tunings.emplace(key, nccl::Tuning(*on, op.request.channels)).first;
    choose_nccl(op, *on, it->second, AvgAs::framework_sum);
  }
}

namespace {

// Tree depth of NCCL's tree: a chain through the node, then a binary tree over the nodes.
int tree_depth(const ClusterSpec& c) {
  return std::max(1, c.devices_per_node - 1 + nccl::log2i(c.nodes));
}

// Chunk a tree or NVLS channel moves per step, after NCCL's halving rules (enqueue.cc
// L1312-1369): small collectives use smaller chunks so that the pipeline still fills.
std::int64_t tree_chunk(std::int64_t bytes, int channels, int depth, std::int64_t chunk) {
  auto per = [&](std::int64_t ch) { return bytes / (static_cast<std::int64_t>(channels) * ch); };
  while (per(chunk) < depth * 8 && chunk > 131072) chunk /= 2;
  while (per(chunk) < depth * 4 && chunk > 65536) chunk /= 2;
  while (per(chunk) < depth && chunk > 32768) chunk /= 2;
  return chunk;
}

// A tree LL128 step's payload (enqueue.cc L1361-1369): the 614,400-byte step (flags included)
// is halved while each channel would get fewer than (1 + log2 nodes + ppn / 10) x 64 / ppn steps
// (down to 131,072), then fewer than that x 16 / ppn (down to 32,768); 120 of every 128 bytes
// are data. The proxy sends such a step over the network once its lines are in (net.cc).
std::int64_t tree_ll128_step_payload(std::int64_t bytes, int channels, int nodes, int ranks) {
  const double ppn = static_cast<double>(ranks) / std::max(1, nodes);
  const double steps = 1 + nccl::log2i(nodes) + 0.1 * ppn;
  std::int64_t chunk = nccl::kLl128StepBytes;
  auto per = [&](std::int64_t ch) { return static_cast<double>(bytes / (static_cast<std::int64_t>(channels) * ch)); };
  while (per(chunk) < steps * 64 / ppn && chunk > 131072) chunk /= 2;
  while (per(chunk) < steps * 16 / ppn && chunk > 32768) chunk /= 2;
  return chunk / 16 * 15;
}

// The first NCCL release that splits an NVLS allreduce over its channels (2.20.3's
// src/device/all_reduce.h; 2.19.4 still strides blocks by channel).
constexpr int kNvlsEvenLayoutVersion = 22000;

std::int64_t nvls_chunk(std::int64_t bytes, int channels, int heads) {
  const std::int64_t ops = static_cast<std::int64_t>(channels) * heads;
  std::int64_t chunk = nccl::kNvlsChunkBytes;
  if (bytes < 64 * ops * chunk) chunk = 65536;
  if (bytes < 8 * ops * chunk) chunk = 32768;
  if (bytes < 2 * ops * chunk) chunk = 16384;
  return chunk;
}

// NVLSTree's chunk (2.18.5 enqueue.cc L1312-1369): a Simple step (512 KiB), cut to 256, 128, 64
// and 32 KiB for smaller buffers. From 2.21 (enqueue.cc, NCCL_NVLS_CHUNKSIZE and
// NCCL_NVLS_TREE_MAXCHUNKSIZE) it starts at 128 KiB, and at 64 KiB from 4 nodes.
std::int64_t nvls_tree_chunk(std::int64_t bytes, int channels, int heads, std::int64_t first_chunk) {
  const std::int64_t ops = static_cast<std::int64_t>(channels) * heads;
  std::int64_t chunk = first_chunk;
  for (auto [factor, to] : {std::pair<std::int64_t, std::int64_t>{32, 262144}, {16, 131072}, {4, 65536}, {1, 32768}})
    if (bytes < factor * ops * chunk && chunk > to) chunk = to;
  return chunk;
}

// A ring allreduce's chunk grain (all_reduce.h runRing): LL 8 data bytes a thread, LL128 60
// bytes a thread halved ("makes performance much, much smoother", the source says); in
// elements, as NCCL rounds them. Simple lays its pieces channel by channel, which at mid sizes
// would leave whole channels idle; with each channel capped at its even share of the bus that
// would be charged as lost time rather than as the free links the busy channels could use, so
// Simple stays even.
void set_ring_grain(Mechanics& m, const PlanOp& op, Protocol p, int threads) {
  const auto e = static_cast<int>(dtype_size_bytes(op.dtype));
  if (p == Protocol::simple || e <= 0 || threads <= 0) return;
  m.elem_bytes = e;
  const int thread_bytes = p == Protocol::ll ? static_cast<int>(nccl::kLlLinePayloadBytes) : 60;
  m.ring_grain_elems = static_cast<std::int64_t>(threads) * (thread_bytes / e) / (p == Protocol::ll ? 1 : 2);
}

// A ring step's passes: one pass of the channel's threads moves threads x 8 B with LL (a 16-byte
// line a thread) and threads / 32 x 1,920 B with LL128 (a warp's slice of 32 x 8 words, one in 16
// a flag: 2.18.5 prims_ll128.h WireWordPerSlice, DataEltPerSlice), and a warp with no data in a
// pass waits for those with some. So a step smaller than a pass, as a ring's steps of 1 / ranks
// of a channel's share are at mid sizes, lasts a whole pass at the cap. Chains (broadcast,
// reduce) step by whole chunks, where the rounding is small, and stream.
void set_ring_passes(Mechanics& m, Protocol p, int threads) {
  if (p == Protocol::simple || threads <= 0) return;
  m.pass_bytes = p == Protocol::ll ? std::int64_t{threads} * nccl::kLlLinePayloadBytes
                                   : std::int64_t{threads} / nccl::kWarpThreads * nccl::kLl128WarpSlicePayloadBytes;
}

void set_nvls(Mechanics& m, const ClusterSpec& c, const PlanOp& op, const nccl::Release& rel, double model_bw_GBps,
              int nvls_channels) {
  if (op.algorithm == Algorithm::nvls_tree) {
    const std::int64_t first = rel.nvls_chunk_bytes == 0 ? nccl::kSimpleStepBytes
                               : c.nodes >= 4          ? std::min<std::int64_t>(rel.nvls_chunk_bytes, 65536)
                                                       : rel.nvls_chunk_bytes;
    m.chunk_bytes = nvls_tree_chunk(op.bytes, op.channels, c.devices_per_node, first);
    return;
  }
  m.chunk_bytes = nvls_chunk(op.bytes, op.channels, c.devices_per_node);
  m.nvls_block_layout = c.nccl_version < kNvlsEvenLayoutVersion;
  // A channel is one thread block: it moves a loop no faster than its share of the model's NVLS
  // algorithm bandwidth (bus x 5/6 over the NVLS channels), which binds when the layout leaves
  // channels idle and the busy ones cannot take the idle ones' share of the ports.
  m.channel_cap_Bps = model_bw_GBps / std::max(1, nvls_channels) * 1e9;
}

}  // namespace

std::int64_t wire_bytes(const Mechanics& m, std::int64_t payload) {
  return m.wire_factor == 1.0 ? payload : static_cast<std::int64_t>(std::llround(static_cast<double>(payload) * m.wire_factor));
}

int nvls_loops(const Mechanics& m, std::int64_t bytes, int heads) {
  const std::int64_t per_loop = static_cast<std::int64_t>(std::max(1, heads)) * std::max<std::int64_t>(1, m.chunk_bytes);
  return static_cast<int>(std::max<std::int64_t>(1, (bytes + per_loop - 1) / per_loop));
}

std::int64_t nvls_slice(std::int64_t bytes, int loops, int loop) {
  return bytes / loops + (loop < bytes % loops ? 1 : 0);
}

std::vector<NvlsStep> nvls_channel_steps(const Mechanics& m, std::int64_t op_bytes, int channels, int channel,
                                         int heads, int head) {
  // Each loop's slice of the channel and this head's piece of it, as the release lays them out.
  std::vector<std::pair<std::int64_t, std::int64_t>> loops;
  if (!m.nvls_block_layout) {
    const std::int64_t bytes = split_piece(op_bytes, channels, channel);
    const int n = nvls_loops(m, bytes, heads);
    for (int l = 0; l < n; ++l) {
      const auto slice = nvls_slice(bytes, n, l);
      loops.emplace_back(slice, nvls_piece(slice, heads, head));
    }
  } else {
    const std::int64_t chunk = std::max<std::int64_t>(1, m.chunk_bytes), block = chunk * std::max(1, heads);
    const std::int64_t loop_bytes = block * std::max(1, channels);
    for (std::int64_t off = static_cast<std::int64_t>(channel) * block; off < op_bytes; off += loop_bytes) {
      const auto slice = std::min(block, op_bytes - off);
      // Head h reduces the h-th chunk of the block, so a short block leaves its last heads idle.
      loops.emplace_back(slice, std::clamp<std::int64_t>(slice - head * chunk, 0, chunk));
    }
  }
  // Loop 0's scatter, each loop's reduce stage, the last loop's gather.
  std::vector<NvlsStep> out;
  const int n = static_cast<int>(loops.size());
  for (int k = 0; n > 0 && k < nvls_steps(n); ++k) {
    const auto [slice, piece] = loops[static_cast<std::size_t>(std::clamp(k - 1, 0, n - 1))];
    out.push_back(NvlsStep{slice + piece, k >= 1 && k <= n, slice});
  }
  return out;
}

std::vector<std::int64_t> ring_allreduce_chunks(const Mechanics& m, std::int64_t bytes, int channels, int channel, int n) {
  std::vector<std::int64_t> out(static_cast<std::size_t>(std::max(0, n)));
  const std::int64_t channel_bytes = split_piece(bytes, channels, channel);
  const std::int64_t e = m.elem_bytes, grain = m.ring_grain_elems;
  const std::int64_t count = e > 0 ? bytes / e : 0, chunk = e > 0 ? m.chunk_bytes / e : 0;
  const std::int64_t slots = static_cast<std::int64_t>(channels) * n;
  if (grain <= 0 || e <= 0 || n < 2 || bytes % e != 0 || chunk <= 0 || count > slots * chunk) {
    for (int j = 0; j < n; ++j) out[static_cast<std::size_t>(j)] = split_piece(channel_bytes, n, j);
    return out;
  }
  const std::int64_t real = std::min(chunk, (count + slots * grain - 1) / (slots * grain) * grain);
  // The channel's share as NCCL lays the pieces out; within the channel a ring step of LL and
  // LL128 streams line by line, so its chunks are taken as even (the ring's time then depends
  // on the bytes a link carries, not on which step carries them).
  std::int64_t mine = 0;
  for (std::int64_t c = 0; c < n; ++c) {
    mine += std::clamp<std::int64_t>(count - (c * channels + channel) * real, 0, real) * e;
  }
  for (int j = 0; j < n; ++j) out[static_cast<std::size_t>(j)] = split_piece(mine, n, j);
  return out;
}

int Mechanics::stream_group(bool network_hop, std::int64_t piece_bytes) const {
  if (!network_hop || stream_net_step_bytes <= 0 || piece_bytes <= 0) return 1;
  return static_cast<int>(std::max<std::int64_t>(1, stream_net_step_bytes / piece_bytes));
}

double Mechanics::cap_time_s(std::int64_t payload, int steps) const {
  if (channel_cap_Bps <= 0 || payload <= 0) return 0.0;
  steps = std::max(1, steps);
  if (pass_bytes > 0) {
    const std::int64_t per_step = (payload + steps - 1) / steps;
    payload = (per_step + pass_bytes - 1) / pass_bytes * pass_bytes * steps;
  }
  return static_cast<double>(payload) / channel_cap_Bps;
}

int Mechanics::chunks(std::int64_t bytes) const {
  if (chunk_bytes <= 0) return pipeline_chunks(bytes);
  return static_cast<int>(std::max<std::int64_t>(1, (bytes + chunk_bytes - 1) / chunk_bytes));
}

// Each hop class's synchronisation latency per step. NVLS's and NVLSTree's network hop is the
// release's (NVLSTree: 19 us in 2.18.5, 14 from 2.19), as their NVLS latency is; the other hops
// keep 2.18.5's, which the engines were checked with.
void set_hop_latencies(Mechanics& m, const ClusterSpec& c, const nccl::Release& rel, Algorithm a, Protocol p, bool chain,
                       double plateau) {
  const bool nvls = a == Algorithm::nvls || a == Algorithm::nvls_tree;
  const auto pi = static_cast<std::size_t>(nccl::proto_index(p));
  const auto lat_algo = static_cast<std::size_t>(nccl::algo_index(chain && p == Protocol::simple ? Algorithm::tree : a));
  for (int h = 0; h < 3; ++h) {
    const auto& table = nvls && h == static_cast<int>(Hw::net) ? rel.hw_lat_us : nccl::kHwLatUs;
    double us = table[static_cast<std::size_t>(h)][lat_algo][pi];
    if (a == Algorithm::ring && !chain && c.nodes > 1 && h != static_cast<int>(Hw::net))
      us = std::max(us, nccl::net_overhead_us(c) * (p == Protocol::simple ? 3 : 1));
    // A Simple step of a ring, tree or chain fences as measured (nccl_constants.h); NVLS steps
    // go through the switch's own multicast, which the model's base latency covers.
    if (!nvls && p == Protocol::simple) us = std::max(us, nccl::kSimpleHopFenceUs);
    m.hop_latency_s[static_cast<std::size_t>(h)] = us * plateau * 1e-6;
  }
}

// PAT (collectives/pat_rounds.h): NCCL's fixed and per-rank latency once, before the first
// round; each round a network hop at the model's log term (the tree's Simple network hop / 3.5),
// never under the Simple fence the other Simple hops pay; each channel at its share of the
// model's bandwidth, held on what a rank sends (n - 1 of n shares) so that the transfer term is
// the model's bytes / bandwidth. A round moves as one message a channel.
void set_pat(Mechanics& m, const PlanOp& op, const nccl::Tuning& t, int world) {
  const auto e = t.entry(op.kind, Algorithm::pat, Protocol::simple);
  const double channels = std::max(1, t.topology().comm_channels);
  m.channel_cap_Bps = e.bw_GBps / channels * (world - 1) / world * 1e9;
  const double fixed_us = nccl::kPatBaseUs + world * nccl::kPatRankUs;
  m.base_latency_s = fixed_us * 1e-6;
  const int doublings = nccl::log2i(t.topology().nodes);
  const double round_us = doublings > 0 ? (e.latency_us - fixed_us) / doublings : 0.0;
  m.hop_latency_s.fill(std::max(round_us, nccl::kSimpleHopFenceUs) * 1e-6);
}

// A channel's share of the model's bus bandwidth (per execution channel), the LL cap on all
// channels together shared by those the collective runs on. GB/s.
double per_channel_bus_GBps(const nccl::Tuning& t, const PlanOp& op, Algorithm a, Protocol p) {
  const auto e = t.entry(op.kind, a, p, a == Algorithm::tree);
  double bus = e.uncapped_bus_GBps / std::max(1, t.topology().comm_channels);
  if (e.total_cap_GBps > 0) bus = std::min(bus, e.total_cap_GBps / std::max(1, op.channels));
  return bus;
}

Mechanics mechanics_of(const PlanOp& op, const ClusterSpec& c, int world) {
  Mechanics m;
  // On a CPU rank the reductions are charged before the network part, on the device
  // (collectives/reduction_work.h).
  if (const double GBps = c.device.reduce_GBps_of(op.dtype); GBps > 0 && !reductions_share_cpu(c))
    m.reduce_s_per_byte = 1.0 / (GBps * 1e9);
  if (c.library != CollectiveLibrary::nccl || !op.protocol || world < 2) return m;
  const Protocol p = *op.protocol;
  if (op.algorithm == Algorithm::pat) {
    set_pat(m, op, nccl::Tuning(c, op.request.channels), world);
    return m;
  }
  const bool nvls = op.algorithm == Algorithm::nvls || op.algorithm == Algorithm::nvls_tree;
  const Algorithm a = op.algorithm == Algorithm::hierarchical ? Algorithm::ring : op.algorithm;
  const int ai = nccl::algo_index(a), pi = nccl::proto_index(p);
  const nccl::Tuning t(c, op.request.channels);
  const auto& topo = t.topology();
  const bool chain = op.kind == OpKind::reduce || op.kind == OpKind::broadcast;

  m.wire_factor = p == Protocol::ll ? 2.0 : p == Protocol::ll128 ? 128.0 / 120.0 : 1.0;
  // NVLS: the model's 5/6 bus-to-algorithm ratio is an efficiency of the switch's reduction and
  // multicast; charged as extra bytes on the devices' ports.
  if (nvls) m.wire_factor = 6.0 / 5.0;
  double plateau = 1.0;
  if (a == Algorithm::ring && p == Protocol::simple && c.nodes > 1 && op.kind == OpKind::allreduce)
    plateau = c.device.compute_capability >= 8.0 ? 1.4 : 1.9;
  // NVLS's latency is its release's (2.18.5 base 23 us; from 2.19 the NVLink hop's, 25 us from
  // 2.21); the other algorithms keep 2.18.5's base latencies, which the engines were checked with.
  const auto& rel = t.release();
  const auto a_ = static_cast<std::size_t>(ai), p_ = static_cast<std::size_t>(pi);
  const double base_us = nvls ? rel.base_lat_us[a_][p_] + rel.hw_lat_us[static_cast<std::size_t>(Hw::nvlink)][a_][p_]
                              : nccl::kBaseLatUs[a_][p_];
  m.base_latency_s = base_us * plateau * 1e-6;
  set_hop_latencies(m, c, rel, a, p, chain, plateau);
  const double per_channel_bus = per_channel_bus_GBps(t, op, a, p);
  // LL and LL128 forward data line by line (a flag in every 8- or 128-byte line), so along a
  // chain or tree they stream in pieces of at most 4 KiB (one LL pass of 512 x 8 B; two LL128
  // warp slices of 1,920 B, whose pass is 38,400 B: pieces of a whole LL128 pass fit the
  // published tables worse, bench/fidelity/README.md) rather than store and forward whole steps.
  // A small collective streams too: at least 16 pieces, down to 256 bytes.
  const std::int64_t channel_bytes = op.bytes / std::max(1, op.channels);
  const std::int64_t kLineStreamBytes = std::clamp<std::int64_t>(channel_bytes / 16, 256, 4096);
  const bool lines = p != Protocol::simple;
  // NCCL's LL and LL128 buffers hold kSteps steps and a sender may run that far ahead of its
  // receiver's credit (2.18.5 src/collectives/device/prims_ll.h waitSend; prims_ll128.h the
  // same), so that much payload may be in flight on an edge.
  const std::int64_t step_bytes = p == Protocol::ll ? nccl::kLlStepPayloadBytes : nccl::kLl128StepPayloadBytes;
  if (a == Algorithm::ring) {
    m.channel_cap_Bps = per_channel_bus * 1e9;  // a ring link carries the bus bandwidth
    m.chunk_bytes = chain && lines             ? kLineStreamBytes
                    : p == Protocol::ll        ? nccl::kLlStepPayloadBytes
                    : p == Protocol::ll128     ? nccl::kLl128StepPayloadBytes
                                               : nccl::kSimpleStepBytes * (chain ? 1 : nccl::kRingChunkSteps);
    m.slices = p == Protocol::simple && !chain ? nccl::kRingChunkSteps / nccl::kRingSliceSteps : 1;
    // Across nodes a Simple ring's cap is the network's share; its NVLink and PCIe hops copy at
    // their channel's share of the device's link, and never slower than the cap: NCCL's search
    // builds a channel only where every link on its path carries its bandwidth (search.cc).
    if (op.algorithm == Algorithm::ring && p == Protocol::simple && !chain && c.nodes > 1)
      m.sync_hop_cap_Bps = std::max(m.channel_cap_Bps, c.intra.link_bandwidth_GBps * 1e9 / std::max(1, op.channels));
    // The threads NCCL launches a channel with at this size, which both the grain and a pass follow.
    int threads = 0;
    if (p != Protocol::simple) t.channels_for(op.kind, Algorithm::ring, p, op.bytes, &threads);
    if (op.kind == OpKind::allreduce) set_ring_grain(m, op, p, threads);
    if (!chain) set_ring_passes(m, p, threads);
  } else if (a == Algorithm::tree) {
    // A tree edge carries the algorithm bandwidth (the bus bandwidth x 1/2) each way.
    m.channel_cap_Bps = per_channel_bus * 0.5 * nccl::tree_correction(rel, p, op.bytes) * 1e9;
    const std::int64_t base = nccl::kSimpleStepBytes;
    m.chunk_bytes = lines ? kLineStreamBytes : tree_chunk(op.bytes, op.channels, tree_depth(c), base);
  } else if (nvls) {
    set_nvls(m, c, op, rel, t.entry(op.kind, a, p).bw_GBps, topo.nvls_channels);
  }
  if (lines && (a == Algorithm::tree || (a == Algorithm::ring && chain))) {
    // A tree's LL128 steps are the chunk NCCL sizes for the collective; a sender runs up to
    // kSteps of them ahead.
    const std::int64_t step = a == Algorithm::tree && p == Protocol::ll128
                                  ? tree_ll128_step_payload(op.bytes, op.channels, c.nodes, world)
                                  : step_bytes;
    m.stream_window_bytes = nccl::kSteps * step;
    m.stream_net_step_bytes = std::min(step, channel_bytes);
  }
  return m;
}

}  // namespace redsim
