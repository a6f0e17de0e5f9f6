#include "sim/grouped_collectives.h"

#include <map>
#include <string>
#include <utility>

#include "collectives/cluster_subset.h"
#include "sim/sim_engine.h"

namespace redsim {
namespace {

// What decides a grouped op's simulated time: ops alike in all of these run alike.
std::string op_signature(const PlanOp& op) {
  std::string s = std::to_string(static_cast<int>(op.kind)) + "/" + std::to_string(op.bytes) + "/" +
                  std::to_string(static_cast<int>(op.dtype)) + "/" + std::to_string(static_cast<int>(op.reduce_op)) + "/" +
                  std::to_string(static_cast<int>(op.algorithm)) + "/" +
                  (op.protocol ? std::to_string(static_cast<int>(*op.protocol)) : "-") + "/" + std::to_string(op.channels) +
                  "/" + std::to_string(op.request.channels) + "/" + std::to_string(op.root);
  for (auto b : op.shard_bytes) s += "," + std::to_string(b);
  return s;
}

// The ops of one group shape, each alike ones once, one after another on one stream of a plan
// over the group's ranks.
struct GroupPlan {
  Plan plan;
  std::map<std::string, std::uint32_t> id_of;  // signature -> op id in `plan`
};

}  // namespace

bool plan_has_grouped_collectives(const Plan& plan) {
  for (const auto& op : plan.ops)
    if (op_kind_is_collective(op.kind) && op.group_size > 0) return true;
  return false;
}

GroupedTimings simulate_grouped_collectives(const Plan& plan, const ClusterSpec& cluster, const SimOptions& options) {
  std::map<std::pair<int, int>, GroupPlan> shapes;  // by (group size, stride)
  for (const auto& op : plan.ops) {
    if (!op_kind_is_collective(op.kind) || op.group_size <= 0) continue;
    auto& g = shapes[{op.group_size, op.group_stride}];
    const auto sig = op_signature(op);
    if (g.id_of.count(sig) != 0) continue;
    if (g.plan.ops.empty()) {
      g.plan.strategy = plan.strategy + " (one group)";
      g.plan.max_ops = plan.max_ops;
      g.plan.world_size = op.group_size;
      g.plan.streams = {"grouped"};
    }
    PlanOp copy = op;
    copy.group_size = 0;
    copy.group_stride = 1;
    copy.stream = 0;
    copy.slices.clear();
    copy.deps.clear();
    if (!g.plan.ops.empty()) copy.deps.push_back(g.plan.ops.back().id);
    g.id_of[sig] = g.plan.add(std::move(copy));
  }
  GroupedTimings out;
  for (const auto& [shape, g] : shapes) {
    const ClusterSpec on = group_cluster(cluster, shape.first, shape.second);
    const Timeline tl = simulate(g.plan, on, options);
    for (const auto& op : plan.ops) {
      if (!op_kind_is_collective(op.kind) || op.group_size != shape.first || op.group_stride != shape.second) continue;
      const auto id = g.id_of.at(op_signature(op));
      GroupedTiming t;
      for (int i = 0; i < shape.first; ++i) {
        const auto& o = tl.at(i, id);
        t.duration_s.push_back(o.end_s - o.start_s);
        t.bytes_sent.push_back(o.bytes_sent);
        t.bytes_received.push_back(o.bytes_received);
      }
      out.emplace(op.id, std::move(t));
    }
  }
  return out;
}

}  // namespace redsim
