#include "tests/test_support.h"

#include <algorithm>
#include <stdexcept>

#include "core/cluster_json.h"
#include "core/error.h"
#include "core/units.h"

namespace redsim::testing {

ClusterSpec preset_fabric(const std::string& name) {
  auto c = load_cluster(std::string(REDSIM_SOURCE_DIR "/configs/") + name + ".json");
  c.library = CollectiveLibrary::ideal;
  c.device.pcie_GBps = 0;
  c.intra.latency_us = 2.0;
  c.inter.latency_us = 4.0;
  c.collective_launch_us = 8.4;
  return c;
}

ClusterSpec ideal_star(int nodes, double bandwidth_Bps, double latency_s) {
  ClusterSpec c;
  c.name = "ideal-star";
  c.nodes = nodes;
  c.devices_per_node = 1;
  c.device.name = "ideal";
  c.inter.topology = InterTopology::star;
  c.inter.nics_per_node = 1;
  c.inter.nic_bandwidth_gbps = bandwidth_Bps * kBitsPerByte / 1e9;
  c.inter.latency_us = latency_s * kUsPerS;
  return c;
}

ClusterSpec ideal_nvswitch(int devices, double bandwidth_Bps, double latency_s) {
  ClusterSpec c;
  c.name = "ideal-nvswitch";
  c.nodes = 1;
  c.devices_per_node = devices;
  c.device.name = "ideal";
  c.intra.fabric = IntraFabric::nvswitch;
  c.intra.link_bandwidth_GBps = bandwidth_Bps / kBytesPerGB;
  c.intra.latency_us = latency_s * kUsPerS;
  return c;
}

ClusterSpec ideal_multi_node(int nodes, int devices, double intra_Bps, double intra_latency_s, double inter_Bps,
                             double inter_latency_s) {
  ClusterSpec c = ideal_nvswitch(devices, intra_Bps, intra_latency_s);
  c.name = "ideal-multi-node";
  c.nodes = nodes;
  c.inter.topology = InterTopology::star;
  c.inter.nics_per_node = devices;
  c.inter.nic_bandwidth_gbps = inter_Bps * kBitsPerByte / 1e9;
  c.inter.latency_us = inter_latency_s * kUsPerS;
  return c;
}

ClusterSpec nccl_node(double cc, double port_GBps, bool nvls) {
  auto c = ideal_nvswitch(8, port_GBps * 1e9, 0.5e-6);
  c.library = CollectiveLibrary::nccl;
  c.device.compute_capability = cc;
  c.intra.nvls = nvls;
  return c;
}

ClusterSpec nccl_nodes(int nodes) {
  auto c = ideal_multi_node(nodes, 8, 240e9, 0.5e-6, 25e9, 1e-6);
  c.library = CollectiveLibrary::nccl;
  c.device.compute_capability = 8.0;
  return c;
}

Plan single_collective_plan(int world, OpKind kind, Algorithm algorithm, std::int64_t bytes, int channels, int root) {
  Plan p = single_allreduce_plan(world, bytes, channels);
  p.ops[0].kind = kind;
  p.ops[0].algorithm = algorithm;
  p.ops[0].root = root;
  return p;
}

std::size_t op_index(const Plan& plan, const std::string& name) {
  for (std::size_t i = 0; i < plan.ops.size(); ++i)
    if (plan.ops[i].name == name) return i;
  throw std::runtime_error("no op named " + name + " in the plan");
}

Plan single_allreduce_plan(int world, std::int64_t bytes, int channels) {
  Plan p;
  p.strategy = "test";
  p.world_size = world;
  p.samples_per_step = world;
  p.stream_index("compute");
  PlanOp op;
  op.name = "allreduce";
  op.kind = OpKind::allreduce;
  op.stream = p.stream_index("comm0");
  op.bytes = bytes;
  op.channels = channels;
  p.add(op);
  return p;
}

ModelTrace uniform_trace(int layers, std::int64_t numel, double forward_s, double backward_s, double optimizer_s) {
  ModelTrace t;
  t.model = "uniform";
  t.reference_device = "ideal";
  t.batch_size_per_rank = 1;
  t.optimizer_s = optimizer_s;
  for (int l = 0; l < layers; ++l) {
    t.layers.push_back({"l" + std::to_string(l), forward_s, backward_s, std::nullopt, std::nullopt, {}, {}});
    TraceParam p;
    p.name = "l" + std::to_string(l) + ".weight";
    p.numel = numel;
    p.layer = static_cast<std::size_t>(l);
    t.params.push_back(p);
  }
  t.grad_ready_order = derive_grad_ready_order(t);
  return t;
}

double end_of(const Timeline& tl) {
  return tl.last_end_s();
}

std::int64_t sent_by_all(const Timeline& tl) {
  std::int64_t s = 0;
  for (int r = 0; r < tl.world_size; ++r)
    for (std::size_t op = 0; op < tl.op_count; ++op) s += tl.at(r, op).bytes_sent;
  return s;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace redsim::testing
