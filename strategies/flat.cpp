#include "strategies/flat.h"

#include <limits>

#include "strategies/memory_model.h"
#include "strategies/step_builder.h"

namespace redsim {

Plan FlatStrategy::build(const ModelTrace& trace, const ClusterSpec& cluster, const Knobs& knobs) const {
  Plan plan = new_plan("flat", trace, cluster);
  const auto comm = plan.stream_index("comm0");
  auto sync = add_buffer_broadcasts(plan, trace, knobs, comm, "");
  auto pass = add_compute_pass(plan, trace, cluster, checkpoint_blocks(trace, knobs), "", sync);
  // One "bucket" per dtype with no size limit: the flattened gradient tensor.
  auto flat = assign_buckets_by_size(trace, reduced_ready_order(trace), {std::numeric_limits<std::int64_t>::max()});
  std::vector<std::uint32_t> colls;
  for (std::size_t b = 0; b < flat.size(); ++b) {
    auto op = bucket_allreduce(trace, knobs, flat[b], static_cast<int>(b), comm, {pass.last_op}, "");
    op.name = "allreduce:flat" + (flat.size() > 1 ? std::string(":") + std::string(dtype_name(flat[b].dtype)) : "");
    colls.push_back(plan.add(std::move(op)));
  }
  if (colls.empty()) colls.push_back(pass.last_op);
  add_optimizer(plan, trace, cluster, colls, "");
  // The flattened gradient is a second copy of every reduced gradient.
  plan.memory = model_state_memory(trace, plan.world_size, 0, trace.reduced_bytes());
  plan.memory.step_buffer_bytes = replicated_optimizer_step_bytes(trace, cluster, knobs);
  return plan;
}

}  // namespace redsim
