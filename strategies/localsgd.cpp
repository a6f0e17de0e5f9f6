#include "strategies/localsgd.h"

#include <algorithm>

#include "strategies/memory_model.h"
#include "strategies/step_builder.h"

namespace redsim {
namespace {

// torch.cat of tensors of different dtypes promotes them: to the one dtype they share, to fp64 if
// any is fp64, else to fp32 (fp16 with bf16 has no smaller common type).
DType promoted_dtype(const ModelTrace& trace, const std::vector<std::size_t>& params) {
  const DType first = trace.params[params.front()].dtype;
  bool same = true, fp64 = false;
  for (auto p : params) {
    same = same && trace.params[p].dtype == first;
    fp64 = fp64 || trace.params[p].dtype == DType::fp64;
  }
  return same ? first : fp64 ? DType::fp64 : DType::fp32;
}

GradBucket bucket_of(const ModelTrace& trace, std::vector<std::size_t> params) {
  GradBucket b;
  b.dtype = promoted_dtype(trace, params);
  for (auto p : params) b.numel += trace.params[p].numel, b.tensors += trace.params[p].tensors;
  b.bytes = b.numel * dtype_size_bytes(b.dtype);
  b.size_limit_bytes = b.bytes;
  b.params = std::move(params);
  return b;
}

// What one averaging allreduces: PeriodicModelAverager's one flat tensor of every parameter with
// a gradient (in model.parameters() order), DDP's gradient buckets, or one tensor per parameter.
std::vector<GradBucket> averaging_buckets(const ModelTrace& trace, const Knobs& knobs) {
  if (knobs.localsgd_averaging == Averaging::bucketed) return ddp_buckets(trace, knobs);
  std::vector<std::size_t> reduced;
  for (std::size_t p = 0; p < trace.params.size(); ++p)
    if (trace.params[p].reduced()) reduced.push_back(p);
  std::vector<GradBucket> out;
  if (reduced.empty()) return out;
  if (knobs.localsgd_averaging == Averaging::flat) {
    out.push_back(bucket_of(trace, reduced));
  } else {
    for (auto p : reduced) out.push_back(bucket_of(trace, {p}));
  }
  return out;
}

// glibc serves an allocation over its mmap threshold with pages fresh from the OS and unmaps it
// when freed; the threshold rises with what is freed, to at most 32 MiB on 64-bit
// (DEFAULT_MMAP_THRESHOLD_MAX, mallopt(3)). So on a CPU rank a torch.cat of more than 32 MiB
// faults in every page each averaging, while a smaller one comes to reuse freed heap memory.
constexpr std::uint64_t kFreshAllocationOverBytes = 32ull << 20;

// average_parameters' own kernels before the allreduce: torch.cat copies the parameters into one
// new tensor (reading and writing each byte: at fresh_copy_GBps where that tensor gets fresh
// pages) and divides it by the world size in place (again, at copy_kernel_Bps). Afterwards each
// parameter becomes a view of the averaged tensor: no copy back.
double flatten_s(const ClusterSpec& cluster, std::uint64_t bytes) {
  const double copy_Bps = copy_kernel_Bps(cluster);
  if (!(copy_Bps > 0)) return 0;
  const bool fresh = cluster.device.fresh_copy_GBps > 0 && bytes > kFreshAllocationOverBytes;
  const double cat_Bps = fresh ? cluster.device.fresh_copy_GBps * 1e9 : copy_Bps;
  const double b = static_cast<double>(bytes);
  return 2.0 * b / cat_Bps + 2.0 * b / copy_Bps;
}

// Per-parameter averaging allreduces the parameters themselves: no flatten.
std::uint32_t add_flatten(Plan& plan, const ClusterSpec& cluster, const Knobs& knobs, const GradBucket& b, std::size_t i,
                          std::uint32_t after, const std::string& prefix) {
  const double s = flatten_s(cluster, b.bytes);
  if (knobs.localsgd_averaging == Averaging::per_param || !(s > 0)) return after;
  PlanOp op = compute_stream_op(
      OpKind::framework, prefix + "average:flatten" + (knobs.localsgd_averaging == Averaging::flat ? "" : ":bucket" + std::to_string(i)),
      plan.stream_index("compute"), s);
  op.deps = {after};
  return plan.add(std::move(op));
}

}  // namespace

Plan LocalSgdStrategy::build(const ModelTrace& trace, const ClusterSpec& cluster, const Knobs& knobs) const {
  Plan plan = new_plan("localsgd", trace, cluster);
  const int h_total = knobs.localsgd_period;
  plan.steps = h_total;
  const auto comm = plan.stream_index("comm0");
  const auto buckets = averaging_buckets(trace, knobs);
  Knobs averaging = knobs;
  averaging.reduce_op = ReduceOp::avg;
  const auto ckpt = checkpoint_blocks(trace, knobs);
  // PostLocalSGD trains under DDP with post_localSGD_hook, which hands each bucket back untouched
  // on local steps: DDP still copies the gradients into its buckets and back every step
  // (framework.bucket_copy). accelerate's LocalSGD runs its local steps under no_sync: no buckets.
  const auto ddp = knobs.localsgd_averaging == Averaging::per_param ? std::vector<GradBucket>{} : ddp_buckets(trace, knobs);
  for (int h = 0; h < h_total; ++h) {
    const std::string prefix = h_total == 1 ? "" : "step" + std::to_string(h) + ":";
    auto sync = add_buffer_broadcasts(plan, trace, knobs, comm, prefix);
    auto pass = add_compute_pass(plan, trace, cluster, ckpt, prefix, sync, ddp.empty() ? nullptr : &ddp);
    const auto opt = add_optimizer(plan, trace, cluster, add_bucket_copy_out(plan, cluster, ddp, {pass.last_op}, prefix), prefix);
    if (h != h_total - 1) continue;
    for (std::size_t b = 0; b < buckets.size(); ++b) {
      auto op = bucket_allreduce(trace, averaging, buckets[b], static_cast<int>(b), comm,
                                 {add_flatten(plan, cluster, knobs, buckets[b], b, opt, prefix)}, prefix);
      op.name = prefix + (knobs.localsgd_averaging == Averaging::flat       ? std::string("average:all")
                          : knobs.localsgd_averaging == Averaging::bucketed ? "average:bucket" + std::to_string(b)
                                                                            : "average:" + trace.params[buckets[b].params[0]].name);
      plan.add(std::move(op));
    }
  }
  // PostLocalSGD (and accelerate's LocalSGD) train under DDP, which keeps its gradient buckets.
  // After the optimizer, the averaging holds a copy of what it allreduces: PeriodicModelAverager's
  // flat copy of every parameter (torch.cat in average_parameters), or one bucket, or one
  // parameter (accelerate's reduce returns a new tensor) at a time.
  plan.memory = model_state_memory(trace, plan.world_size, 0, trace.reduced_bytes());
  plan.memory.step_buffer_bytes = replicated_optimizer_step_bytes(trace, cluster, knobs);  // the step, then the averaging
  for (const auto& b : buckets) plan.memory.step_buffer_bytes = std::max(plan.memory.step_buffer_bytes, b.bytes);
  return plan;
}

}  // namespace redsim
