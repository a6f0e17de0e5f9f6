// NCCL's cost model as it chooses an algorithm, protocol and channel count for one collective
// (NCCL 2.18.5: src/graph/tuning.cc ncclTopoTuneModel / ncclTopoGetAlgoTime, src/enqueue.cc
// getAlgoInfo; other releases' constants and rules, 2.5.7 to 2.28.9, as the cluster's
// nccl_version selects them, nccl_releases.h). The model ranks choices; the engines then simulate the chosen one.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "collectives/nccl_releases.h"
#include "collectives/nccl_topology.h"
#include "core/cluster.h"
#include "core/collective_types.h"
#include "core/dtype.h"
#include "core/plan.h"

namespace redsim::nccl {

// One (collective, algorithm, protocol) entry of NCCL's tuning table.
struct Entry {
  bool enabled = false;
  double latency_us = 0;
  double bus_bw_GBps = 0;  // after the per-protocol refinements, before the bus-to-algorithm ratio
  double bw_GBps = 0;      // algorithm bandwidth: the model's time is latency + bytes / bw
  // LL's bus bandwidth is the lesser of what its channels move and a cap on all of them
  // together (llMaxBws): the two apart, so that a collective on fewer channels is held to the
  // first per channel and the second over its channels (0: no such cap).
  double uncapped_bus_GBps = 0;
  double total_cap_GBps = 0;
};

struct Choice {
  Algorithm algorithm = Algorithm::ring;
  Protocol protocol = Protocol::simple;
  int channels = 1;  // channels the collective runs on at this size
  int threads = 0;   // threads per channel
  double model_time_us = 0;
};

class Tuning {
 public:
  explicit Tuning(const ClusterSpec& cluster, int forced_channels = 0);

  const Topology& topology() const { return topo_; }
  const Release& release() const { return release_; }
  // Whether NCCL runs (kind, a, p) on this cluster for this dtype and reduce op.
  bool supported(OpKind kind, Algorithm a, Protocol p, DType dtype = DType::fp32, ReduceOp op = ReduceOp::sum) const;
  // `across_nodes`: each channel at the bandwidth the search gave it across nodes even on 2 nodes,
  // where NCCL's model reads the one inside the node (the rate a channel's NIC hop carries).
  Entry entry(OpKind kind, Algorithm a, Protocol p, bool across_nodes = false) const;
  // NCCL's predicted time, us, for `bytes` (allgather and reduce-scatter: the whole buffer).
  double time_us(OpKind kind, Algorithm a, Protocol p, std::int64_t bytes) const;
  // The channels and threads NCCL launches for (a, p) at this size.
  int channels_for(OpKind kind, Algorithm a, Protocol p, std::int64_t bytes, int* threads = nullptr) const;
  // The fastest supported (algorithm, protocol) by the model, within what `request` pins as the
  // cluster's release applies NCCL_ALGO to this collective (nccl_algo_pin.h). Throws InputError
  // when the request leaves nothing NCCL would run on this cluster.
  Choice choose(OpKind kind, std::int64_t bytes, DType dtype, ReduceOp op, const CollectiveRequest& request) const;

 private:
  double latency_us(OpKind kind, Algorithm a, Protocol p, Hw intra_hw) const;
  Entry pat_entry() const;
  // The fastest (algorithm, protocol) among `algorithms` (algo_bit) and `protocols` (proto_bit);
  // infinite time when none runs (`why` says why the first refused one could not).
  Choice rank(OpKind kind, std::int64_t bytes, DType dtype, ReduceOp op, std::uint32_t algorithms,
              std::uint32_t protocols, std::string* why) const;

  const ClusterSpec& cluster_;
  Topology topo_;
  const Release& release_;
};

// Whether an NVLink SHARP switch can reduce `dtype` with `op` (NCCL's NCCL_NVLS_SUPPORTS).
bool nvls_reduces(DType dtype, ReduceOp op);

// The network post overhead on the cluster's hosts (kNetOverheadUs, kNetOverheadAmdUs), us.
inline double net_overhead_us(const ClusterSpec& c) {
  return c.host_cpu_vendor == CpuVendor::amd ? kNetOverheadAmdUs : kNetOverheadUs;
}

// Why (a, p) is not available for `kind` on this cluster, in words; empty when it is.
std::string unsupported_reason(const ClusterSpec& cluster, const Tuning& t, OpKind kind, Algorithm a, Protocol p,
                               DType dtype, ReduceOp op);

}  // namespace redsim::nccl
