#include "core/step_summary.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <unordered_map>
#include <utility>
#include <vector>

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

namespace {

// Busy time of one rank's streams, max-merged into the step's figures.
struct Busy {
  double step_end = 0, compute = 0, comm = 0, exposed = 0, stretched = 0;
  void add_rank(const Plan& plan, const std::function<const OpTiming&(std::uint32_t)>& record) {
    std::vector<Interval> comp, com;
    double stretch = 0;
    for (const auto& op : plan.ops) {
      const auto& t = record(op.id);
      step_end = std::max(step_end, t.end_s);
      (plan.stream_is_compute(op.stream) ? comp : com).emplace_back(t.start_s, t.end_s);
      if (!op_kind_is_collective(op.kind)) stretch += std::max(0.0, t.end_s - t.start_s - op.duration_s);
    }
    stretched = std::max(stretched, stretch);
    auto mc = merged(std::move(comp));
    auto mm = merged(std::move(com));
    compute = std::max(compute, length(mc));
    comm = std::max(comm, length(mm));
    exposed = std::max(exposed, length_minus(mm, mc));
  }
};

// One rank of each pattern of op times (ranks whose every op starts and ends alike have equal
// busy figures): PowerSGD at 16,384 ranks has ~100 patterns, so ~100 ranks' intervals are merged
// instead of 16,384. Only the ops whose times differ between ranks (`varying`) can tell ranks
// apart; patterns are told apart by a hash of those times and then compared exactly.
std::vector<int> ranks_with_distinct_times(const Timeline& tl, const std::vector<std::uint32_t>& varying) {
  std::unordered_map<std::uint64_t, std::vector<int>> by_hash;
  std::vector<int> out;
  auto same = [&](int a, int b) {
    for (auto id : varying) {
      const auto &x = tl.at(a, id), &y = tl.at(b, id);
      if (x.start_s != y.start_s || x.end_s != y.end_s) return false;
    }
    return true;
  };
  for (int r = 0; r < tl.world_size; ++r) {
    std::uint64_t h = 1469598103934665603ull;  // FNV-1a over the times' bits
    for (auto id : varying) {
      const auto& t = tl.at(r, id);
      for (double d : {t.start_s, t.end_s}) {
        std::uint64_t bits = 0;
        std::memcpy(&bits, &d, sizeof bits);
        h = (h ^ bits) * 1099511628211ull;
      }
    }
    auto& reps = by_hash[h];
    if (std::none_of(reps.begin(), reps.end(), [&](int q) { return same(q, r); })) {
      reps.push_back(r);
      out.push_back(r);
    }
  }
  return out;
}

// The most bytes any rank sends: each op's first stored record counted for every rank, plus
// each rank's difference from it where the op stores more (ops x ranks only for those).
std::int64_t max_bytes_sent_per_rank(const Plan& plan, const Timeline& tl) {
  std::int64_t base = 0;
  std::vector<std::int64_t> extra;
  for (const auto& op : plan.ops) {
    const auto& recs = tl.op_records(op.id);
    base += recs[0].bytes_sent;
    if (tl.op_is_folded(op.id) || tl.world_size <= 1) continue;
    extra.resize(static_cast<std::size_t>(tl.world_size), 0);
    if (tl.op_is_sparse(op.id)) {
      const auto& ranks = tl.op_exception_ranks(op.id);
      for (std::size_t i = 0; i < ranks.size(); ++i)
        extra[static_cast<std::size_t>(ranks[i])] += recs[i + 1].bytes_sent - recs[0].bytes_sent;
      continue;
    }
    for (int r = 0; r < tl.world_size; ++r) extra[static_cast<std::size_t>(r)] += tl.at(r, op.id).bytes_sent - recs[0].bytes_sent;
  }
  // A rank's difference may be negative (the base is whichever record came first).
  return base + (extra.empty() ? 0 : *std::max_element(extra.begin(), extra.end()));
}

}  // namespace

StepSummary summarize(const Plan& plan, const Timeline& tl) {
  StepSummary s;
  const double steps = std::max(1, plan.steps);
  // When every op's times are equal on all ranks (folded, or records that differ only in bytes),
  // one rank's intervals stand for all: a ZeRO step at 131,072 ranks is not ops x ranks.
  std::vector<std::uint32_t> varying;
  for (const auto& op : plan.ops)
    if (!tl.op_times_uniform(op.id)) varying.push_back(op.id);
  Busy busy;
  const std::vector<int> ranks =
      varying.empty() ? std::vector<int>(tl.world_size > 0 ? 1 : 0, 0) : ranks_with_distinct_times(tl, varying);
  for (int r : ranks) busy.add_rank(plan, [&](std::uint32_t id) -> const OpTiming& { return tl.at(r, id); });
  s.bytes_sent_per_rank = max_bytes_sent_per_rank(plan, tl);
  const double step_end = busy.step_end, compute = busy.compute, comm = busy.comm, exposed = busy.exposed;
  s.step_time_s = step_end / steps;
  s.compute_time_s = compute / steps;
  s.comm_time_s = comm / steps;
  s.exposed_comm_s = exposed / steps;
  // Below a nanosecond a step is rounding, not a stretch.
  if (tl.source == "simulated" && busy.stretched / steps > 1e-9) s.compute_stretched_s = busy.stretched / steps;
  s.time_per_sample_s = s.step_time_s / static_cast<double>(plan.samples_per_step);

  for (const auto& op : plan.ops) {
    if (!op_kind_is_collective(op.kind)) continue;
    CollectiveStat c;
    c.op = op.id;
    c.bucket = op.bucket;
    c.bytes = op.bytes;
    c.tensors = op.slices.size();
    c.start_s = std::numeric_limits<double>::infinity();
    for (const auto& t : tl.op_records(op.id)) {  // each stored record is some rank's
      c.start_s = std::min(c.start_s, t.start_s);
      c.end_s = std::max(c.end_s, t.end_s);
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
