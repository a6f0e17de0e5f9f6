// NCCL's own published tuning constants (NVIDIA/nccl v2.18.5-1, the version of the published
// nccl-tests tables this project checks against), restated as data. Each table names the file
// and lines it comes from; collectives/README.md explains how they are used. Facts only: the
// model that uses them (nccl_tuning.cpp) is redsim's own.
#pragma once
#include <array>
#include <cstdint>

#include "core/collective_types.h"

namespace redsim::nccl {

// NCCL's indices (src/include/devcomm.h L14-31): the selection breaks ties towards the lower
// (algorithm, protocol) index, so the order matters.
inline constexpr int kAlgoCount = 6;  // Tree, Ring, CollNetDirect, CollNetChain, NVLS, NVLSTree
inline constexpr int kProtoCount = 3;  // LL, LL128, Simple
int algo_index(Algorithm a);  // -1 for algorithms NCCL does not have (hierarchical)
int proto_index(Protocol p);
Algorithm algo_of_index(int i);
Protocol proto_of_index(int i);

// Hardware class of a hop (tuning.cc L61-64).
enum class Hw { nvlink = 0, pci = 1, net = 2 };

using AlgoProto = std::array<std::array<double, kProtoCount>, kAlgoCount>;

// Base latency per (algorithm, protocol), us (tuning.cc L54-59).
inline constexpr AlgoProto kBaseLatUs{{{6.8, 14.0, 0.0},    // Tree
                                       {6.6, 14.0, 8.4},    // Ring
                                       {6.8, 14.0, 0.0},    // CollNetDirect
                                       {6.8, 14.0, 0.0},    // CollNetChain
                                       {0.0, 0.0, 23.0},    // NVLS
                                       {0.0, 0.0, 23.0}}};  // NVLSTree

// Per-hop latency per hardware class, us (tuning.cc L61-78).
inline constexpr std::array<AlgoProto, 3> kHwLatUs{{
    {{{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}, {0, 0, 8.0}, {0, 0, 4.75}, {0, 0, 0}, {0, 0, 0}}},     // NVLink
    {{{1.0, 1.9, 6.0}, {1.0, 2.5, 5.7}, {0, 0, 8.0}, {0, 0, 8.0}, {0, 0, 0}, {0, 0, 0}}},      // PCI
    {{{5.0, 8.5, 14.0}, {2.7, 4.0, 14.0}, {0, 0, 10.7}, {0, 0, 14.0}, {0, 0, 18.0}, {0, 0, 19.0}}},  // NET
}};

// Simple's per-hop synchronisation, us: its memory fences before a slice is posted, ~6 us a hop
// (Hu, Shen, Bonato, Jeaugey et al., "Demystifying NCCL: An In-depth Analysis of GPU
// Communication Protocols and Algorithms", arXiv:2507.04786, 2025, protocol comparison). NCCL's
// hwLat above are ranking constants ("waiting for proper chunk modeling", tuning.cc L214); a
// Simple step pays the larger of the two, which the A100 tables' Simple rows at 32-128 MiB (not
// host-bound) bear out. LL and LL128 synchronise by flags in the data and pay hwLat alone: the
// paper's "~1 us" and "~2 us" describe the protocols, not an NVLink hop, and runs of one process
// per GPU on Hopper (2 and 4 x HGX H100 trees at 128 B-32 KiB, NCCL 2.26.2) take hwLat's 0.6 us
// an NVLink hop, not 1 us (bench/fidelity/README.md, 2026-11-30).
inline constexpr double kSimpleHopFenceUs = 6.0;

// Bandwidth caps, GB/s, indexed [GPU generation: Volta, Ampere, Hopper, Blackwell][nodes: 1, 2,
// >2] (tuning.cc L85-106; Blackwell's row from 2.25.1, read only by releases that have it, so the
// tables written with three rows leave it 0). llMaxBws is a cap on the whole LL bandwidth; with several nodes its row is
// the host CPU (row 0 Intel or Arm, row 1 AMD: the cluster's host_cpu_vendor) rather than the GPU.
using GenNodes = std::array<std::array<double, 3>, 4>;
inline constexpr GenNodes kLlMaxBwGBps{{{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {87.7, 22.5, 19.0}}};
inline constexpr GenNodes kPerChMaxRingLl128GBps{{{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 36.7}}};
inline constexpr GenNodes kPerChMaxTreeLl128GBps{{{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 29.0}}};
inline constexpr GenNodes kPerChMaxTreeGBps{{{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}}};

// Tree bandwidth correction by size, [protocol][floor(log2(bytes/64))] for sizes below 512 MiB
// (tuning.cc L373-379): "trees are not perfectly sticking to the model for medium sizes".
using TreeCorrection = std::array<std::array<double, 23>, 3>;
inline constexpr TreeCorrection kTreeCorrection{{
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9},
}};
// The factor `table` gives (size past its last entry: 1); the first form reads 2.18.5's.
// `one_longer`: 2.29.2's table has one more size, 512 MiB-1 GiB ({1, 1, 0.9} by protocol), which
// only Blackwell's NVLSTree reads; trees still stop before it.
double tree_correction(const TreeCorrection& table, Protocol p, std::int64_t bytes, bool one_longer = false);
double tree_correction(Protocol p, std::int64_t bytes);

// Network post overhead, us (tuning.cc getNetOverhead, from 2.18.1): 1 on Intel and Arm hosts,
// 2 on AMD's; used only with several nodes, and tripled for Simple.
inline constexpr double kNetOverheadUs = 1.0;
inline constexpr double kNetOverheadAmdUs = 2.0;

// Protocol buffers per channel and peer (src/init.cc L500-522, devcomm.h L34-73): NCCL_STEPS
// slots each. Payload per step: LL carries 8 data bytes in every 16-byte line, LL128 120 in 128.
inline constexpr int kSteps = 8;
inline constexpr std::int64_t kLlStepPayloadBytes = 524288 / kSteps / 2;   // 32 KiB
inline constexpr std::int64_t kLl128StepBytes = 4915200 / kSteps;  // 614,400, flags included
inline constexpr std::int64_t kLl128StepPayloadBytes = kLl128StepBytes / 16 * 15;  // 576,000
// One pass of a channel's threads (2.18.5 prims_ll.h: a 16-byte line of 8 data bytes a thread;
// prims_ll128.h: a warp of 32 threads x NCCL_LL128_SHMEM_ELEMS_PER_THREAD 8 words, 1 word in
// NCCL_LL128_LINEELEMS 16 a flag: 240 data words of 8 bytes).
inline constexpr int kWarpThreads = 32;
inline constexpr std::int64_t kLlLinePayloadBytes = 8;
inline constexpr std::int64_t kLl128WarpSlicePayloadBytes = kWarpThreads * 8 * 15 / 16 * 8;  // 1,920
inline constexpr std::int64_t kSimpleStepBytes = (std::int64_t{1} << 22) / kSteps;  // 512 KiB
// Ring allreduce, allgather and reduce-scatter send Simple chunks of 4 steps as 2 slices
// (src/include/collectives.h L113-124); broadcast and reduce send 1-step chunks.
inline constexpr int kRingChunkSteps = 4;
inline constexpr int kRingSliceSteps = 2;
// NVLS chunk (enqueue.cc L1312-1369).
inline constexpr std::int64_t kNvlsChunkBytes = 128 * 1024;
inline constexpr int kNvlsChannels = 16;  // NCCL_NVLS_NCHANNELS default (transport/nvls.cc L231)
// Blackwell's (compute capability 10.0 and newer; transport/nvls.cc NVLS_NCHANNELS_SM100 from
// v2.25.1-1, NVLS_NCHANNELS_SM100_NVL within one node from v2.27.3-1).
inline constexpr int kNvlsChannelsSm100 = 32;
inline constexpr int kNvlsChannelsSm100OneNode = 24;

// Threads per channel and the bytes each must have before NCCL uses another channel
// (devcomm.h L53-72, comm.h L32-34): LL 8 (Ring LL: 8 x ranks), LL128 8, Simple 64.
inline constexpr std::array<int, kProtoCount> kMaxThreads{512, 640, 512};
inline constexpr std::array<int, kProtoCount> kThreadThreshold{8, 8, 64};
inline constexpr int kMaxChannels = 32;  // MAXCHANNELS (devcomm.h L52)
// MAXCHANNELS of a release (src/include/device.h): 32 to v2.24.3-1, 64 from v2.25.1-1.
constexpr int max_channels_of(int nccl_version) { return nccl_version >= 22500 ? 64 : kMaxChannels; }

// The per-channel speeds NCCL's topology search tries, GB/s (src/graph/search.cc L807-815).
inline constexpr std::array<double, 13> kSpeedIntra{40, 30, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3};
inline constexpr std::array<double, 19> kSpeedInter{48, 30, 28, 24, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3, 2.4, 1.2, 0.24, 0.12};
inline constexpr std::array<double, 9> kSm90SpeedIntra{60, 40, 30, 24, 20, 15, 12, 6, 3};
inline constexpr std::array<double, 16> kSm90SpeedInter{48, 45, 42, 40, 30, 24, 20, 17.5, 15, 12, 6, 3, 2.4, 1.2, 0.24, 0.12};
// Compute capability 10.0 and newer (Blackwell; v2.29.7-1 search.cc sm100SpeedArrayIntra/Inter,
// the arrays as of that tag: 2.25.1 had started them at 90 and 48).
inline constexpr std::array<double, 12> kSm100SpeedIntra{90, 80, 70, 60, 50, 45, 40, 30, 24, 20, 19, 18};
inline constexpr std::array<double, 19> kSm100SpeedInter{96, 80, 48, 45.1, 42, 40, 30, 24, 22, 20, 17.5, 15, 12, 6, 3, 2.4, 1.2, 0.24, 0.12};

// PAT (Parallel Aggregated Trees, allgather and reduce-scatter with one GPU a node, from
// v2.23.4-1; tuning.cc, unchanged to v2.29.7-1): the model's latency is kPatBaseUs + log2(nodes)
// x the tree's network hop / kPatLogLatencyDivisor + ranks x kPatRankUs ("still a linear part"),
// its bandwidth the tree graph's channels x speed x Release::pat_bus_share, with no bus-to-
// algorithm conversion. A channel runs NCCL_MAX_NTHREADS (640) threads and NCCL never narrows
// its channels by size (maxThreads has no PAT entry, so enqueue.cc's loop never runs).
inline constexpr double kPatBaseUs = 8.0;
inline constexpr double kPatLogLatencyDivisor = 3.5;
inline constexpr double kPatRankUs = 2.8;
inline constexpr int kPatThreads = 640;
// NCCL's PAT runs on devices of compute capability 6.0 and newer (CUDA atomics, tuning.cc
// ncclPatEnable; the kernels' __CUDA_ARCH__ >= 600).
inline constexpr double kPatMinComputeCapability = 6.0;

// floor(log2 v) for v >= 1 (NCCL's log2i): the depth of its binary tree over v nodes.
constexpr int log2i(int v) {
  int r = 0;
  while (v > 1) v >>= 1, ++r;
  return r;
}

}  // namespace redsim::nccl
