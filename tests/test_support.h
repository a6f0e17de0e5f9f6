// Small builders for tests: ideal clusters and synthetic traces whose costs are known in
// closed form.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/plan.h"
#include "core/timeline.h"
#include "core/trace.h"

namespace redsim::testing {

// N nodes of one device on a star: every ring hop is NIC up + NIC down, one-way latency
// latency_s, bandwidth bandwidth_Bps per direction; no launch overhead.
ClusterSpec ideal_star(int nodes, double bandwidth_Bps, double latency_s);

// One node of `devices` on an NVSwitch with the given port bandwidth and latency.
ClusterSpec ideal_nvswitch(int devices, double bandwidth_Bps, double latency_s);

// `nodes` nodes of `devices` on an NVSwitch, one NIC per device, star between nodes.
ClusterSpec ideal_multi_node(int nodes, int devices, double intra_Bps, double intra_latency_s, double inter_Bps,
                             double inter_latency_s);

// One node of 8 GPUs on an NVSwitch as NCCL's topology sees it: ports of port_GBps, 0.5 us device
// to device, compute capability cc (8.0 DGX A100 with 12 x 20 GB/s; 9.0 DGX H100 with 18 x 20
// and NVLS), library nccl.
ClusterSpec nccl_node(double cc, double port_GBps, bool nvls);

// `nodes` nodes of 8 A100-like GPUs (240 GB/s NVLink, 0.5 us) on 25 GB/s NICs (1 us), library nccl.
ClusterSpec nccl_nodes(int nodes);

// A bundled preset's topology (nodes, devices, fabric, NICs, leaves) with the textbook
// alpha-beta figures the scalable-fidelity tests were written for: ideal collectives (no NCCL
// protocol), no separate device PCIe links, 2 us inside a node and 4 us between nodes.
ClusterSpec preset_fabric(const std::string& name);

// A plan with a single collective of `kind` (root for reduce/broadcast).
Plan single_collective_plan(int world, OpKind kind, Algorithm algorithm, std::int64_t bytes, int channels, int root = -1);

// A plan with a single allreduce of `bytes` over `channels` channels (no compute).
Plan single_allreduce_plan(int world, std::int64_t bytes, int channels);

// A trace of `layers` layers, each with one fp32 parameter of `numel` elements and the given
// forward/backward times; batch 1.
ModelTrace uniform_trace(int layers, std::int64_t numel, double forward_s, double backward_s, double optimizer_s);

// The index of the op named `name` in `plan`; throws (failing the test) when there is none.
std::size_t op_index(const Plan& plan, const std::string& name);

// The latest end of any op on any rank: a simulated collective's completion time.
double end_of(const Timeline& tl);
// Bytes sent by all ranks over all ops.
std::int64_t sent_by_all(const Timeline& tl);
// The message of the InputError f throws ("" when it throws none).
std::string error_of(const std::function<void()>& f);

}  // namespace redsim::testing
