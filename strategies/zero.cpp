#include "strategies/zero.h"

#include <algorithm>

#include "strategies/memory_model.h"
#include "strategies/step_builder.h"
#include "strategies/zero_partition.h"
#include "strategies/zero_pytorch.h"

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
    cur.tensors += p.tensors;
    cur.size_limit_bytes = cap_bytes;
  }
  if (!cur.params.empty()) out.push_back(std::move(cur));
  return out;
}

// The updated partitions' allgathers, `slice_bytes` of every rank's partition each, after `opt`.
void add_partition_allgathers(Plan& plan, const ModelTrace& trace, const ZeroPartition& part, const Knobs& knobs,
                              std::uint32_t comm, std::uint32_t opt, std::int64_t slice_bytes) {
  const int world = plan.world_size;
  for (std::int64_t off = 0, i = 0; off < part.max_shard_bytes(); off += slice_bytes, ++i) {
    PlanOp op;
    op.kind = OpKind::allgather;
    op.name = "allgather:params" + std::to_string(i);
    op.stream = comm;
    op.request = collective_request(knobs);
    op.deps = {opt};
    for (int r = 0; r < world; ++r) {
      const auto lo = part.bounds[static_cast<std::size_t>(r)] + off;
      const auto hi = std::min(part.bounds[static_cast<std::size_t>(r) + 1], lo + slice_bytes);
      std::int64_t shard = 0;
      if (lo < hi) {
        for (const auto& sl : slices_in_range(trace, part, lo, hi)) {
          op.slices.push_back(sl);
          shard += sl.numel * trace.params[sl.param].bytes() / trace.params[sl.param].numel;
        }
      }
      op.shard_bytes.push_back(shard);
      op.bytes += shard;
    }
    op.dtype = trace.params[op.slices.front().param].dtype;
    plan.add(std::move(op));
  }
}

}  // namespace

Plan ZeroStrategy::build(const ModelTrace& trace, const ClusterSpec& cluster, const Knobs& knobs) const {
  if (knobs.zero_impl == ZeroImpl::pytorch) return build_pytorch_zero(trace, cluster, knobs);
  Plan plan = new_plan("zero", trace, cluster);
  const auto comm = plan.stream_index("comm0");
  const int world = plan.world_size;
  auto sync = add_buffer_broadcasts(plan, trace, knobs, comm, "");
  auto pass = add_compute_pass(plan, trace, cluster, checkpoint_blocks(trace, knobs), "", sync);
  const auto part = partition_parameters(trace, world);

  // DeepSpeed's reduce_scatter=True path (average_tensor): a bucket is reduced to each rank
  // that owns part of it, one reduce per owner slice, issued back to back. A ring
  // reduce-scatter with uneven shards would move the big shard around all N-1 hops.
  std::vector<std::uint32_t> reduces;
  const auto buckets = zero_reduce_buckets(trace, knobs.bucket_cap_bytes);
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    const auto owned = slices_by_owner(trace, part, buckets[b].params);
    int owners = 0;
    for (auto e : owned.owner_elems) owners += e > 0 ? 1 : 0;
    std::size_t next_slice = 0;
    for (int r = 0; r < world; ++r) {
      const auto elems = owned.owner_elems[static_cast<std::size_t>(r)];
      if (elems == 0) continue;
      PlanOp op;
      op.kind = OpKind::reduce;
      op.root = r;
      op.name = (owners == 1 ? "reduce:bucket" : "reduce_scatter:bucket") + std::to_string(b) + ":to" + std::to_string(r);
      op.stream = comm;
      op.dtype = knobs.wire_dtype.value_or(buckets[b].dtype);
      op.bytes = elems * dtype_size_bytes(op.dtype);
      op.reduce_op = knobs.reduce_op;
      op.request = collective_request(knobs);
      op.bucket = static_cast<int>(b);
      for (std::int64_t got = 0; got < elems; ++next_slice) {
        op.slices.push_back(owned.slices[next_slice]);
        got += owned.slices[next_slice].numel;
      }
      op.deps = {knobs.overlap_comm ? bucket_ready_op(trace, pass, buckets[b]) : pass.last_op};
      reduces.push_back(plan.add(std::move(op)));
    }
  }
  reduces.push_back(pass.last_op);
  const double my_share = part.total_bytes > 0 ? static_cast<double>(part.max_shard_bytes()) / part.total_bytes : 1.0;
  const auto opt = add_optimizer(plan, trace, cluster, reduces, "", my_share);

  // DeepSpeed's all_gather_dp_groups: each allgather takes the same slice (allgather bucket / N
  // bytes) of every rank's partition, so the shards are even and a ring moves them well.
  // Updated parameters travel in their own dtype (the 16-bit working copy).
  const std::int64_t slice_bytes = std::max<std::int64_t>(8, knobs.allgather_bucket_bytes / world / 8 * 8);
  add_partition_allgathers(plan, trace, part, knobs, comm, opt, slice_bytes);

  std::int64_t largest_bucket = 0;
  for (const auto& b : buckets) largest_bucket = std::max(largest_bucket, b.bytes);
  plan.memory = model_state_memory(trace, world, knobs.zero_stage,
                                   largest_bucket + std::min(slice_bytes * world, part.total_bytes));
  // DeepSpeed steps each rank's partition as one flat fp32 tensor.
  const std::int64_t partition = (trainable_elements(trace).total + world - 1) / world;
  plan.memory.step_buffer_bytes = optimizer_step_bytes(resolved_optimizer_impl(knobs, cluster), partition, partition);
  return plan;
}

}  // namespace redsim
