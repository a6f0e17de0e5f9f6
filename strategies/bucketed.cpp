#include "strategies/bucketed.h"

#include "strategies/step_builder.h"

namespace redsim {

Plan BucketedStrategy::plan(const ModelTrace& trace, const ClusterSpec& cluster, const Knobs& knobs) const {
  Plan plan = new_plan("bucketed", trace, cluster);
  const auto comm = plan.stream_index("comm0");
  auto pass = add_compute_pass(plan, trace, cluster, "", {});
  auto buckets = ddp_buckets(trace, knobs);
  // DDP launches buckets strictly in order (next_bucket_): the FIFO comm stream gives exactly
  // that, and each bucket also waits for the backward op that makes its last gradient.
  std::vector<std::uint32_t> colls;
  for (std::size_t b = 0; b < buckets.size(); ++b)
    colls.push_back(plan.add(bucket_allreduce(trace, knobs, buckets[b], static_cast<int>(b), comm,
                                              {bucket_ready_op(trace, pass, buckets[b])}, "")));
  colls.push_back(pass.last_op);
  add_optimizer(plan, trace, cluster, colls, "");
  return plan;
}

}  // namespace redsim
