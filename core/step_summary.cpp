#include "core/step_summary.h"

#include <algorithm>
#include <limits>
#include <utility>

namespace redsim {
namespace {

using Interval = std::pair<double, double>;

// Merges intervals in place and returns their total length.
std::vector<Interval> merged(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  std::vector<Interval> out;
  for (const auto& iv : v) {
    if (iv.second <= iv.first) continue;
    if (!out.empty() && iv.first <= out.back().second)
      out.back().second = std::max(out.back().second, iv.second);
    else
      out.push_back(iv);
  }
  return out;
}

double length(const std::vector<Interval>& v) {
  double s = 0;
  for (const auto& iv : v) s += iv.second - iv.first;
  return s;
}

// Length of a minus b, both merged.
double length_minus(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  double total = 0;
  std::size_t j = 0;
  for (const auto& [s, e] : a) {
    double cur = s;
    while (j < b.size() && b[j].second <= cur) ++j;
    for (std::size_t k = j; k < b.size() && b[k].first < e; ++k) {
      if (b[k].first > cur) total += b[k].first - cur;
      cur = std::max(cur, b[k].second);
      if (cur >= e) break;
    }
    if (cur < e) total += e - cur;
  }
  return total;
}

}  // namespace

double bus_factor(OpKind kind, int n) {
  switch (kind) {
    case OpKind::allreduce:
      return n > 1 ? 2.0 * (n - 1) / n : 0.0;
    case OpKind::reduce_scatter:
    case OpKind::allgather:
      return n > 1 ? static_cast<double>(n - 1) / n : 0.0;
    default:
      return 1.0;
  }
}

StepSummary summarize(const Plan& plan, const Timeline& tl) {
  StepSummary s;
  const double steps = std::max(1, plan.steps);
  double step_end = 0, compute = 0, comm = 0, exposed = 0;
  for (int r = 0; r < tl.world_size; ++r) {
    std::vector<Interval> comp, com;
    std::int64_t sent = 0;
    for (const auto& op : plan.ops) {
      const auto& t = tl.at(r, op.id);
      step_end = std::max(step_end, t.end_s);
      sent += t.bytes_sent;
      (plan.stream_is_compute(op.stream) ? comp : com).emplace_back(t.start_s, t.end_s);
    }
    auto mc = merged(std::move(comp));
    auto mm = merged(std::move(com));
    compute = std::max(compute, length(mc));
    comm = std::max(comm, length(mm));
    exposed = std::max(exposed, length_minus(mm, mc));
    s.bytes_sent_per_rank = std::max(s.bytes_sent_per_rank, sent);
  }
  s.step_time_s = step_end / steps;
  s.compute_time_s = compute / steps;
  s.comm_time_s = comm / steps;
  s.exposed_comm_s = exposed / steps;
  s.time_per_sample_s = s.step_time_s / static_cast<double>(plan.samples_per_step);

  for (const auto& op : plan.ops) {
    if (!op_kind_is_collective(op.kind)) continue;
    CollectiveStat c;
    c.op = op.id;
    c.bucket = op.bucket;
    c.bytes = op.bytes;
    c.tensors = op.slices.size();
    c.start_s = std::numeric_limits<double>::infinity();
    for (int r = 0; r < tl.world_size; ++r) {
      c.start_s = std::min(c.start_s, tl.at(r, op.id).start_s);
      c.end_s = std::max(c.end_s, tl.at(r, op.id).end_s);
    }
    double dur = c.end_s - c.start_s;
    if (dur > 0) {
      c.algbw_GBps = static_cast<double>(op.bytes) / dur / 1e9;
      c.busbw_GBps = c.algbw_GBps * bus_factor(op.kind, plan.world_size);
    }
    s.collectives.push_back(c);
  }
  return s;
}

}  // namespace redsim
