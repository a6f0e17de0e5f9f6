#include "sim/collective_sweep.h"

#include <algorithm>
#include <limits>
#include <string>

#include "collectives/collective_model.h"
#include "core/error.h"
#include "core/step_summary.h"

namespace redsim {

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

std::vector<SweepRow> collective_sweep(const ClusterSpec& cluster, const SweepOptions& o, Fidelity* used) {
  const int n = cluster.world_size();
  if (o.gpus_per_process < 1 || o.gpus_per_process > 1024) throw InputError("", "", "-g: expected 1 to 1024 GPUs per process");
  if (o.root < 0 || o.root >= n) throw InputError("", "", "--root: expected a rank from 0 to " + std::to_string(n - 1));
  const auto sizes = sweep_sizes(o);
  Plan plan;
  plan.strategy = "collective";
  plan.world_size = n;
  plan.streams = {"comm0"};
  std::vector<SweepRow> rows;
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
      if (!plan.ops.empty()) op.deps = {plan.ops.back().id};
      choose_collective(op, cluster);
      row.algorithm = op.algorithm;
      row.protocol = op.protocol;
      row.channels = op.channels;
      plan.add(std::move(op));
      rows.push_back(row);
    }
  if (rows.empty()) throw InputError("", "", "sizes: every size is below one element per rank");
  // The device's time alone: launches are accounted as nccl-tests overlaps them (below).
  ClusterSpec device_only = cluster;
  device_only.collective_launch_us = 0;
  device_only.collective_launch_us_by_kind.clear();
  const Fidelity fid = resolve_fidelity(plan, device_only, o.fidelity);
  if (used) *used = fid;
  const Timeline tl = simulate(plan, device_only, SimOptions{false, fid});
  for (std::size_t i = 0; i < rows.size(); ++i) {
    double start = std::numeric_limits<double>::infinity(), end = 0;
    for (int r = 0; r < n; ++r) {
      start = std::min(start, tl.at(r, i).start_s);
      end = std::max(end, tl.at(r, i).end_s);
    }
    auto& row = rows[i];
    const double host_s = o.gpus_per_process * cluster.launch_us(row.kind) * 1e-6;
    const double t = std::max(end - start, host_s);
    row.time_us = t * 1e6;
    row.algbw_GBps = t > 0 ? static_cast<double>(row.size_bytes) / t / 1e9 : 0;
    row.busbw_GBps = row.algbw_GBps * bus_factor(row.kind, n);
  }
  return rows;
}

}  // namespace redsim
