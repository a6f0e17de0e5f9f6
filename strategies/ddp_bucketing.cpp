#include "strategies/ddp_bucketing.h"

#include <algorithm>
#include <map>

namespace redsim {

std::vector<GradBucket> assign_buckets_by_size(const ModelTrace& trace, const std::vector<std::size_t>& order,
                                               const std::vector<std::int64_t>& limits) {
  struct Open {
    GradBucket bucket;
    std::size_t limit_index = 0;
    std::size_t first_position = 0;  // where in `order` its first tensor was
  };
  std::vector<GradBucket> closed;
  std::map<DType, Open> open;  // keyed by dtype: DDP never mixes dtypes in a bucket
  for (std::size_t pos = 0; pos < order.size(); ++pos) {
    const auto& p = trace.params[order[pos]];
    auto [it, inserted] = open.try_emplace(p.dtype);
    auto& o = it->second;
    if (o.bucket.params.empty()) {
      o.bucket.dtype = p.dtype;
      o.first_position = pos;
    }
    o.bucket.params.push_back(order[pos]);
    o.bucket.bytes += p.bytes();
    o.bucket.numel += p.numel;
    o.bucket.tensors += p.tensors;
    o.bucket.size_limit_bytes = limits[o.limit_index];
    if (o.bucket.bytes >= o.bucket.size_limit_bytes) {
      closed.push_back(std::move(o.bucket));
      o.bucket = GradBucket{};
      if (o.limit_index + 1 < limits.size()) ++o.limit_index;
    }
  }
  // Leftovers: DDP walks a hash map here; we append them in order of their first tensor so the
  // result is deterministic (it only matters for mixed-dtype models).
  std::vector<Open*> left;
  for (auto& [dtype, o] : open)
    if (!o.bucket.params.empty()) left.push_back(&o);
  std::sort(left.begin(), left.end(), [](const Open* a, const Open* b) { return a->first_position < b->first_position; });
  for (auto* o : left) closed.push_back(std::move(o->bucket));
  return closed;
}

std::vector<GradBucket> ddp_initial_assignment(const ModelTrace& trace, const std::vector<std::int64_t>& limits) {
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < trace.params.size(); ++i)
    if (trace.params[i].reduced()) order.push_back(i);
  auto buckets = assign_buckets_by_size(trace, order, limits);
  auto min_index = [](const GradBucket& b) { return *std::min_element(b.params.begin(), b.params.end()); };
  std::sort(buckets.begin(), buckets.end(),
            [&](const GradBucket& a, const GradBucket& b) { return min_index(a) < min_index(b); });
  return buckets;
}

std::vector<GradBucket> ddp_buckets(const ModelTrace& trace, const Knobs& knobs) {
  const std::vector<std::int64_t> limits{knobs.first_bucket_cap_bytes, knobs.bucket_cap_bytes};
  if (knobs.bucket_order == BucketOrder::execution) {
    std::vector<std::size_t> order;
    for (auto i : trace.grad_ready_order)
      if (trace.params[i].reduced()) order.push_back(i);
    return assign_buckets_by_size(trace, order, limits);
  }
  auto buckets = ddp_initial_assignment(trace, limits);
  std::reverse(buckets.begin(), buckets.end());
  return buckets;
}

}  // namespace redsim
