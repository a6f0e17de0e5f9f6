#include "strategies/bucketed.h"

#include "strategies/memory_model.h"
#include "strategies/step_builder.h"

namespace redsim {

Plan BucketedStrategy::build(const ModelTrace& trace, const ClusterSpec& cluster, const Knobs& knobs) const {
  Plan plan = new_plan("bucketed", trace, cluster);
  const auto comm = plan.stream_index("comm0");
  auto sync = add_buffer_broadcasts(plan, trace, knobs, comm, "");
  const auto buckets = ddp_buckets(trace, knobs);
  auto pass = add_compute_pass(plan, trace, cluster, "", sync, &buckets);
  auto colls = add_bucket_allreduces(plan, trace, knobs, buckets, pass, comm, "");
  colls.push_back(pass.last_op);
  add_optimizer(plan, trace, cluster, add_bucket_copy_out(plan, cluster, buckets, colls, ""), "");
  // DDP's bucket buffers hold a copy of every reduced gradient (gradient_as_bucket_view=False).
  plan.memory = model_state_memory(trace, plan.world_size, 0, trace.reduced_bytes());
  return plan;
}

}  // namespace redsim
