#include "tune/tuner.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <mutex>
#include <set>

#include "core/error.h"
#include "core/knobs_json.h"
#include "core/step_summary.h"
#include "strategies/checkpointing.h"
#include "strategies/strategy.h"
#include "tune/parallel.h"
#include "tune/search.h"

namespace redsim::tune {

std::string_view search_method_name(SearchMethod m) { return m == SearchMethod::guided ? "guided" : "exhaustive"; }

bool better(const TuneResult& r, std::size_t a, std::size_t b) {
  const double oa = r.eval(a).objective_s, ob = r.eval(b).objective_s;
  if (oa != ob) return oa < ob;
  const auto ma = r.points[a].memory.total_bytes(), mb = r.points[b].memory.total_bytes();
  if (ma != mb) return ma < mb;
  return a < b;
}

std::optional<std::pair<std::size_t, double>> best_predicted(const TuneResult& r, const std::string& family) {
  std::optional<std::pair<std::size_t, double>> best;
  for (std::size_t p = 0; p < r.points.size(); ++p) {
    const auto& s = r.points[p];
    if (!s.fits || s.evaluation || !s.model_s || r.grid.points[p].family != family) continue;
    if (!best || *s.model_s < best->second) best = std::make_pair(p, *s.model_s);
  }
  return best;
}

}  // namespace redsim::tune

namespace redsim::tune::detail {
namespace {

// On a cluster with ideal collectives, points whose knobs differ only in channels and algorithm
// share a plan structure. With NCCL's model each collective's choice depends on its size, so
// every setting is planned on its own.
std::string structure_key(const Candidate& c, const ClusterSpec& cluster) {
  Knobs k = c.knobs;
  if (cluster.library == CollectiveLibrary::ideal) {
    k.channels = 1;
    k.algorithm = Algorithm::ring;
  }
  return c.family + "|" + knobs_to_json(k).dump();
}

// The channel count and algorithm of each collective of a plan, in op order.
std::vector<std::pair<int, Algorithm>> collective_variants(const Plan& plan) {
  std::vector<std::pair<int, Algorithm>> v;
  for (const auto& op : plan.ops)
    if (op_kind_is_collective(op.kind)) v.emplace_back(op.channels, op.algorithm);
  return v;
}

// Rewrites the collectives of a plan made for `from` into those of the same plan for `to`: a
// collective that took the channel count (algorithm) of the knobs takes the new one.
void apply_variant(Plan& plan, const std::vector<std::pair<int, Algorithm>>& original, const Knobs& from, const Knobs& to) {
  std::size_t j = 0;
  const Algorithm from_alg = from.algorithm.value_or(Algorithm::ring), to_alg = to.algorithm.value_or(Algorithm::ring);
  const int from_ch = std::max(1, from.channels), to_ch = std::max(1, to.channels);
  for (auto& op : plan.ops) {
    if (!op_kind_is_collective(op.kind)) continue;
    const auto [ch, alg] = original[j++];
    op.channels = ch == from_ch ? to_ch : ch;
    op.algorithm = alg == from_alg ? to_alg : alg;
    op.request = collective_request(to);
  }
}

bool same_memory(const RankMemory& a, const RankMemory& b) {
  return a.params_bytes == b.params_bytes && a.grads_bytes == b.grads_bytes && a.optimizer_bytes == b.optimizer_bytes &&
         a.comm_buffer_bytes == b.comm_buffer_bytes && a.activation_bytes == b.activation_bytes &&
         a.step_buffer_bytes == b.step_buffer_bytes &&
         a.activations_known == b.activations_known;
}

}  // namespace

void Search::prepare(bool keep_compact) {
  report("planning", 0);
  sim_ = opt_.sim;  // prepared again after checkpointing: the fidelity is chosen afresh
  const std::size_t n = r_.grid.points.size();
  r_.points.assign(n, PointState{});
  std::vector<char> needs_scalable(n, 0);
  // Plans are built once per structure (a Strategy::plan of a GPT-2-sized model costs
  // milliseconds) and rewritten for each channel count and algorithm. The rewrite is checked
  // against real plans: every setting of the first structure of each family here, and every
  // simulated setting later; if the check fails here, every point is planned on its own.
  for (bool derive : {true, false}) {
    groups_.clear();
    group_of_.assign(n, 0);
    std::map<std::string, std::size_t> index;
    std::set<std::string> verified_family;
    for (std::size_t p = 0; p < n; ++p) {
      const auto key = derive ? structure_key(r_.grid.points[p], cluster_) : std::to_string(p);
      auto [it, inserted] = index.try_emplace(key, groups_.size());
      if (inserted) {
        groups_.emplace_back();
        groups_.back().verify = derive && verified_family.insert(r_.grid.points[p].family).second;
      }
      groups_[it->second].points.push_back(p);
      group_of_[p] = it->second;
    }
    std::atomic<bool> mismatch{false};
    parallel_for(groups_.size(), threads_, [&](std::size_t gi) {
      auto& g = groups_[gi];
      const Knobs base = r_.grid.points[g.points.front()].knobs;
      g.channels = std::max(1, base.channels);
      g.algorithm = base.algorithm.value_or(Algorithm::ring);
      Plan plan = plan_of(g.points.front());
      const auto original = collective_variants(plan);
      if (keep_compact) g.compact = compact_plan(plan, r_.objective_samples);
      const double floor = keep_compact ? g.compact.compute_floor : compact_plan(plan, r_.objective_samples).compute_floor;
      for (auto p : g.points) {
        apply_variant(plan, original, base, r_.grid.points[p].knobs);
        auto& s = r_.points[p];
        s.memory = plan.memory;
        s.fits = r_.memory_limit_bytes <= 0 || plan.memory.total_bytes() <= r_.memory_limit_bytes;
        s.key = timing_key(plan);
        s.compute_floor_s = floor;
        if (opt_.sim.fidelity == Fidelity::auto_select)
          needs_scalable[p] = resolve_fidelity(plan, cluster_, Fidelity::auto_select) == Fidelity::scalable;
        if (g.verify && p != g.points.front()) {
          const Plan real = plan_of(p);
          if (!(timing_key(real) == s.key) || !same_memory(real.memory, s.memory)) mismatch = true;
        }
      }
    });
    if (!mismatch) break;
  }
  if (sim_.fidelity == Fidelity::auto_select) {
    bool scalable = false;
    for (std::size_t i = 0; i < n; ++i) scalable = scalable || (needs_scalable[i] && r_.points[i].fits);
    sim_.fidelity = scalable ? Fidelity::scalable : Fidelity::exact;
  }
  r_.fidelity = sim_.fidelity;
  r_.feasible_points = 0;
  std::map<TimingKey, std::size_t> first_with_key;
  rep_.assign(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    if (!r_.points[i].fits) continue;
    ++r_.feasible_points;
    rep_[i] = first_with_key.try_emplace(r_.points[i].key, i).first->second;
  }
  predicted_version_.assign(n, ~0ull);
}

ClassMap Search::class_map(std::size_t p) const {
  const auto& g = groups_[group_of_[p]];
  const auto& k = r_.grid.points[p].knobs;
  return {g.channels, std::max(1, k.channels), g.algorithm, k.algorithm.value_or(Algorithm::ring)};
}

std::vector<std::uint32_t> Search::classes_of(std::size_t p) const {
  const auto map = class_map(p);
  std::vector<std::uint32_t> out;
  for (auto c : groups_[group_of_[p]].compact.classes) out.push_back(map(c));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void Search::add_evaluation(std::size_t point, Evaluation e, std::vector<CollectiveSample> samples) {
  e.objective_s = e.time_per_sample_s * r_.objective_samples;
  eval_of_key_[r_.points[point].key] = r_.evaluations.size();
  r_.evaluations.push_back(e);
  samples_.push_back(std::move(samples));
}

// Every simulation another search of this run already made of a setting of this grid: free
// results, and free calibration for the step model. In canonical point order, so deterministic.
void Search::adopt_cached() {
  if (!opt_.cache) return;
  for (std::size_t p = 0; p < r_.points.size(); ++p) {
    if (!r_.points[p].fits || rep_[p] != p) continue;
    const CachedSimulation* c = opt_.cache->find(sim_.fidelity, r_.points[p].key);
    if (!c) continue;
    add_evaluation(p, c->evaluation, c->samples);
    ++r_.reused;
  }
  if (r_.reused == 0) return;
  for (auto& s : r_.points) {
    auto it = s.fits ? eval_of_key_.find(s.key) : eval_of_key_.end();
    if (it != eval_of_key_.end()) s.evaluation = it->second;
  }
  update_incumbent();
}

void Search::evaluate(const std::vector<std::size_t>& points, const std::string& phase) {
  std::vector<std::size_t> todo;
  std::set<TimingKey> seen;
  for (auto p : points)
    if (r_.points[p].fits && !eval_of_key_.count(r_.points[p].key) && seen.insert(r_.points[p].key).second) todo.push_back(p);
  if (todo.empty()) return;
  std::vector<Evaluation> evals(todo.size());
  std::vector<std::vector<CollectiveSample>> samples(todo.size());
  std::atomic<int> done{0};
  const int before = r_.simulations;
  // Samples feed the step model: this search's if guided, a later search's if shared.
  const bool want_samples = r_.method == SearchMethod::guided || opt_.cache;
  parallel_for(todo.size(), threads_, [&](std::size_t i) {
    const Plan plan = plan_of(todo[i]);
    if (!(timing_key(plan) == r_.points[todo[i]].key) || !same_memory(plan.memory, r_.points[todo[i]].memory))
      throw std::logic_error("tune: the plan of " + r_.grid.points[todo[i]].family + " (" +
                             describe_knobs(r_.grid.points[todo[i]]) + ") differs from the one derived for it");
    const Timeline tl = simulate(plan, cluster_, sim_);
    const StepSummary s = summarize(plan, tl);
    Evaluation& e = evals[i];
    e.step_time_s = s.step_time_s;
    e.compute_time_s = s.compute_time_s;
    e.comm_time_s = s.comm_time_s;
    e.exposed_comm_s = s.exposed_comm_s;
    e.time_per_sample_s = s.time_per_sample_s;
    e.bytes_sent_per_rank = s.bytes_sent_per_rank;
    e.steps_in_plan = plan.steps;
    if (want_samples) samples[i] = collective_samples(plan, tl);
    report(phase, before + done.fetch_add(1) + 1);
  });
  // Results are merged in the batch's (canonical) order, whatever order they finished in.
  for (std::size_t i = 0; i < todo.size(); ++i) {
    const auto& st = r_.points[todo[i]];
    if (opt_.cache) opt_.cache->put(sim_.fidelity, st.key, {evals[i], samples[i]});
    evals[i].estimate_s = st.predicted_s;  // this search's own estimate, not shared
    evals[i].corrected_estimate_s = st.model_s;
    add_evaluation(todo[i], evals[i], std::move(samples[i]));
  }
  r_.simulations += static_cast<int>(todo.size());
  for (auto& s : r_.points) {
    if (s.evaluation || !s.fits) continue;
    auto it = eval_of_key_.find(s.key);
    if (it != eval_of_key_.end()) s.evaluation = it->second;
  }
  update_incumbent();
}

void Search::run_exhaustive() {
  std::vector<std::size_t> all;
  for (std::size_t p = 0; p < r_.points.size(); ++p) {
    if (!r_.points[p].fits) continue;
    if (opt_.exhaustive_bound_s && r_.points[p].compute_floor_s > *opt_.exhaustive_bound_s) {
      ++r_.bounded_out;
      continue;
    }
    all.push_back(p);
  }
  std::set<TimingKey> keys;
  for (auto p : all) keys.insert(r_.points[p].key);
  r_.budget = static_cast<int>(keys.size());
  // In rounds, so that progress reports carry the best so far; the result is the same.
  constexpr std::size_t kChunk = 64;
  for (std::size_t begin = 0; begin < all.size(); begin += kChunk) {
    const std::vector<std::size_t> chunk(all.begin() + static_cast<std::ptrdiff_t>(begin),
                                         all.begin() + static_cast<std::ptrdiff_t>(std::min(all.size(), begin + kChunk)));
    evaluate(chunk, "simulating");
    ++r_.rounds;
    report("simulating", r_.simulations, true);
  }
}

void Search::finish() {
  r_.ranking.clear();
  for (std::size_t p = 0; p < r_.points.size(); ++p)
    if (r_.points[p].fits && r_.evaluated(p)) r_.ranking.push_back(p);
  std::sort(r_.ranking.begin(), r_.ranking.end(), [&](std::size_t a, std::size_t b) { return better(r_, a, b); });
  if (r_.ranking.empty()) throw std::logic_error("tune: nothing was simulated");
  r_.best = r_.ranking.front();
}


}  // namespace redsim::tune::detail

namespace redsim::tune {

using detail::Search;

namespace {

// In every setting that does not fit, checkpoints the fewest leading blocks that make it fit by
// the memory it needs besides activations (all when even that is not enough): the recompute is
// paid only where memory asks for it. The caller plans again and checks. False when nothing changed.
bool checkpoint_where_needed(const ModelTrace& trace, TuneResult& r) {
  if (r.memory_limit_bytes <= 0 || !can_checkpoint(trace)) return false;
  const int blocks = static_cast<int>(checkpoint_blocks(trace, ActivationCheckpointing::blocks).blocks.size());
  std::vector<std::int64_t> peak_bytes(static_cast<std::size_t>(blocks) + 1);  // by leading blocks checkpointed
  for (int n = 1; n <= blocks; ++n)
    peak_bytes[static_cast<std::size_t>(n)] = activation_peak_bytes(trace, checkpoint_blocks(trace, ActivationCheckpointing::blocks, n));
  std::size_t changed = 0;
  for (std::size_t p = 0; p < r.points.size(); ++p) {
    auto& k = r.grid.points[p].knobs;
    if (r.points[p].fits || k.activation_checkpointing != ActivationCheckpointing::none) continue;
    const auto& m = r.points[p].memory;
    auto with_bytes = [&](int n) {
      return m.model_state_bytes() + std::max(m.step_buffer_bytes, peak_bytes[static_cast<std::size_t>(n)]);
    };
    int n = 1;
    while (n < blocks && with_bytes(n) > r.memory_limit_bytes) ++n;
    k.activation_checkpointing = ActivationCheckpointing::blocks;
    k.checkpointed_blocks = n < blocks ? n : 0;
    ++changed;
  }
  if (changed > 0)
    r.grid.notes.push_back("activation checkpointing on the " + std::to_string(changed) +
                           " settings that do not fit in memory without it: the fewest of the trace's " +
                           std::to_string(blocks) + " repeated blocks, from the first, that make each fit");
  return changed > 0;
}

// A setting still over the limit with some blocks checkpointed (FSDP's recompute holds more units
// unsharded than the estimate counted) gets all of them. False when none did.
bool checkpoint_all_where_needed(TuneResult& r) {
  bool changed = false;
  for (std::size_t p = 0; p < r.points.size(); ++p)
    if (!r.points[p].fits && r.grid.points[p].knobs.checkpointed_blocks > 0) {
      r.grid.points[p].knobs.checkpointed_blocks = 0;
      changed = true;
    }
  return changed;
}

}  // namespace

TuneResult autotune(const ModelTrace& trace, const ClusterSpec& cluster, const TuneConstraints& constraints,
                const SearchAxes& axes, const TuneOptions& options) {
  TuneResult r;
  r.method = options.method;
  SearchAxes used = axes;  // FSDP units per block only where the trace names blocks
  if (!names_blocks(trace)) std::erase(used.fsdp_wrap_elems, kWrapBlocks);
  r.grid = build_grid(used, constraints, cluster);
  r.memory_limit_bytes = memory_limit_bytes(constraints, cluster);
  r.objective_samples = static_cast<double>(trace.batch_size_per_rank) * cluster.world_size() * constraints.microbatches;
  Search s(trace, cluster, options, r);
  for (auto& c : r.grid.points) {
    if (constraints.activation_checkpointing) c.knobs.activation_checkpointing = *constraints.activation_checkpointing;
    c.knobs.optimizer_impl = constraints.optimizer_impl;
  }
  s.prepare(options.method == SearchMethod::guided);
  if (!constraints.activation_checkpointing && checkpoint_where_needed(trace, r)) {
    s.prepare(options.method == SearchMethod::guided);
    if (checkpoint_all_where_needed(r)) s.prepare(options.method == SearchMethod::guided);
  }
  s.adopt_cached();
  if (r.feasible_points == 0) {
    std::size_t least = 0;
    for (std::size_t p = 1; p < r.points.size(); ++p)
      if (r.points[p].memory.total_bytes() < r.points[least].memory.total_bytes()) least = p;
    const auto& m = r.points[least].memory;
    throw InputError("", "", "no setting fits in " + format_GiB(r.memory_limit_bytes) + " per device: the smallest (" +
                                 r.grid.points[least].family + ", " + describe_knobs(r.grid.points[least]) + ") needs " +
                                 format_GiB(m.total_bytes()) + " (" + memory_words(m) + ")");
  }
  if (options.method == SearchMethod::exhaustive)
    s.run_exhaustive();
  else
    s.run_guided();
  s.finish();
  return r;
}

}  // namespace redsim::tune
