#include "strategies/bucketed.h"

#include <algorithm>

#include "strategies/comm_hooks.h"
#include "strategies/memory_model.h"
#include "strategies/step_builder.h"

namespace redsim {

std::vector<std::uint32_t> add_ddp_gradient_sync(Plan& plan, const ModelTrace& trace, const ClusterSpec& cluster,
                                                 const Knobs& knobs, std::vector<GradBucket>& buckets) {
  const auto comm = plan.stream_index("comm0");
  auto sync = add_buffer_broadcasts(plan, trace, knobs, comm, "");
  buckets = ddp_buckets(trace, knobs);
  const auto calls = hook_call_s(trace, cluster, knobs, buckets);
  auto pass = add_compute_pass(plan, trace, cluster, checkpoint_blocks(trace, knobs), "", sync, &buckets, &calls);
  auto colls = knobs.comm_hook == CommHook::none ? add_bucket_allreduces(plan, trace, knobs, buckets, pass, comm, "")
                                                 : add_hooked_buckets(plan, trace, cluster, knobs, buckets, pass);
  colls.push_back(pass.last_op);
  return add_bucket_copy_out(plan, cluster, buckets, colls, "");
}

Plan BucketedStrategy::build(const ModelTrace& trace, const ClusterSpec& cluster, const Knobs& knobs) const {
  Plan plan = new_plan("bucketed", trace, cluster);
  std::vector<GradBucket> buckets;
  add_optimizer(plan, trace, cluster, add_ddp_gradient_sync(plan, trace, cluster, knobs, buckets), "");
  // DDP's bucket buffers hold a copy of every reduced gradient (gradient_as_bucket_view=False).
  const std::int64_t hook_bytes = knobs.comm_hook == CommHook::none ? 0 : hook_memory_bytes(trace, knobs, buckets);
  plan.memory = model_state_memory(trace, plan.world_size, 0, trace.reduced_bytes() + hook_bytes);
  // PowerSGD's copies come in backward, the optimizer's temporaries after it.
  plan.memory.step_buffer_bytes =
      std::max(hook_step_buffer_bytes(trace, knobs, buckets), replicated_optimizer_step_bytes(trace, cluster, knobs));
  return plan;
}

}  // namespace redsim
