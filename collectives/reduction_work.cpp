#include "collectives/reduction_work.h"

#include <algorithm>
#include <vector>

#include "collectives/shapes.h"
#include "core/pipeline.h"

namespace redsim {
namespace {

// A ring of n reduce-scatters `bytes`: the busiest rank receives all but the smallest chunk.
std::int64_t ring_scatter(std::int64_t bytes, int n) { return n < 2 ? 0 : bytes - bytes / n; }

std::int64_t tree_allreduce(const PlanOp& op, const ClusterSpec& cluster, int world) {
  std::vector<std::int64_t> per_rank(static_cast<std::size_t>(world));
  for (int c = 0; c < op.channels; ++c) {
    const auto shape = tree_shape(cluster, c, op.channels);
    const auto b = split_piece(op.bytes, op.channels, c);
    for (int r = 0; r < world; ++r)
      per_rank[static_cast<std::size_t>(r)] += b * static_cast<std::int64_t>(shape.children[static_cast<std::size_t>(r)].size());
  }
  return *std::max_element(per_rank.begin(), per_rank.end());
}

std::int64_t reduce_scatter(const PlanOp& op, int world) {
  if (op.shard_bytes.empty()) return ring_scatter(op.bytes, world);
  std::int64_t total = 0;
  for (auto s : op.shard_bytes) total += s;
  return total - *std::min_element(op.shard_bytes.begin(), op.shard_bytes.end());
}

}  // namespace

bool reductions_share_cpu(const ClusterSpec& cluster) { return cluster.device.compute_capability <= 0; }

std::int64_t reduced_bytes_per_rank(const PlanOp& op, const ClusterSpec& cluster, int world) {
  if (world < 2 || op.bytes <= 0) return 0;
  const int channels = std::max(1, op.channels);
  switch (op.kind) {
    case OpKind::reduce:
      return op.bytes;  // every rank but the chain's head receives the whole buffer toward the root
    case OpKind::reduce_scatter:
      return reduce_scatter(op, world);
    case OpKind::allreduce:
      break;
    default:
      return 0;
  }
  if (op.algorithm == Algorithm::tree) return tree_allreduce(op, cluster, world);
  std::int64_t total = 0;
  for (int c = 0; c < channels; ++c) {
    const auto b = split_piece(op.bytes, channels, c);
    if (op.algorithm != Algorithm::hierarchical) {
      total += ring_scatter(b, world);
      continue;
    }
    // Reduce-scatter inside the node, then a ring allreduce of the largest shard across nodes.
    const int d = cluster.devices_per_node, m = cluster.nodes;
    const auto shard = d > 1 ? b / d + (b % d ? 1 : 0) : b;
    total += ring_scatter(b, d) + ring_scatter(shard, m);
  }
  return total;
}

double reduction_s_per_rank(const PlanOp& op, const ClusterSpec& cluster, int world) {
  const double GBps = cluster.device.reduce_GBps_of(op.dtype);
  if (GBps <= 0) return 0;
  return static_cast<double>(reduced_bytes_per_rank(op, cluster, world)) / (GBps * 1e9);
}

std::vector<double> reduction_s_by_op(const Plan& plan, const ClusterSpec& cluster) {
  std::vector<double> s(plan.ops.size(), 0.0);
  if (!reductions_share_cpu(cluster)) return s;
  for (const auto& op : plan.ops)
    if (op_kind_is_collective(op.kind) && op.group_size <= 0) s[op.id] = reduction_s_per_rank(op, cluster, plan.world_size);
  return s;
}

}  // namespace redsim
