// The guided search (tune/tuner.h): calibration, the step model's predictions, and rounds of
// bracketing along the grid's lines, pruned by the model.
#include <algorithm>
#include <cmath>

#include "tune/search.h"

namespace redsim::tune::detail {

std::vector<std::size_t> Search::calibration_batch(const std::set<std::uint32_t>& known) const {
  std::set<std::uint32_t> scheduled = known;
  std::vector<std::size_t> batch;
  for (const auto& line : r_.grid.lines) {
    std::vector<std::size_t> pts;
    for (auto p : line)
      if (r_.points[p].fits) pts.push_back(p);
    if (pts.empty()) continue;
    auto missing = [&](std::size_t p) {
      for (auto c : classes_of(p))
        if (!scheduled.count(c)) return true;
      return false;
    };
    // The middle of the line first (a bucket size in the middle of the log grid), else the first
    // point that needs a class nobody has simulated yet.
    std::optional<std::size_t> pick;
    const std::size_t mid = pts[pts.size() / 2];
    if (missing(mid)) {
      pick = mid;
    } else {
      for (auto p : pts)
        if (missing(p)) {
          pick = p;
          break;
        }
    }
    if (!pick) continue;
    for (auto c : classes_of(*pick)) scheduled.insert(c);
    batch.push_back(*pick);
  }
  return batch;
}

void Search::predict_all() {
  CollectiveCostModel model;
  std::map<std::uint32_t, std::uint64_t> counts;
  for (const auto& ss : samples_)
    for (const auto& s : ss) {
      model.add(s);
      ++counts[s.cls];
    }
  model.finish();
  class_version_ = counts;
  std::vector<std::size_t> todo;
  std::vector<std::uint64_t> versions;
  for (std::size_t p = 0; p < r_.points.size(); ++p) {
    if (!r_.points[p].fits || rep_[p] != p) continue;
    std::uint64_t v = 0;
    for (auto c : classes_of(p)) {
      auto it = class_version_.find(c);
      v = v * 1000003ull + (it == class_version_.end() ? 0 : it->second);
    }
    if (v == predicted_version_[p] && r_.points[p].predicted_s) continue;
    todo.push_back(p);
    versions.push_back(v);
  }
  parallel_for(todo.size(), threads_, [&](std::size_t i) {
    const auto& c = groups_[group_of_[todo[i]]].compact;
    r_.points[todo[i]].predicted_s = predict_end(c, model, class_map(todo[i])) * c.objective_per_end;
  });
  for (std::size_t i = 0; i < todo.size(); ++i) predicted_version_[todo[i]] = versions[i];
  for (std::size_t p = 0; p < r_.points.size(); ++p)
    if (r_.points[p].fits && rep_[p] != p) r_.points[p].predicted_s = r_.points[rep_[p]].predicted_s;
}

void Search::calibrate() {
  // 1. Calibration: one simulation per collective class (a line's middle point).
  std::set<std::uint32_t> known;  // classes learnt, from adopted simulations too
  for (const auto& ss : samples_)
    for (const auto& s : ss) known.insert(s.cls);
  for (;;) {
    auto batch = calibration_batch(known);
    const auto room = static_cast<std::size_t>(std::max(0, r_.budget - r_.simulations));
    if (batch.size() > room) {
      batch.resize(room);
      r_.budget_exhausted = true;
    }
    if (batch.empty()) break;
    evaluate(batch, "calibrating");
    for (const auto& ss : samples_)
      for (const auto& s : ss) known.insert(s.cls);
    // A class the plans name but whose simulation issued none of it cannot be learnt: stop.
    bool progress = false;
    for (auto p : batch)
      for (auto c : classes_of(p))
        if (known.count(c)) progress = true;
    if (!progress) break;
    ++r_.rounds;
    report("calibrating", r_.simulations, true);
  }
}

// Proposes the line's model-best unsimulated setting on each side of its best simulated one (up
// to the nearest simulated neighbour), unless the compute floor or the corrected prediction
// says it cannot beat the incumbent `best_s` by the margin.
void Search::propose_on_line(const std::vector<std::size_t>& line, double best_s, double margin,
                             std::vector<Proposal>& out) {
  std::vector<std::size_t> pts;
  for (auto p : line)
    if (r_.points[p].fits) pts.push_back(p);
  if (pts.empty()) return;
  // Predictions corrected by the residual of the nearest simulated point on the line.
  std::vector<double> value(pts.size());
  std::vector<std::size_t> simulated;
  for (std::size_t i = 0; i < pts.size(); ++i)
    if (r_.evaluated(pts[i])) simulated.push_back(i);
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const double raw = r_.points[pts[i]].predicted_s.value_or(0.0);
    double v = raw;
    if (!simulated.empty()) {
      std::size_t nearest = simulated.front();
      for (auto s : simulated)
        if ((s > i ? s - i : i - s) < (nearest > i ? nearest - i : i - nearest)) nearest = s;
      const auto& np = r_.points[pts[nearest]];
      v += r_.eval(pts[nearest]).objective_s - np.predicted_s.value_or(0.0);
    }
    // The residual is the model's error at one bucket size; carried to a far one it can be
    // wrong by as much (GPT-2 XL, Horovod: +99 ms learnt at 1 MiB pushed 256 MiB, the optimum,
    // from 116 to 215 ms, and it was pruned). A setting is rated by the more optimistic of the
    // two, so it is pruned only when neither says it can win.
    value[i] = std::min(v, raw);
    r_.points[pts[i]].model_s = v;
  }
  auto consider = [&](std::size_t lo, std::size_t hi) {  // unsimulated positions in [lo, hi)
    std::optional<std::size_t> arg;
    for (std::size_t i = lo; i < hi; ++i)
      if (!r_.evaluated(pts[i]) && (!arg || value[i] < value[*arg])) arg = i;
    if (!arg) return;
    const auto p = pts[*arg];
    if (value[*arg] < best_s * (1 + margin) && r_.points[p].compute_floor_s < best_s) out.push_back({value[*arg], p});
  };
  if (simulated.empty()) {
    consider(0, pts.size());
    return;
  }
  std::size_t b = simulated.front();
  for (auto s : simulated)
    if (better(r_, pts[s], pts[b])) b = s;
  // Neighbours with the best's own plan (bucket caps below the first bucket, or above the
  // model's size, plan alike) are one point: a plateau. Bracketing stops at the nearest
  // simulated setting with another plan, not at the plateau's edge, else a line whose smallest
  // caps share a plan never looks beyond them (GPT-2 XL, Horovod: 1, 2 and 4 MiB alike, and
  // the optimum at 256 MiB never simulated, a 32% miss).
  std::size_t lo = b, hi = b;
  const auto same_plan = [&](std::size_t i) { return r_.evaluated(pts[i]) && r_.points[pts[i]].evaluation == r_.points[pts[b]].evaluation; };
  while (lo > 0 && same_plan(lo - 1)) --lo;
  while (hi + 1 < pts.size() && same_plan(hi + 1)) ++hi;
  std::size_t left = 0, right = pts.size();
  for (auto s : simulated) {
    if (s < lo) left = s + 1;
    if (s > hi && right == pts.size()) right = s;
  }
  consider(left, lo);
  consider(hi + 1, right);
}

// One round of bracketing along lines, guided and pruned by the model.
bool Search::search_round() {
  const double margin = std::max(0.0, opt_.prune_margin);
  predict_all();
  if (!incumbent_) return false;
  const double best = r_.eval(*incumbent_).objective_s;
  std::vector<Proposal> proposals;
  for (const auto& line : r_.grid.lines) propose_on_line(line, best, margin, proposals);
  if (proposals.empty()) return false;
  std::sort(proposals.begin(), proposals.end(), [](const Proposal& a, const Proposal& b) {
    return a.value != b.value ? a.value < b.value : a.point < b.point;
  });
  // Distinct plans only, at most a round's worth, within the budget.
  std::vector<std::size_t> batch;
  std::set<TimingKey> keys;
  const int room = r_.budget - r_.simulations;
  for (const auto& pr : proposals) {
    if (static_cast<int>(batch.size()) >= std::min(kRoundSize, room)) break;
    if (keys.insert(r_.points[pr.point].key).second) batch.push_back(pr.point);
  }
  if (batch.empty()) {
    r_.budget_exhausted = true;
    return false;
  }
  evaluate(batch, "searching");
  ++r_.rounds;
  report("searching", r_.simulations, true);
  return true;
}

void Search::run_guided() {
  r_.budget = opt_.max_simulations > 0
                  ? opt_.max_simulations
                  : std::max(24, static_cast<int>(std::ceil(0.15 * static_cast<double>(r_.feasible_points))));
  calibrate();
  while (search_round()) {
  }
}

}  // namespace redsim::tune::detail
