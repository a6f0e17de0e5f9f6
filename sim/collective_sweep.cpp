#include "sim/collective_sweep.h"

#include <algorithm>
#include <limits>
#include <string>

#include "collectives/collective_model.h"
#include "core/error.h"
#include "core/step_summary.h"

namespace redsim {

std::string choice_label(const SweepRow& r) {
  return std::string(algorithm_name(r.algorithm)) + "/" + (r.protocol ? std::string(protocol_name(*r.protocol)) : "-") +
         " x" + std::to_string(r.channels);
}

std::vector<std::int64_t> sweep_sizes(const SweepOptions& o) {
  if (!o.sizes.empty()) {
    if (o.sizes.size() > 4096) throw InputError("", "", "sizes: at most 4096");
    for (auto s : o.sizes)
      if (s < 1) throw InputError("", "", "sizes: expected positive byte counts");
    return o.sizes;
  }
  if (o.min_bytes < 1 || o.max_bytes < o.min_bytes)
    throw InputError("", "", "sizes: expected 1 <= -b (min bytes) <= -e (max bytes)");
  if (!(o.step_factor >= 1) || o.step_factor > 1024) throw InputError("", "", "-f: expected a step factor from 1 to 1024");
  if (o.step_factor == 1 && o.step_bytes < 1) throw InputError("", "", "-i: expected a positive step in bytes");
  std::vector<std::int64_t> sizes;
  for (double s = static_cast<double>(o.min_bytes); s <= static_cast<double>(o.max_bytes);) {
    sizes.push_back(static_cast<std::int64_t>(s));
    if (sizes.size() > 4096) throw InputError("", "", "sizes: more than 4096 sizes (raise -f or -i)");
    if (o.step_factor > 1)
      s *= o.step_factor;
    else if (o.min_bytes == o.max_bytes)
      break;
    else
      s += static_cast<double>(o.step_bytes);
  }
  return sizes;
}

namespace {

// nccl-tests' count and size for a requested size: allgather and reduce-scatter pass a per-rank
// count and report the whole buffer.
void counts_for(OpKind kind, std::int64_t requested, int n, std::int64_t elem, std::int64_t& count, std::int64_t& size) {
  const std::int64_t elems = requested / elem;
  if (kind == OpKind::allgather || kind == OpKind::reduce_scatter) {
    count = elems / n;
    size = count * n * elem;
  } else {
    count = elems;
    size = count * elem;
  }
}

}  // namespace

// nccl-tests queues its iterations back to back with no barrier between them. In a ring or a
// tree every rank waits on every other each step, so an iteration's period is its time. In a
// chain (broadcast, reduce) a rank depends on its upstream only: once it has passed its share on
// it starts the next iteration, whose data its upstream is already sending, so iterations
// overlap by about the chain's fill. The sweep simulates kChainCopies iterations of a chain (the
// later ones without a rendezvous) and takes the period from the later ones.
namespace {
constexpr int kChainCopies = 3;
bool staggered(OpKind kind) { return kind == OpKind::broadcast || kind == OpKind::reduce; }
}  // namespace

namespace {

void check_sweep(const ClusterSpec& cluster, const SweepOptions& o) {
  const int n = cluster.world_size();
  if (o.gpus_per_process < 1 || o.gpus_per_process > 1024) throw InputError("", "", "-g: expected 1 to 1024 GPUs per process");
  // nccl-tests runs ranks / g processes of g GPUs each, and one process drives the GPUs of its node.
  if (n % o.gpus_per_process != 0 || o.gpus_per_process > cluster.devices_per_node)
    throw InputError("", "", "-g " + std::to_string(o.gpus_per_process) + ": expected a divisor of the " + std::to_string(n) +
                                 " ranks simulated and at most the " + std::to_string(cluster.devices_per_node) +
                                 " devices of a node (one process drives g GPUs of its node)");
  if (o.iters < 1 || o.iters > 1000000) throw InputError("", "", "-n: expected 1 to 1000000 iterations");
  if (o.root < 0 || o.root >= n) throw InputError("", "", "--root: expected a rank from 0 to " + std::to_string(n - 1));
}

}  // namespace

std::vector<SweepRow> collective_sweep(const ClusterSpec& cluster, const SweepOptions& o, Fidelity* used) {
  check_sweep(cluster, o);
  const int n = cluster.world_size();
  const auto sizes = sweep_sizes(o);
  Plan plan;
  plan.strategy = "collective";
  plan.world_size = n;
  plan.streams = {"comm0"};
  std::vector<SweepRow> rows;
  std::vector<std::pair<std::size_t, std::size_t>> row_ops;  // each row's first and last op
  const std::int64_t elem = dtype_size_bytes(o.dtype);
  for (OpKind kind : o.ops)
    for (auto requested : sizes) {
      SweepRow row;
      row.kind = kind;
      counts_for(kind, requested, n, elem, row.count, row.size_bytes);
      if (row.size_bytes <= 0) continue;  // nccl-tests skips sizes below one element per rank
      row.root = kind == OpKind::reduce || kind == OpKind::broadcast ? o.root : -1;
      PlanOp op;
      op.kind = kind;
      op.name = std::string(op_kind_name(kind)) + ":" + std::to_string(row.size_bytes);
      op.bytes = row.size_bytes;
      op.dtype = o.dtype;
      op.reduce_op = o.redop;
      op.root = row.root;
      op.request = o.request;
      choose_collective(op, cluster, AvgAs::nccl_avg);  // nccl-tests -o avg calls ncclAvg
      row.algorithm = op.algorithm;
      row.protocol = op.protocol;
      row.channels = op.channels;
      const int copies = staggered(kind) && o.iters > 1 ? kChainCopies : 1;
      const std::size_t first = plan.ops.size();
      for (int k = 0; k < copies; ++k) {
        PlanOp copy = op;
        copy.rendezvous = k == 0;
        if (!plan.ops.empty()) copy.deps = {plan.ops.back().id};
        plan.add(std::move(copy));
      }
      row_ops.emplace_back(first, plan.ops.size() - 1);
      rows.push_back(row);
    }
  if (rows.empty()) throw InputError("", "", "sizes: every size is below one element per rank");
  // The device's time alone: launches are accounted as nccl-tests overlaps them (below).
  ClusterSpec device_only = cluster;
  device_only.collective_launch_us = 0;
  device_only.collective_launch_us_by_kind.clear();
  device_only.collective_launch_per_channel_us = 0;
  const Fidelity fid = resolve_fidelity(plan, device_only, o.fidelity);
  if (used) *used = fid;
  const Timeline tl = simulate(plan, device_only, SimOptions{false, fid});
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto [first, last] = row_ops[i];
    double start = std::numeric_limits<double>::infinity(), first_end = 0, last_end = 0;
    for (int r = 0; r < n; ++r) {
      start = std::min(start, tl.at(r, first).start_s);
      first_end = std::max(first_end, tl.at(r, first).end_s);
      last_end = std::max(last_end, tl.at(r, last).end_s);
    }
    auto& row = rows[i];
    // The iterations' mean: the first one whole, each later one its period.
    const double once_s = first_end - start;
    const double period_s = last > first ? (last_end - first_end) / static_cast<double>(last - first) : once_s;
    const double mean_s = (once_s + (o.iters - 1) * period_s) / o.iters;
    const double host_s = o.gpus_per_process * cluster.launch_us(row.kind, row.channels) * 1e-6;
    const double t = std::max(mean_s, host_s);
    row.device_time_us = mean_s * 1e6;
    row.time_us = t * 1e6;
    row.algbw_GBps = t > 0 ? static_cast<double>(row.size_bytes) / t / 1e9 : 0;
    row.busbw_GBps = row.algbw_GBps * bus_factor(row.kind, n);
  }
  return rows;
}

}  // namespace redsim
