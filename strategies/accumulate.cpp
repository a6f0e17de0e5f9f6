#include "strategies/accumulate.h"

#include "strategies/memory_model.h"
#include "strategies/step_builder.h"

namespace redsim {

Plan AccumulateStrategy::build(const ModelTrace& trace, const ClusterSpec& cluster, const Knobs& knobs) const {
  Plan plan = new_plan("accumulate", trace, cluster);
  const int m_total = knobs.microbatches;
  plan.samples_per_step *= m_total;
  const auto comm = plan.stream_index("comm0");
  const auto buckets = ddp_buckets(trace, knobs);
  auto deps = add_buffer_broadcasts(plan, trace, knobs, comm, "");
  std::vector<std::uint32_t> colls;
  ComputePass pass;
  const auto ckpt = checkpoint_blocks(trace, knobs);
  for (int m = 0; m < m_total; ++m) {
    // With one micro-batch the plan is exactly bucketed's, names included.
    const std::string prefix = m_total == 1 ? "" : "mb" + std::to_string(m) + ":";
    const bool syncs = m == m_total - 1 || knobs.sync_every_microbatch;
    // no_sync micro-batches accumulate into .grad and never touch the buckets.
    pass = add_compute_pass(plan, trace, cluster, ckpt, prefix, deps, syncs ? &buckets : nullptr, nullptr, m > 0);
    deps.clear();
    if (syncs) {
      auto ids = add_bucket_allreduces(plan, trace, knobs, buckets, pass, comm, prefix);
      ids.push_back(pass.last_op);
      // DDP's backward returns only once its allreduces are done and copied back: the next forward waits.
      ids = add_bucket_copy_out(plan, cluster, buckets, ids, prefix);
      colls.insert(colls.end(), ids.begin(), ids.end());
      deps = ids;
    }
  }
  colls.push_back(pass.last_op);
  add_optimizer(plan, trace, cluster, colls, "");
  plan.memory = model_state_memory(trace, plan.world_size, 0, trace.reduced_bytes());
  plan.memory.step_buffer_bytes = replicated_optimizer_step_bytes(trace, cluster, knobs);
  return plan;
}

}  // namespace redsim
