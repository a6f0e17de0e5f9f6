#include "strategies/zero_pytorch.h"

#include <algorithm>

#include "core/error.h"
#include "strategies/bucketed.h"
#include "strategies/memory_model.h"
#include "strategies/step_builder.h"

namespace redsim {

std::vector<std::vector<std::size_t>> zero_redundancy_partition(const ModelTrace& trace, int world) {
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < trace.params.size(); ++i)
    if (trace.params[i].trainable) order.push_back(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return trace.params[a].numel > trace.params[b].numel; });
  std::vector<std::vector<std::size_t>> owned(static_cast<std::size_t>(world));
  std::vector<std::int64_t> elems(static_cast<std::size_t>(world), 0);
  for (auto i : order) {
    const auto r = static_cast<std::size_t>(std::min_element(elems.begin(), elems.end()) - elems.begin());
    owned[r].push_back(i);
    elems[r] += trace.params[i].numel;
  }
  return owned;
}

Plan build_pytorch_zero(const ModelTrace& trace, const ClusterSpec& cluster, const Knobs& knobs) {
  const bool gloo = cluster.library == CollectiveLibrary::ideal;
  if (gloo && cluster.world_size() > kMaxBinomialRanks)
    throw InputError("", "", "--zero-impl pytorch on a cluster with ideal (Gloo) collectives is simulated up to " +
                                 std::to_string(kMaxBinomialRanks) + " ranks (Gloo's binomial broadcasts); this one has " +
                                 std::to_string(cluster.world_size()));
  Plan plan = new_plan("zero", trace, cluster);
  const auto comm = plan.stream_index("comm0");
  const int world = plan.world_size;
  // DDP's comm hooks are bucketed's knob; this plan reduces plainly, as it always has.
  Knobs ddp = knobs;
  ddp.comm_hook = CommHook::none;
  std::vector<GradBucket> buckets;
  const auto copied = add_ddp_gradient_sync(plan, trace, cluster, ddp, buckets);

  // The optimizer steps each rank's own parameters: the busiest rank's share of the elements.
  const auto owned = zero_redundancy_partition(trace, world);
  std::int64_t total = 0, busiest = 0, busiest_state_bytes = 0, step_bytes = 0;
  const auto impl = resolved_optimizer_impl(knobs, cluster);
  for (const auto& params : owned) {
    std::int64_t elems = 0, state = 0, largest = 0;
    for (auto i : params) {
      elems += trace.params[i].numel;
      largest = std::max(largest, trace.params[i].numel);
      state += trace.params[i].numel * adam_state_bytes_per_element(trace.params[i].dtype);
    }
    total += elems;
    busiest = std::max(busiest, elems);
    busiest_state_bytes = std::max(busiest_state_bytes, state);
    step_bytes = std::max(step_bytes, optimizer_step_bytes(impl, elems, largest));
  }
  const double share = total > 0 ? static_cast<double>(busiest) / static_cast<double>(total) : 1.0;
  const auto opt = add_optimizer(plan, trace, cluster, copied, "", share);

  // _sync_params: every parameter from its owner, in rank order, each as it is in memory. All are
  // issued at once; on Gloo, ProcessGroupGloo's two worker threads take them in turn.
  const std::uint32_t lanes[2] = {comm, gloo ? plan.stream_index("comm1") : comm};
  int issued = 0;
  for (int r = 0; r < world; ++r)
    for (auto i : owned[static_cast<std::size_t>(r)]) {
      const auto& p = trace.params[i];
      PlanOp op;
      op.kind = OpKind::broadcast;
      op.root = r;
      op.name = "broadcast:param:" + p.name;
      op.stream = lanes[issued++ % 2];
      op.dtype = p.dtype;
      op.bytes = p.bytes();
      op.request = collective_request(knobs);
      // With ideal collectives (a Gloo cluster) PyTorch's dist.broadcast is Gloo's binomial tree.
      if (gloo) op.request.algorithm = Algorithm::binomial;
      op.slices.push_back({i, 0, p.numel});
      op.deps = {opt};
      plan.add(std::move(op));
    }

  // DDP's bucket copies of the gradients, and Adam's state of the busiest rank's parameters.
  plan.memory = model_state_memory(trace, world, 0, trace.reduced_bytes());
  plan.memory.optimizer_bytes = busiest_state_bytes;
  plan.memory.step_buffer_bytes = step_bytes;  // the local optimizer's over the rank's own parameters
  return plan;
}

}  // namespace redsim
