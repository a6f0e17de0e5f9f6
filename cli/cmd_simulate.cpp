// redsim simulate: trace + cluster + knobs -> summary, result JSON, Chrome/Perfetto timeline.
#include <algorithm>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/knob_options.h"
#include "collectives/cluster_subset.h"
#include "cli/timeline_flows.h"
#include "cli/summary_table.h"
#include "core/atomic_file.h"
#include "core/cluster_json.h"
#include "core/compute_reference.h"
#include "core/error.h"
#include "core/plan_json.h"
#include "core/result_json.h"
#include "core/rank_set.h"
#include "core/chrome_trace.h"
#include "core/timeline_json.h"
#include "core/trace_batch.h"
#include "core/trace_json.h"
#include "sim/sim_engine.h"
#include "strategies/strategy.h"

namespace redsim::cli {
namespace {

struct SimulateOptions {
  std::string trace_file;
  std::string cluster_file;
  KnobOptions knobs;
  std::string out_file;
  std::string timeline_file;
  std::string plan_file;
  bool sim_log = false;
  std::string fidelity = "auto";
  std::string compute_scale;
  std::int64_t batch_size = 0;  // 0: the trace's own
  std::string layout;
  std::string timeline_ranks;
};

// The Perfetto trace draws a process per rank: every rank up to this many, else a few that
// stand for the rest (a trace of 131,072 processes would not open).
constexpr int kPerfettoAllRanksUpTo = 256;

// --timeline-ranks, or the default: for --out every rank (folded, so cheap); for the Perfetto
// trace every rank of a small job, else the ends of the first node, the next node's first rank
// and the last rank.
std::vector<int> chosen_ranks(const SimulateOptions& o, const ClusterSpec& cluster, bool perfetto) {
  const int world = cluster.world_size();
  if (!o.timeline_ranks.empty()) return parse_rank_set(o.timeline_ranks, world, "--timeline-ranks");
  if (!perfetto || world <= kPerfettoAllRanksUpTo) return parse_rank_set("all", world, "--timeline-ranks");
  const int dpn = cluster.devices_per_node;
  std::vector<int> r{0, dpn - 1, std::min(dpn, world - 1), world - 1};
  std::sort(r.begin(), r.end());
  r.erase(std::unique(r.begin(), r.end()), r.end());
  return r;
}

ResultInputs result_inputs(const SimulateOptions& o, const ModelTrace& trace, const ClusterSpec& cluster,
                           std::string_view fidelity) {
  return {o.trace_file, &trace, o.cluster_file, &cluster,
          {{"name", "simgrid"}, {"fidelity", std::string(fidelity)}}};
}

void run_all(const SimulateOptions& o, const ModelTrace& trace, const ClusterSpec& cluster, const Knobs& base) {
  if (!o.timeline_file.empty() || !o.plan_file.empty() || !o.timeline_ranks.empty())
    throw InputError("", "", "--strategy all writes no --timeline or --plan (nor --timeline-ranks); simulate one strategy for those");
  const Fidelity requested = parse_fidelity(o.fidelity);
  const auto names = strategy_names();
  std::vector<Knobs> knobs(names.size(), base);
  std::vector<Plan> plans;
  plans.reserve(names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    knobs[i].strategy = names[i];
    plans.push_back(make_strategy(names[i])->plan(trace, cluster, knobs[i]));
    check_plan_for_sim(plans.back(), cluster);
  }
  std::vector<StrategyRow> rows;
  rows.reserve(names.size());
  std::vector<StrategyRun> runs;
  std::string fidelity_used;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const Fidelity used = resolve_fidelity(plans[i], cluster, requested);
    const Timeline timeline = simulate(plans[i], cluster, SimOptions{o.sim_log, used});
    rows.push_back({names[i], &plans[i], summarize(plans[i], timeline)});
    // One fidelity for all strategies is reported as such; otherwise "mixed" (see each entry).
    const std::string name(fidelity_name(used));
    runs.push_back({&knobs[i], &plans[i], &rows.back().summary, name});
    fidelity_used = fidelity_used.empty() || fidelity_used == name ? name : "mixed";
  }
  print_comparison(std::cout, trace, cluster, rows);
  if (!o.out_file.empty()) {
    const auto result = comparison_result_to_json(result_inputs(o, trace, cluster, fidelity_used), runs);
    write_file_atomically(o.out_file, result.dump(1) + "\n");
    std::cout << "\nresult:   " << o.out_file << "\n";
  }
}

void run_simulate(const SimulateOptions& o) {
  // Everything is read and checked before anything is written.
  const std::vector<NamedPath> outputs{{"--out", o.out_file}, {"--timeline", o.timeline_file}, {"--plan", o.plan_file}};
  check_outputs_distinct({{"--trace", o.trace_file}, {"--cluster", o.cluster_file}, {"--config", o.knobs.config_file}},
                         outputs);
  check_output_targets(outputs);
  std::string batch_note;
  auto trace = load_trace_at(o.trace_file, o.batch_size, &batch_note);
  auto cluster = cluster_for_trace(trace, o.trace_file, cluster_part(load_cluster(o.cluster_file), o.layout), o.cluster_file,
                                   parse_compute_scale(o.compute_scale));
  auto knobs = resolve_knobs(o.knobs);
  check_knobs_for_trace(o.knobs, knobs, trace);
  const Fidelity requested = parse_fidelity(o.fidelity);
  const auto say_batch_note = [&] {
    if (!batch_note.empty()) std::cout << "note: " << batch_note << "\n";
  };
  if (knobs.strategy == "all") return say_batch_note(), run_all(o, trace, cluster, knobs);
  const auto out_ranks = chosen_ranks(o, cluster, false);  // bad ranks: exit 2 before simulating
  auto plan = make_strategy(knobs.strategy)->plan(trace, cluster, knobs);
  check_plan_for_sim(plan, cluster);
  say_batch_note();
  const Fidelity used = resolve_fidelity(plan, cluster, requested);
  auto timeline = simulate(plan, cluster, SimOptions{o.sim_log, used});
  auto summary = summarize(plan, timeline);

  print_summary(std::cout, trace, cluster, knobs, plan, summary);
  if (!o.out_file.empty()) {
    const RedsimResult result{
        result_inputs(o, trace, cluster, fidelity_name(used)), &knobs, &plan, &summary, &timeline, {}, {}};
    write_file_atomically(o.out_file, [&](const OutputSink& out) { write_folded_result(result, out_ranks, out); });
    std::cout << "\nresult:   " << o.out_file << "\n";
  }
  if (!o.timeline_file.empty()) {
    const auto ranks = chosen_ranks(o, cluster, true);
    write_file_atomically(o.timeline_file, [&](const OutputSink& out) {
      write_chrome_trace(
          plan, timeline, ranks, [&](const EventSink& emit) { flow_and_counter_events(plan, cluster, timeline, ranks, emit); }, out);
    });
    std::cout << "timeline: " << o.timeline_file << "  (open in https://ui.perfetto.dev)";
    if (static_cast<int>(ranks.size()) < cluster.world_size())
      std::cout << "  ranks " << rank_ranges_text(rank_ranges(ranks)) << " of " << cluster.world_size()
                << " (--timeline-ranks chooses)";
    std::cout << "\n";
  }
  if (!o.plan_file.empty()) {
    write_file_atomically(o.plan_file, plan_to_json(plan).dump(1) + "\n");
    std::cout << "plan:     " << o.plan_file << "\n";
  }
}

}  // namespace

void add_simulate_command(CLI::App& app) {
  auto opts = std::make_shared<SimulateOptions>();
  auto* cmd = app.add_subcommand("simulate", "simulate one training step of a strategy on a cluster (SimGrid)");
  cmd->add_option("--trace", opts->trace_file, "model trace JSON (traces/README.md)")->required();
  cmd->add_option("--cluster", opts->cluster_file, "cluster JSON (configs/README.md)")->required();
  add_knob_options(cmd, opts->knobs);
  add_compute_scale_option(cmd, opts->compute_scale);
  add_batch_size_option(cmd, opts->batch_size);
  add_layout_option(cmd, opts->layout);
  cmd->add_option("--out", opts->out_file,
                  "write the result JSON here (summary, knobs, and the timeline folded: each op's distinct records "
                  "with the ranks they stand for)");
  cmd->add_option("--timeline-ranks", opts->timeline_ranks,
                  "ranks in --out's timeline and --timeline's trace: all, or e.g. 0,1,8-15 (default: all in --out; "
                  "in --timeline all up to 256 ranks, else the first node's ends, the next node's first and the last)");
  cmd->add_option("--timeline", opts->timeline_file,
                  "write a Chrome/Perfetto trace here (a process per rank of --timeline-ranks, a thread per stream; times in us)");
  cmd->add_option("--plan", opts->plan_file, "write the Plan (the schedule every rank runs) as JSON here");
  cmd->add_flag("--sim-log", opts->sim_log, "let SimGrid print its own log (silent by default)");
  cmd->add_option("--fidelity", opts->fidelity,
                  "exact (every point-to-point transfer), scalable (aggregated flows over one period of a "
                  "symmetric cluster, for thousands of ranks) or auto (exact up to 512 ranks and 1e6 "
                  "transfers, else scalable); the result JSON's engine.fidelity says which ran")
      ->check(CLI::IsMember({"exact", "scalable", "auto"}))
      ->capture_default_str();
  cmd->callback([opts] { run_simulate(*opts); });
}

}  // namespace redsim::cli
