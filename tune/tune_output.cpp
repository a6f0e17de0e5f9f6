#include "tune/tune_output.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <set>

#include "core/knobs_json.h"
#include "core/plan_json.h"
#include "core/units.h"

namespace redsim::tune {

using nlohmann::json;

std::string format_ms(double s) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f ms", s * 1e3);
  return buf;
}


namespace {

std::string pct(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.2f%%", x * 100);
  return buf;
}

json evaluation_json(const TuneResult& r, std::size_t p) {
  const auto& e = r.eval(p);
  return {{"time_per_optimizer_step_s", e.objective_s},
          {"step_time_s", e.step_time_s},
          {"steps_in_plan", e.steps_in_plan},
          {"compute_time_s", e.compute_time_s},
          {"comm_time_s", e.comm_time_s},
          {"exposed_comm_s", e.exposed_comm_s},
          {"time_per_sample_s", e.time_per_sample_s},
          {"bytes_sent_per_rank", e.bytes_sent_per_rank}};
}

json setting_json(const TuneResult& r, std::size_t p) {
  const auto& c = r.candidate(p);
  json j{{"strategy", c.family}, {"setting", describe_knobs(c)}, {"knobs", knobs_to_json(c.knobs)}};
  if (r.evaluated(p)) {
    j["predicted"] = evaluation_json(r, p);
    j["vs_best"] = r.eval(p).objective_s / r.eval(r.best).objective_s - 1;
  }
  j["memory_per_rank"] = memory_to_json(r.points[p].memory);
  return j;
}

}  // namespace

std::vector<ExclusionGroup> exclusion_groups(const TuneResult& r) {
  std::map<std::pair<std::size_t, int>, ExclusionGroup> groups;  // (family order, stage)
  const auto fams = searchable_families();
  auto order = [&](const std::string& f) {
    return static_cast<std::size_t>(std::find(fams.begin(), fams.end(), f) - fams.begin());
  };
  for (std::size_t p = 0; p < r.points.size(); ++p) {
    const auto& c = r.candidate(p);
    const int stage = c.family == "zero" ? c.knobs.zero_stage : 0;
    auto& g = groups[{order(c.family), stage}];
    g.family = c.family;
    g.zero_stage = stage;
    ++g.total;
    if (r.points[p].fits) continue;
    const auto& m = r.points[p].memory;
    if (g.excluded == 0 || m.total_bytes() < g.least.total_bytes()) g.least = m;
    if (g.excluded == 0 || m.total_bytes() > g.most.total_bytes()) g.most = m;
    ++g.excluded;
  }
  std::vector<ExclusionGroup> out;
  for (auto& [k, g] : groups) {
    if (g.excluded == 0) continue;
    const std::string name = g.family + (g.family == "zero" ? " stage " + std::to_string(g.zero_stage) : "");
    const std::string limit = format_GiB(r.memory_limit_bytes);
    if (g.least.total_bytes() == g.most.total_bytes())
      g.reason = name + ": " + (g.excluded == g.total ? "all " : "") + std::to_string(g.excluded) + " of " +
                 std::to_string(g.total) + " settings need " + format_GiB(g.least.total_bytes()) + " per rank > " + limit +
                 " (" + memory_words(g.least) + ")";
    else
      g.reason = name + ": " + std::to_string(g.excluded) + " of " + std::to_string(g.total) + " settings need " +
                 format_GiB(g.least.total_bytes()) + " to " + format_GiB(g.most.total_bytes()) + " per rank > " + limit +
                 " (least: " + memory_words(g.least) + "; the comm buffers grow with the reduce and allgather buckets)";
    out.push_back(g);
  }
  return out;
}

std::vector<std::size_t> runners_up(const TuneResult& r, std::size_t n) {
  std::vector<std::size_t> out;
  std::set<TimingKey> keys{r.points[r.best].key};
  for (auto p : r.ranking) {
    if (out.size() >= n) break;
    if (keys.insert(r.points[p].key).second) out.push_back(p);
  }
  return out;
}

std::vector<std::pair<std::string, std::optional<std::size_t>>> best_per_family(const TuneResult& r) {
  std::vector<std::pair<std::string, std::optional<std::size_t>>> out;
  for (const auto& f : searchable_families()) {
    bool present = false;
    for (const auto& c : r.grid.points)
      if (c.family == f) present = true;
    if (!present) continue;
    std::optional<std::size_t> best;
    for (auto p : r.ranking)
      if (r.candidate(p).family == f) {
        best = p;
        break;
      }
    out.emplace_back(f, best);
  }
  return out;
}

json tuned_json(const TuneResult& r, const TuneInputs& in) {
  const auto& best = r.candidate(r.best);
  json j;
  j["format"] = "redsim-tuned";
  j["version"] = 1;
  j["knobs"] = knobs_to_json(best.knobs);
  j["strategy"] = best.family;
  j["setting"] = describe_knobs(best);
  j["predicted"] = evaluation_json(r, r.best);
  j["memory_per_rank"] = memory_to_json(r.points[r.best].memory);
  j["objective"] = "time_per_optimizer_step_s: one optimizer step of " + std::to_string(in.constraints.microbatches) +
                   " micro-batch(es) of " + std::to_string(in.trace->batch_size_per_rank) + " samples on each of " +
                   std::to_string(in.cluster->world_size()) + " ranks, i.e. time per sample x " +
                   std::to_string(static_cast<long long>(r.objective_samples)) + " samples";
  j["inputs"] = {{"trace", {{"file", in.trace_file}, {"model", in.trace->model}, {"params", in.trace->param_count()}}},
                 {"cluster",
                  {{"file", in.cluster_file}, {"name", in.cluster->name}, {"nodes", in.cluster->nodes},
                   {"devices_per_node", in.cluster->devices_per_node}, {"world_size", in.cluster->world_size()}}},
                 {"engine", {{"name", "simgrid"}, {"fidelity", std::string(fidelity_name(r.fidelity))}}}};
  j["constraints"] = {{"memory_limit_bytes_per_device", r.memory_limit_bytes},
                      {"microbatches", in.constraints.microbatches},
                      {"max_localsgd_period", in.constraints.max_localsgd_period},
                      {"allow_compression", in.constraints.allow_compression},
                      {"activation_checkpointing", in.constraints.activation_checkpointing
                                                       ? json(activation_checkpointing_name(*in.constraints.activation_checkpointing))
                                                       : json("auto")},
                      {"optimizer_impl", optimizer_impl_name(in.constraints.optimizer_impl)},
                      {"strategies", in.constraints.strategies.empty() ? json(tune_families()) : json(in.constraints.strategies)}};
  json ru = json::array();
  for (auto p : runners_up(r, 5)) ru.push_back(setting_json(r, p));
  j["runners_up"] = std::move(ru);
  json per = json::array();
  for (const auto& [f, p] : best_per_family(r)) {
    json e = p ? setting_json(r, *p) : json{{"strategy", f}};
    e["simulated"] = p.has_value();
    // What the step model rates best among the family's settings the search did not simulate.
    if (auto m = best_predicted(r, f); m && (!p || m->second < r.eval(*p).objective_s)) {
      e["model_best"] = {{"setting", describe_knobs(r.candidate(m->first))},
                         {"knobs", knobs_to_json(r.candidate(m->first).knobs)},
                         {"predicted_time_per_optimizer_step_s", m->second},
                         {"why_not_simulated", "the step model rated it no better than the best by the prune margin, or it lay outside its line's bracket"}};
    }
    if (!p && !e.contains("model_best")) e["why"] = "every setting excluded";
    per.push_back(e);
  }
  j["best_per_strategy"] = std::move(per);
  json ex = json::array();
  for (const auto& g : exclusion_groups(r))
    ex.push_back({{"strategy", g.family}, {"zero_stage", g.family == "zero" ? json(g.zero_stage) : json(nullptr)},
                  {"excluded", g.excluded}, {"of", g.total}, {"why", g.reason},
                  {"least_memory_per_rank", memory_to_json(g.least)}, {"most_memory_per_rank", memory_to_json(g.most)}});
  j["excluded"] = std::move(ex);
  json excluded_settings = json::array();
  for (std::size_t p = 0; p < r.points.size(); ++p)
    if (!r.points[p].fits)
      excluded_settings.push_back({{"strategy", r.candidate(p).family}, {"setting", describe_knobs(r.candidate(p))},
                                   {"memory_bytes", r.points[p].memory.total_bytes()}});
  j["excluded_settings"] = std::move(excluded_settings);
  j["notes"] = r.grid.notes;
  j["search"] = {{"method", search_method_name(r.method)},
                 {"grid_points", r.grid.points.size()},
                 {"grid_points_that_fit", r.feasible_points},
                 {"simulations", r.simulations},
                 {"reused_simulations", r.reused},  // from other targets' searches (TuneOptions::cache)
                 {"fraction_of_grid_simulated",
                  r.grid.points.empty() ? 0.0 : static_cast<double>(r.simulations) / static_cast<double>(r.grid.points.size())},
                 {"budget", r.budget},
                 {"budget_exhausted", r.budget_exhausted},
                 {"rounds", r.rounds}};
  return j;
}

namespace {

void print_search_header(std::ostream& out, const TuneResult& r, const TuneInputs& in, double wall_s, int threads) {
  const auto& trace = *in.trace;
  const auto& cluster = *in.cluster;
  char line[512];
  out << "redsim tune: " << trace.model << " on " << cluster.name << " (" << cluster.nodes << " x "
      << cluster.devices_per_node << " = " << cluster.world_size() << " ranks)\n";
  out << "objective: time per optimizer step = " << in.constraints.microbatches << " micro-batch(es) of "
      << trace.batch_size_per_rank << " samples per rank; memory limit "
      << (r.memory_limit_bytes > 0 ? format_GiB(r.memory_limit_bytes) + " per device" : std::string("none")) << "\n";
  std::snprintf(line, sizeof line, "search: %s, %d simulations for %zu grid points (%.1f%%; %zu fit in memory), %d rounds",
                std::string(search_method_name(r.method)).c_str(), r.simulations, r.grid.points.size(),
                r.grid.points.empty() ? 0.0 : 100.0 * r.simulations / static_cast<double>(r.grid.points.size()),
                r.feasible_points, r.rounds);
  out << line;
  if (r.reused > 0) out << ", " << r.reused << " more from other targets' simulations";
  if (wall_s >= 0) {
    std::snprintf(line, sizeof line, ", %.1f s on %d thread(s)", wall_s, threads);
    out << line;
  }
  if (r.budget_exhausted) out << " (simulation budget of " << r.budget << " reached)";
  out << "; " << fidelity_name(r.fidelity) << " fidelity\n\n";
}

void print_best(std::ostream& out, const TuneResult& r, int microbatches) {
  const auto& best = r.candidate(r.best);
  const auto& e = r.eval(r.best);
  const auto& mem = r.points[r.best].memory;
  char line[512];
  out << "best: " << best.family << ": " << describe_knobs(best) << "\n";
  out << "  time per optimizer step  " << format_ms(e.objective_s) << "\n";
  if (e.steps_in_plan > 1 || microbatches > 1)
    out << "  step time of the plan    " << format_ms(e.step_time_s)
        << (e.steps_in_plan > 1 ? "  (per step of a " + std::to_string(e.steps_in_plan) + "-step LocalSGD window)" : "")
        << "\n";
  out << "  compute (busy)           " << format_ms(e.compute_time_s) << "\n";
  out << "  comm (busy)              " << format_ms(e.comm_time_s) << "\n";
  out << "  exposed comm             " << format_ms(e.exposed_comm_s) << "\n";
  std::snprintf(line, sizeof line, "  time per sample          %.3f us\n", e.time_per_sample_s * 1e6);
  out << line;
  out << "  memory per rank          " << format_GiB(mem.total_bytes()) << "  (" << memory_words(mem) << ")\n\n";
}

// Ranks count distinct plans, so settings that simulate identically share a rank.
std::map<std::size_t, std::size_t> ranks_of(const TuneResult& r) {
  std::map<std::size_t, std::size_t> rank_of;
  std::size_t rank = 0;
  std::optional<double> prev;
  for (auto p : r.ranking) {
    if (!prev || r.eval(p).objective_s != *prev) ++rank;
    prev = r.eval(p).objective_s;
    rank_of[p] = rank;
  }
  return rank_of;
}

// One family's rows: its `top` best simulated settings, and the step model's best where it
// rates an unsimulated setting better.
void print_family_rows(std::ostream& out, const TuneResult& r, const std::string& f, const std::optional<std::size_t>& bp,
                       int top, std::map<std::size_t, std::size_t>& rank_of) {
  const double best_s = r.eval(r.best).objective_s;
  char line[512];
  const auto model = best_predicted(r, f);
  auto model_row = [&] {
    std::snprintf(line, sizeof line, "     ~  %-10s %16s %9s %14s %10s  %s  (step model; not simulated)\n", f.c_str(),
                  format_ms(model->second).c_str(), pct(model->second / best_s - 1).c_str(), "",
                  format_GiB(r.points[model->first].memory.total_bytes()).c_str(),
                  describe_knobs(r.candidate(model->first)).c_str());
    out << line;
  };
  if (!bp) {
    if (model) {
      model_row();
    } else {
      std::snprintf(line, sizeof line, "     -  %-10s %s\n", f.c_str(), "every setting excluded (memory, below)");
      out << line;
    }
    return;
  }
  int shown = 0;
  std::set<TimingKey> keys;
  for (auto p : r.ranking) {
    if (shown >= top) break;
    if (r.candidate(p).family != f || !keys.insert(r.points[p].key).second) continue;
    const auto& ep = r.eval(p);
    std::snprintf(line, sizeof line, "  %4zu  %-10s %16s %9s %14s %10s  %s\n", rank_of[p], f.c_str(),
                  format_ms(ep.objective_s).c_str(), pct(ep.objective_s / best_s - 1).c_str(),
                  format_ms(ep.exposed_comm_s).c_str(), format_GiB(r.points[p].memory.total_bytes()).c_str(),
                  describe_knobs(r.candidate(p)).c_str());
    out << line;
    ++shown;
  }
  if (model && model->second < r.eval(*bp).objective_s) model_row();
}

}  // namespace

void print_ranked_table(std::ostream& out, const TuneResult& r, const TuneInputs& in, int top, double wall_s, int threads) {
  print_search_header(out, r, in, wall_s, threads);
  print_best(out, r, in.constraints.microbatches);
  char line[512];
  out << "top settings per strategy (simulated):\n";
  std::snprintf(line, sizeof line, "  %4s  %-10s %16s %9s %14s %10s  %s\n", "rank", "strategy", "time/opt step", "vs best",
                "exposed comm", "memory", "setting");
  out << line;
  auto rank_of = ranks_of(r);
  auto fams = best_per_family(r);
  std::stable_sort(fams.begin(), fams.end(), [&](const auto& a, const auto& b) {
    if (!a.second || !b.second) return a.second.has_value() && !b.second.has_value();
    return rank_of[*a.second] < rank_of[*b.second];
  });
  for (const auto& [f, bp] : fams) print_family_rows(out, r, f, bp, top, rank_of);
  const auto groups = exclusion_groups(r);
  if (!groups.empty()) {
    out << "\nexcluded (memory per rank over " << format_GiB(r.memory_limit_bytes) << "):\n";
    for (const auto& g : groups) out << "  " << g.reason << "\n";
  }
  if (!r.grid.notes.empty()) {
    out << "\nnotes:\n";
    for (const auto& n : r.grid.notes) out << "  " << n << "\n";
  }
}

}  // namespace redsim::tune
