#include "strategies/localsgd.h"

#include "strategies/memory_model.h"
#include "strategies/step_builder.h"

namespace redsim {

Plan LocalSgdStrategy::build(const ModelTrace& trace, const ClusterSpec& cluster, const Knobs& knobs) const {
  Plan plan = new_plan("localsgd", trace, cluster);
  const int h_total = knobs.localsgd_period;
  plan.steps = h_total;
  const auto comm = plan.stream_index("comm0");
  // The parameters are averaged in the same buckets DDP would use for their gradients.
  const auto buckets = ddp_buckets(trace, knobs);
  Knobs averaging = knobs;
  averaging.reduce_op = ReduceOp::avg;
  for (int h = 0; h < h_total; ++h) {
    const std::string prefix = h_total == 1 ? "" : "step" + std::to_string(h) + ":";
    auto sync = add_buffer_broadcasts(plan, trace, knobs, comm, prefix);
    auto pass = add_compute_pass(plan, trace, cluster, prefix, sync);
    const auto opt = add_optimizer(plan, trace, cluster, {pass.last_op}, prefix);
    if (h != h_total - 1) continue;
    for (std::size_t b = 0; b < buckets.size(); ++b) {
      auto op = bucket_allreduce(trace, averaging, buckets[b], static_cast<int>(b), comm, {opt}, prefix);
      op.name = prefix + "average:bucket" + std::to_string(b);
      plan.add(std::move(op));
    }
  }
  // One flat copy of the parameters is averaged (as torch's average_parameters does).
  plan.memory = model_state_memory(trace, plan.world_size, 0, trace.reduced_bytes());
  return plan;
}

}  // namespace redsim
