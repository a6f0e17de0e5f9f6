#include "strategies/zero.h"

#include <algorithm>

#include "strategies/memory_model.h"
#include "strategies/step_builder.h"
#include "strategies/zero_partition.h"

namespace redsim {
namespace {

// DeepSpeed's IPG bucket rule: gradients in ready order; a bucket is reduced *before* adding a
// gradient would overflow reduce_bucket_size (unlike DDP, which closes a bucket once it
// reaches its cap). A gradient larger than the cap travels alone.
std::vector<GradBucket> zero_reduce_buckets(const ModelTrace& trace, std::int64_t cap_bytes) {
  std::vector<GradBucket> out;
  GradBucket cur;
  for (auto i : reduced_ready_order(trace)) {
    const auto& p = trace.params[i];
    if (!cur.params.empty() && cur.bytes + p.bytes() > cap_bytes) {
      out.push_back(std::move(cur));
      cur = GradBucket{};
    }
    cur.dtype = cur.params.empty() ? p.dtype : cur.dtype;
    cur.params.push_back(i);
    cur.bytes += p.bytes();
    cur.numel += p.numel;
    cur.size_limit_bytes = cap_bytes;
  }
  if (!cur.params.empty()) out.push_back(std::move(cur));
  return out;
}

}  // namespace

Plan ZeroStrategy::plan(const ModelTrace& trace, const ClusterSpec& cluster, const Knobs& knobs) const {
  Plan plan = new_plan("zero", trace, cluster);
  const auto comm = plan.stream_index("comm0");
  const int world = plan.world_size;
  auto sync = add_buffer_broadcasts(plan, trace, knobs, comm, "");
  auto pass = add_compute_pass(plan, trace, cluster, "", sync);
  const auto part = partition_parameters(trace, world);

  std::vector<std::uint32_t> reduces;
  const auto buckets = zero_reduce_buckets(trace, knobs.bucket_cap_bytes);
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    const auto owned = slices_by_owner(trace, part, buckets[b].params);
    PlanOp op;
    op.stream = comm;
    op.dtype = knobs.wire_dtype.value_or(buckets[b].dtype);
    op.reduce_op = knobs.reduce_op;
    op.algorithm = knobs.algorithm;
    op.channels = knobs.channels;
    op.bucket = static_cast<int>(b);
    op.slices = owned.slices;
    op.deps = {knobs.overlap_comm ? bucket_ready_op(trace, pass, buckets[b]) : pass.last_op};
    std::vector<std::int64_t> shard(static_cast<std::size_t>(world));
    int owners = 0, owner = 0;
    for (int r = 0; r < world; ++r) {
      shard[static_cast<std::size_t>(r)] = owned.owner_elems[static_cast<std::size_t>(r)] * dtype_size_bytes(op.dtype);
      op.bytes += shard[static_cast<std::size_t>(r)];
      if (shard[static_cast<std::size_t>(r)] > 0) owners += 1, owner = r;
    }
    if (owners == 1) {
      op.kind = OpKind::reduce;
      op.root = owner;
      op.name = "reduce:bucket" + std::to_string(b) + ":to" + std::to_string(owner);
    } else {
      op.kind = OpKind::reduce_scatter;
      op.shard_bytes = std::move(shard);
      op.name = "reduce_scatter:bucket" + std::to_string(b);
    }
    reduces.push_back(plan.add(std::move(op)));
  }
  reduces.push_back(pass.last_op);
  const double my_share = part.total_bytes > 0 ? static_cast<double>(part.max_shard_bytes()) / part.total_bytes : 1.0;
  const auto opt = add_optimizer(plan, trace, cluster, reduces, "", my_share);

  // Updated parameters travel in their own dtype (the 16-bit working copy).
  for (std::int64_t begin = 0, i = 0; begin < part.total_bytes; begin += knobs.allgather_bucket_bytes, ++i) {
    const auto end = std::min(part.total_bytes, begin + knobs.allgather_bucket_bytes);
    const auto owned = slices_in_range(trace, part, begin, end);
    PlanOp op;
    op.kind = OpKind::allgather;
    op.name = "allgather:params" + std::to_string(i);
    op.stream = comm;
    op.dtype = trace.params[owned.slices.front().param].dtype;
    op.algorithm = Algorithm::ring;
    op.channels = knobs.channels;
    op.slices = owned.slices;
    op.deps = {opt};
    for (std::size_t r = 0; r < owned.owner_elems.size(); ++r) {
      op.shard_bytes.push_back(owned.owner_elems[r] * dtype_size_bytes(op.dtype));
      op.bytes += op.shard_bytes.back();
    }
    plan.add(std::move(op));
  }

  std::int64_t largest_bucket = 0;
  for (const auto& b : buckets) largest_bucket = std::max(largest_bucket, b.bytes);
  plan.memory = model_state_memory(trace, world, knobs.zero_stage,
                                   largest_bucket + std::min(knobs.allgather_bucket_bytes, part.total_bytes));
  return plan;
}

}  // namespace redsim
