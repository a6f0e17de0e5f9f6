#include "realexec/exec_layout.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include "realexec/reduce_kernels.h"
#include "realexec/traffic.h"

namespace redsim::realexec {
namespace {

std::int64_t scaled(std::int64_t elems, double scale) {
  if (elems <= 0 || scale == 1.0) return elems;
  return std::max<std::int64_t>(1, std::llround(static_cast<double>(elems) * scale));
}

std::invalid_argument bad(const PlanOp& op, const std::string& what) {
  return std::invalid_argument("plan op " + std::to_string(op.id) + " \"" + op.name + "\": " + what);
}

}  // namespace

CollectiveLayout layout_collective(const PlanOp& op, int world_size, double scale) {
  // A grouped collective (hsdp) is laid out over its group: shards by member index.
  const int world = group_ranks(op, world_size);
  if (!op_kind_is_collective(op.kind)) throw bad(op, "not a collective");
  const bool reduces = op.kind == OpKind::allreduce || op.kind == OpKind::reduce || op.kind == OpKind::reduce_scatter;
  if (reduces && !wire_dtype_supported(op.dtype))
    throw bad(op, "reduces " + std::string(dtype_name(op.dtype)) + " elements; realexec reduces fp32|fp16|bf16 only");
  CollectiveLayout L;
  L.op = op.id;
  L.elem_bytes = dtype_size_bytes(op.dtype);
  if (op.bytes < 0 || op.bytes % L.elem_bytes != 0)
    throw bad(op, std::to_string(op.bytes) + " bytes is not a whole number of " + std::string(dtype_name(op.dtype)) +
                      " elements");
  if (op.channels < 1) throw bad(op, "needs at least one channel");
  if ((op.kind == OpKind::reduce || op.kind == OpKind::broadcast) && (op.root < 0 || op.root >= world))
    throw bad(op, "root " + std::to_string(op.root) + " is not a rank of " + std::to_string(world));
  const std::int64_t unscaled = op.bytes / L.elem_bytes;
  const int C = op.channels;

  if (op.kind == OpKind::reduce_scatter || op.kind == OpKind::allgather) {
    std::vector<std::int64_t> shard_elems(static_cast<std::size_t>(world));
    if (!op.shard_bytes.empty()) {
      if (static_cast<int>(op.shard_bytes.size()) != world)
        throw bad(op, "has " + std::to_string(op.shard_bytes.size()) + " shard sizes for " + std::to_string(world) +
                          " ranks");
      std::int64_t total = 0;
      for (int r = 0; r < world; ++r) {
        const auto b = op.shard_bytes[static_cast<std::size_t>(r)];
        if (b < 0 || b % L.elem_bytes != 0)
          throw bad(op, "shard " + std::to_string(r) + " of " + std::to_string(b) + " bytes is not a whole number of elements");
        shard_elems[static_cast<std::size_t>(r)] = scaled(b / L.elem_bytes, scale);
        total += b;
      }
      if (total != op.bytes)
        throw bad(op, "shard sizes add up to " + std::to_string(total) + " bytes, not the op's " + std::to_string(op.bytes));
    } else {
      const std::int64_t e = scaled(unscaled, scale);
      for (int r = 0; r < world; ++r) shard_elems[static_cast<std::size_t>(r)] = split_piece(e, world, r);
    }
    std::int64_t off = 0;
    for (int r = 0; r < world; ++r) {
      L.shards.push_back({off, shard_elems[static_cast<std::size_t>(r)]});
      off += shard_elems[static_cast<std::size_t>(r)];
    }
    L.elems = off;
    L.channel_shards.assign(static_cast<std::size_t>(C), std::vector<Segment>(static_cast<std::size_t>(world)));
    for (int r = 0; r < world; ++r) {
      const Segment& s = L.shards[static_cast<std::size_t>(r)];
      for (int c = 0; c < C; ++c)
        L.channel_shards[static_cast<std::size_t>(c)][static_cast<std::size_t>(r)] = {
            s.offset + split_offset(s.count, C, c), split_piece(s.count, C, c)};
    }
  } else {
    L.elems = scaled(unscaled, scale);
    for (int c = 0; c < C; ++c) L.pieces.push_back({split_offset(L.elems, C, c), split_piece(L.elems, C, c)});
  }
  return L;
}

void check_plan_for_realexec(const Plan& plan, int world) {
  if (plan.world_size != world)
    throw std::invalid_argument("the plan is for " + std::to_string(plan.world_size) + " ranks but the run has " +
                                std::to_string(world));
  std::map<std::uint32_t, std::uint32_t> first_collective;  // by stream
  for (std::size_t i = 0; i < plan.ops.size(); ++i) {
    const auto& op = plan.ops[i];
    if (op.id != i) throw std::invalid_argument("plan op " + std::to_string(i) + " has id " + std::to_string(op.id));
    if (op.stream >= plan.streams.size()) throw bad(op, "names stream " + std::to_string(op.stream) + ", which does not exist");
    for (auto d : op.deps)
      if (d >= op.id) throw bad(op, "depends on op " + std::to_string(d) + ", which is not earlier in the plan");
    // A stream's communicators serve all its collectives: one group shape per stream.
    if (op_kind_is_collective(op.kind)) {
      const auto first = first_collective.emplace(op.stream, op.id).first->second;
      const auto& o = plan.ops[first];
      if (o.group_size != op.group_size || (op.group_size > 0 && o.group_stride != op.group_stride))
        throw bad(op, "runs in other groups than op " + std::to_string(first) + " on the same stream");
    }
    if (op_kind_is_collective(op.kind) && !group_is_valid(op, world))
      throw bad(op, "runs in groups of " + std::to_string(op.group_size) + " ranks " + std::to_string(op.group_stride) +
                        " apart, which do not split " + std::to_string(world) + " ranks evenly");
    if (op_kind_is_collective(op.kind))
      layout_collective(op, world, 1.0);
    else if (!(op.duration_s >= 0) || !std::isfinite(op.duration_s))
      throw bad(op, "has a compute duration of " + std::to_string(op.duration_s) + " s");
  }
}

std::int64_t collective_buffer_bytes(const Plan& plan, double scale) {
  std::int64_t total = 0;
  for (const auto& op : plan.ops)
    if (op_kind_is_collective(op.kind)) total += layout_collective(op, plan.world_size, scale).bytes();
  return total;
}

Plan scaled_plan(const Plan& plan, double scale) {
  Plan p = plan;
  if (scale == 1.0) return p;
  for (auto& op : p.ops) {
    if (!op_kind_is_collective(op.kind)) continue;
    const auto L = layout_collective(op, plan.world_size, scale);
    op.bytes = L.bytes();
    if (!op.shard_bytes.empty())
      for (std::size_t r = 0; r < op.shard_bytes.size(); ++r) op.shard_bytes[r] = L.shards[r].count * L.elem_bytes;
  }
  return p;
}

Plan plan_for_library(Plan plan) {
  for (auto& op : plan.ops)
    if (op_kind_is_collective(op.kind) && op.request.channels <= 0) op.channels = 1;
  return plan;
}

}  // namespace redsim::realexec
