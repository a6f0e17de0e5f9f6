// The modelled cluster: nodes of devices, an intra-node fabric, NICs and an inter-node
// topology (see configs/README.md). Ranks are numbered node-major: rank = node * devices_per_node + local.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/plan.h"
#include "core/units.h"

namespace redsim {

// nvswitch: every device has one port (its NVLinks together) into a non-blocking switch.
// pcie: devices behind PCIe switches under one or more CPU sockets; with p2p off, traffic
// between devices goes through host memory. nvlink: devices wired directly by NVLinks given as a
// matrix (DGX-1's hybrid cube mesh, 4-GPU boards); pairs without NVLink use PCIe.
enum class IntraFabric { nvswitch, pcie, nvlink };
enum class InterTopology { star, fat_tree };
// How collectives behave on this cluster: `ideal` moves bytes at link speed with the links'
// latencies (no protocol, ring unless told otherwise: what calibrate fits for Gloo); `nccl`
// follows NCCL's protocols, algorithm choice and channel counts (collectives/README.md).
enum class CollectiveLibrary { ideal, nccl };
// The hosts' CPU vendor, which NCCL's model reads with several nodes (collectives/README.md).
enum class CpuVendor { intel, amd, arm };

struct DeviceSpec {
  std::string name;
  // Other names the device reports (torch.cuda.get_device_name(), nvidia-smi): a trace timed on
  // any of them needs no conversion (core/compute_reference.h).
  std::vector<std::string> aliases;
  // Compute durations of a trace timed on `speedup_reference` are divided by compute_speedup
  // ("*": whatever device the trace names, for emulated or textbook devices).
  double compute_speedup = 1.0;
  std::string speedup_reference;
  double memory_GB = 0;          // device memory, decimal GB (0 = unknown)
  // Bytes per second a device reduces (reads two operands, writes one) inside a collective;
  // 0 = not modelled (reduction is free).
  double reduce_GBps = 0;
  // The same per element type where it differs (Gloo reduces fp16 element by element in
  // software, ~18x slower than fp32 on a CPU); a type not listed reduces at reduce_GBps.
  std::map<DType, double> reduce_GBps_by_dtype;
  double reduce_GBps_of(DType d) const {
    const auto it = reduce_GBps_by_dtype.find(d);
    return it != reduce_GBps_by_dtype.end() ? it->second : reduce_GBps;
  }
  // CUDA compute capability (7.0 V100, 8.0 A100, 8.6 A10G, 9.0 H100); 0 = not a GPU. NCCL's
  // per-generation constants (LL128, NVLS, per-channel caps) key on it.
  double compute_capability = 0;
  // Streaming multiprocessors (the datasheet's SM count; 0 = unknown). NCCL runs one thread block
  // per channel, each on an SM the compute kernels beside it do not get
  // (InterferenceSpec::compute_slowdown_sm_share).
  int sm_count = 0;
  double pcie_GBps = 0;  // the device's own PCIe link, per direction (0 = not a bottleneck)
  double memory_GBps = 0;  // device memory bandwidth (0 = unknown): the bucket copies where copy_GBps is 0, a CPU's hook kernels
  // The framework's plain fp32 copies and adds (torch.cat, grad += g) on this device, where they
  // run at another speed than its casts (a CPU's); 0 = the datasheet HBM bandwidth of a GPU, free
  // on a CPU.
  double copy_GBps = 0;
  // A copy into memory the allocator has just taken from the OS (bytes read and written), where the
  // first touch of each page costs a fault: on a CPU rank, torch.cat into a new tensor over glibc's
  // mmap threshold. 0 = as copy_GBps (a GPU's caching allocator reuses its memory).
  double fresh_copy_GBps = 0;
};

// What a training framework adds around each gradient bucket, on the compute stream: DDP's
// autograd hooks, bookkeeping and collective launch (a fixed cost), and copying gradients into the
// bucket when its last one is ready and back out before the optimizer (each copy reads and writes
// the bucket's bytes at the device's memory bandwidth). Fitted by calibrate; 0/false = not modelled.
struct FrameworkSpec {
  double bucket_overhead_us = 0;
  bool bucket_copy = false;
  // Host time per gradient tensor of DDP's copy of the reduced buckets back into the gradients,
  // after the last allreduce and before the optimizer: one copy launched per tensor, so a
  // host-bound step pays it per tensor whatever the bytes (fitted by calibrate --from-profile).
  double copy_out_us_per_tensor = 0;
};

// How compute and communication slow each other on one device (NCCL kernels take SMs and
// memory bandwidth from the compute kernels beside them, and the other way round): each factor
// is how many times longer that work takes while the other runs; 1 = no interference. Applied
// as a rate while both run (sim/interference.h), so only the overlapped part is stretched.
// Fitted by `calibrate --from-profile`.
// The share of a device's SMs that collectives holding `blocks` of them take from compute under
// the SM-share rule: at most half ("a GEMM next to an allgather can run up to 2x longer", issue
// 14). The engines, trace import and calibrate all charge it through here.
inline double sm_share_taken(double blocks, int sm_count) {
  return sm_count > 0 ? std::min(0.5, blocks / sm_count) : 0.0;
}

struct InterferenceSpec {
  double compute_slowdown = 1.0;     // compute (and framework) ops while a collective runs
  // Instead of a fixed compute_slowdown: compute beside collectives runs on the SMs their blocks
  // leave, device.sm_count / (sm_count - blocks), blocks being the channels of every collective
  // running then (NCCL launches one block per channel). A rule from the datasheet, not a fit.
  bool compute_slowdown_sm_share = false;
  double collective_slowdown = 1.0;  // collectives while compute runs
  // A fixed delay a collective pays when compute runs beside it throughout, in proportion to the
  // part of it that compute overlaps: on CPU ranks each step's waiting thread must be scheduled
  // back onto cores the compute holds, a latency that a rate does not describe (small
  // collectives lose the most). Measured by `calibrate` on Gloo.
  double collective_latency_us = 0.0;
  // Compute beside collectives runs slower: a factor above 1, or the SM-share rule.
  bool slows_compute() const { return compute_slowdown_sm_share || compute_slowdown > 1.0; }
  bool active() const { return compute_slowdown != 1.0 || compute_slowdown_sm_share || collective_slowdown != 1.0 || collective_latency_us > 0; }
};

struct IntraNodeSpec {
  IntraFabric fabric = IntraFabric::nvswitch;
  // nvswitch: each device's port into the switch; pcie: each device's PCIe link; nvlink: one
  // NVLink. Per direction, GB/s.
  double link_bandwidth_GBps = 0;
  double latency_us = 0;  // one-way, device to device
  bool nvls = false;      // nvswitch: NVLink SHARP (reduction and multicast in the switch)
  bool p2p = true;        // pcie: peer-to-peer DMA between devices (false: through host memory)
  // PCIe topology (pcie, and nvlink for pairs without a link): devices share a switch whose
  // uplink to its CPU is a bottleneck between switches; switches split evenly over sockets,
  // joined by a socket link (UPI, xGMI).
  int devices_per_pcie_switch = 0;  // 0 = all devices on one switch
  double pcie_uplink_GBps = 0;      // per direction; 0 = not a bottleneck
  int sockets = 1;
  double socket_link_GBps = 0;  // per direction; 0 = not a bottleneck
  // nvlink: links between devices i and j (symmetric, zero diagonal).
  std::vector<std::vector<int>> nvlinks;

};

struct InterNodeSpec {
  InterTopology topology = InterTopology::star;
  int nics_per_node = 0;
  double nic_bandwidth_gbps = 0;  // per NIC, per direction, as marketed (Gb/s)
  double latency_us = 0;          // one-way, NIC to NIC through one switch
  // fat-tree only: nodes under one leaf switch, and the leaf's downlink:uplink ratio.
  int nodes_per_leaf = 0;
  double oversubscription = 1.0;
  double spine_latency_us = 0;  // extra one-way latency for crossing the spine
  // The latency NCCL's network plugin reports to NCCL (ncclNetProperties latency), which NCCL's
  // tuning model adds to a network step from 2.12 (collectives/README.md, "NCCL versions"): 0 for
  // InfiniBand and sockets, whose transports leave it unset; 75 us from aws-ofi-nccl on p4d.
  // The model's ranking only: the wire's own latency is latency_us.
  double net_plugin_latency_us = 0;
};

// NCCL 2.18.5, whose tuning constants the collective model carries (collectives/nccl_constants.h).
inline constexpr int kModelledNcclVersion = 21805;

struct ClusterSpec {
  std::string name;
  std::string source;  // where the figures come from
  int nodes = 1;
  int devices_per_node = 1;
  DeviceSpec device;
  IntraNodeSpec intra;
  InterNodeSpec inter;
  CollectiveLibrary library = CollectiveLibrary::ideal;
  FrameworkSpec framework;
  InterferenceSpec interference;
  double collective_launch_us = 0;  // per-collective software overhead (launch, setup)
  // The NCCL release the job runs, as major * 10000 + minor * 100 + patch: it selects the
  // release's tuning model and how work is laid out (collectives/README.md, "NCCL versions").
  int nccl_version = kModelledNcclVersion;
  // NCCL reads the host CPU's vendor with several nodes: AMD hosts take a lower LL cap (from 2.8)
  // and twice the network post overhead (from 2.18.1). Intel unless given.
  CpuVendor host_cpu_vendor = CpuVendor::intel;
  // Per-kind overrides of collective_launch_us (calibrate fits one per collective: a library's
  // allreduce and its reduce need not cost the same to set up).
  std::map<OpKind, double> collective_launch_us_by_kind;
  double launch_us(OpKind kind) const {
    const auto it = collective_launch_us_by_kind.find(kind);
    return it != collective_launch_us_by_kind.end() ? it->second : collective_launch_us;
  }
  // The host's cost for each channel a collective runs on past the first (NCCL prepares a work
  // element per channel): calibrate fits it from nccl-tests runs whose host thread drives several
  // GPUs (-g), where it shows; 0 unless given.
  double collective_launch_per_channel_us = 0;
  double launch_us(OpKind kind, int channels) const {
    return launch_us(kind) + collective_launch_per_channel_us * std::max(0, channels - 1);
  }

  // DDP's bucket copies (framework.bucket_copy) are plain fp32 copies: at copy_GBps where the
  // cluster measures it (calibrate on Gloo does; memory_GBps there is the fp16 casts' rate, 5-8x
  // slower), else at memory_GBps.
  double bucket_copy_GBps() const { return device.copy_GBps > 0 ? device.copy_GBps : device.memory_GBps; }

  // The device's memory in bytes (memory_GB is decimal), 0 when unknown: what a rank's memory
  // must fit in (tune excludes settings over it; simulate says so).
  std::int64_t device_memory_bytes() const {
    return device.memory_GB > 0 ? static_cast<std::int64_t>(std::llround(device.memory_GB * kBytesPerGB)) : 0;
  }

  int world_size() const { return nodes * devices_per_node; }
  int node_of(int rank) const { return rank / devices_per_node; }
  int local_of(int rank) const { return rank % devices_per_node; }
  // NICs a device sends through, rail-style: with at least as many NICs as devices, device i owns
  // NICs [i*k, (i+1)*k) (k = nics/devices) and channel c uses the (c mod k)-th; with fewer NICs,
  // consecutive devices share one (those behind the same PCIe switch, as servers are built).
  int nic_of_local(int local, int channel = 0) const {
    const int nics = inter.nics_per_node;
    if (nics >= devices_per_node) {
      const int k = nics / devices_per_node;
      return local * k + ((channel % k) + k) % k;
    }
    return local * nics / devices_per_node;
  }
  // PCIe switches per node and the one a device sits behind.
  int pcie_switches_per_node() const {
    return intra.devices_per_pcie_switch > 0 ? devices_per_node / intra.devices_per_pcie_switch : 1;
  }
  int pcie_switch_of_local(int local) const {
    return intra.devices_per_pcie_switch > 0 ? local / intra.devices_per_pcie_switch : 0;
  }
  int socket_of_switch(int sw) const { return sw * intra.sockets / pcie_switches_per_node(); }
};

}  // namespace redsim
