#include "tune/step_model.h"

#include <algorithm>
#include <bit>
#include <limits>

namespace redsim::tune {

std::uint32_t collective_class(const PlanOp& op) {
  const auto alg = op.kind == OpKind::allreduce ? static_cast<std::uint32_t>(op.algorithm) : 0u;
  return (static_cast<std::uint32_t>(op.kind) << 16) | (alg << 8) | static_cast<std::uint32_t>(op.channels & 0xff);
}

CompactPlan compact_plan(const Plan& plan, double objective_samples) {
  CompactPlan c;
  c.streams = static_cast<std::uint32_t>(plan.streams.size());
  c.ops.reserve(plan.ops.size());
  double compute = 0;
  for (const auto& op : plan.ops) {
    CompactPlan::Op o;
    o.stream = op.stream;
    o.dep_begin = static_cast<std::uint32_t>(c.deps.size());
    o.dep_count = static_cast<std::uint32_t>(op.deps.size());
    c.deps.insert(c.deps.end(), op.deps.begin(), op.deps.end());
    if (op_kind_is_collective(op.kind)) {
      o.cls = collective_class(op);
      o.value = static_cast<double>(op.bytes);
      c.classes.push_back(o.cls);
    } else {
      o.value = op.duration_s;
      if (plan.stream_is_compute(op.stream)) compute += op.duration_s;
    }
    c.ops.push_back(o);
  }
  std::sort(c.classes.begin(), c.classes.end());
  c.classes.erase(std::unique(c.classes.begin(), c.classes.end()), c.classes.end());
  const double steps = std::max(1, plan.steps);
  c.objective_per_end = objective_samples / (steps * static_cast<double>(std::max<std::int64_t>(1, plan.samples_per_step)));
  c.compute_floor = compute * c.objective_per_end;
  return c;
}

namespace {

struct Hasher {
  std::uint64_t a = 14695981039346656037ull;  // FNV-1a
  std::uint64_t b = 0x9e3779b97f4a7c15ull;    // a second, independent mix
  void add(std::uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      a ^= (v >> (8 * i)) & 0xff;
      a *= 1099511628211ull;
    }
    b ^= v + 0x9e3779b97f4a7c15ull + (b << 6) + (b >> 2);
    b = (b ^ (b >> 31)) * 0xbf58476d1ce4e5b9ull;
  }
  void add_double(double d) { add(std::bit_cast<std::uint64_t>(d)); }
};

}  // namespace

TimingKey timing_key(const Plan& plan) {
  Hasher h;
  h.add(static_cast<std::uint64_t>(plan.world_size));
  h.add(static_cast<std::uint64_t>(plan.steps));
  h.add(static_cast<std::uint64_t>(plan.samples_per_step));
  h.add(plan.streams.size());
  for (std::uint32_t s = 0; s < plan.streams.size(); ++s) h.add(plan.stream_is_compute(s) ? 1 : 0);
  h.add(plan.ops.size());
  for (const auto& op : plan.ops) {
    h.add(static_cast<std::uint64_t>(op.kind));
    h.add(op.stream);
    h.add(op.deps.size());
    for (auto d : op.deps) h.add(d);
    if (op_kind_is_collective(op.kind)) {
      h.add(collective_class(op));
      h.add(static_cast<std::uint64_t>(op.bytes));
      h.add(static_cast<std::uint64_t>(op.root + 1));
      h.add(op.shard_bytes.size());
      for (auto s : op.shard_bytes) h.add(static_cast<std::uint64_t>(s));
    } else {
      h.add_double(op.duration_s);
    }
  }
  return {h.a, h.b};
}

std::vector<CollectiveSample> collective_samples(const Plan& plan, const Timeline& tl) {
  std::vector<CollectiveSample> out;
  for (const auto& op : plan.ops) {
    if (!op_kind_is_collective(op.kind)) continue;
    double start = std::numeric_limits<double>::infinity(), end = 0;
    for (int r = 0; r < tl.world_size; ++r) {
      start = std::min(start, tl.at(r, op.id).start_s);
      end = std::max(end, tl.at(r, op.id).end_s);
    }
    out.push_back({collective_class(op), op.bytes, std::max(0.0, end - start)});
  }
  return out;
}

void CollectiveCostModel::add(const CollectiveSample& s) { curves_[s.cls].push_back({s.bytes, s.duration_s, 1}); }

void CollectiveCostModel::finish() {
  for (auto& [cls, pts] : curves_) {
    std::stable_sort(pts.begin(), pts.end(), [](const Point& x, const Point& y) { return x.bytes < y.bytes; });
    std::vector<Point> merged;
    for (const auto& p : pts) {
      if (!merged.empty() && merged.back().bytes == p.bytes) {
        merged.back().sum_s += p.sum_s;
        merged.back().n += p.n;
      } else {
        merged.push_back(p);
      }
    }
    pts = std::move(merged);
  }
}

double CollectiveCostModel::predict(std::uint32_t cls, std::int64_t bytes) const {
  auto it = curves_.find(cls);
  if (it == curves_.end() || it->second.empty()) return 0;
  const auto& p = it->second;
  auto d = [&](std::size_t i) { return p[i].sum_s / p[i].n; };
  auto x = [&](std::size_t i) { return static_cast<double>(p[i].bytes); };
  const double b = static_cast<double>(bytes);
  if (p.size() == 1) return d(0) * b / x(0);  // proportional: no latency term known
  auto slope = [&](std::size_t i, std::size_t j) { return std::max(0.0, (d(j) - d(i)) / (x(j) - x(i))); };
  if (b <= x(0)) {
    // Below the smallest sample: the slope to a sample at least twice as large (robust to close sizes).
    std::size_t j = 1;
    while (j + 1 < p.size() && x(j) < 2 * x(0)) ++j;
    return std::max(0.0, d(0) - slope(0, j) * (x(0) - b));
  }
  const std::size_t last = p.size() - 1;
  if (b >= x(last)) {
    std::size_t i = last - 1;
    while (i > 0 && x(i) > 0.5 * x(last)) --i;
    return d(last) + slope(i, last) * (b - x(last));
  }
  auto hi = std::lower_bound(p.begin(), p.end(), bytes, [](const Point& q, std::int64_t v) { return q.bytes < v; });
  const auto j = static_cast<std::size_t>(hi - p.begin());
  if (p[j].bytes == bytes) return d(j);
  const std::size_t i = j - 1;
  return d(i) + (d(j) - d(i)) * (b - x(i)) / (x(j) - x(i));
}

std::uint32_t ClassMap::operator()(std::uint32_t cls) const {
  if (channels_from == channels_to && algorithm_from == algorithm_to) return cls;
  const auto kind = cls >> 16;
  auto alg = (cls >> 8) & 0xffu;
  auto ch = cls & 0xffu;
  if (static_cast<int>(ch) == channels_from) ch = static_cast<std::uint32_t>(channels_to) & 0xffu;
  if (kind == static_cast<std::uint32_t>(OpKind::allreduce) && alg == static_cast<std::uint32_t>(algorithm_from))
    alg = static_cast<std::uint32_t>(algorithm_to);
  return (kind << 16) | (alg << 8) | ch;
}

double predict_end(const CompactPlan& plan, const CollectiveCostModel& model, const ClassMap& map) {
  std::vector<double> end(plan.ops.size(), 0.0);
  std::vector<double> stream_free(plan.streams, 0.0);
  double plan_end = 0;
  for (std::size_t i = 0; i < plan.ops.size(); ++i) {
    const auto& op = plan.ops[i];
    double start = stream_free[op.stream];
    for (std::uint32_t k = 0; k < op.dep_count; ++k) start = std::max(start, end[plan.deps[op.dep_begin + k]]);
    const double dur = op.cls == kComputeClass ? op.value : model.predict(map(op.cls), static_cast<std::int64_t>(op.value));
    end[i] = start + dur;
    stream_free[op.stream] = end[i];
    plan_end = std::max(plan_end, end[i]);
  }
  return plan_end;
}

}  // namespace redsim::tune
