// redsim simulate: trace + cluster + knobs -> summary, result JSON, Chrome/Perfetto timeline.
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/knob_options.h"
#include "cli/summary_table.h"
#include "core/atomic_file.h"
#include "core/cluster_json.h"
#include "core/error.h"
#include "core/knobs_json.h"
#include "core/plan_json.h"
#include "core/timeline_json.h"
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
};

nlohmann::json inputs_json(const SimulateOptions& o, const ModelTrace& trace, const ClusterSpec& cluster,
                           std::string_view fidelity) {
  return {{"trace", {{"file", o.trace_file}, {"model", trace.model}, {"params", trace.param_count()}}},
          {"cluster",
           {{"file", o.cluster_file}, {"name", cluster.name}, {"nodes", cluster.nodes},
            {"devices_per_node", cluster.devices_per_node}, {"world_size", cluster.world_size()}}},
          {"engine", {{"name", "simgrid"}, {"fidelity", std::string(fidelity)}}}};
}

nlohmann::json strategy_json(const Knobs& knobs, const Plan& plan, const StepSummary& summary) {
  return {{"knobs", knobs_to_json(knobs)},
          {"steps_in_plan", plan.steps},
          {"memory_per_rank", memory_to_json(plan.memory)},
          {"summary", summary_to_json(plan, summary)}};
}

void run_all(const SimulateOptions& o, const ModelTrace& trace, const ClusterSpec& cluster, const Knobs& base) {
  if (!o.timeline_file.empty() || !o.plan_file.empty())
    throw InputError("", "", "--strategy all writes no --timeline or --plan; simulate one strategy for those");
  const Fidelity requested = parse_fidelity(o.fidelity);
  std::vector<Plan> plans;
  std::vector<StrategyRow> rows;
  nlohmann::json results = nlohmann::json::array();
  const auto names = strategy_names();
  plans.reserve(names.size());
  for (const auto& name : names) {
    Knobs k = base;
    k.strategy = name;
    plans.push_back(make_strategy(name)->plan(trace, cluster, k));
    check_plan_for_sim(plans.back(), cluster);
  }
  std::string fidelity_used;
  for (std::size_t i = 0; i < names.size(); ++i) {
    Knobs k = base;
    k.strategy = names[i];
    const Fidelity used = resolve_fidelity(plans[i], cluster, requested);
    auto summary = summarize(plans[i], simulate(plans[i], cluster, SimOptions{o.sim_log, used}));
    rows.push_back({names[i], &plans[i], summary});
    results.push_back(strategy_json(k, plans[i], summary));
    results.back()["fidelity"] = std::string(fidelity_name(used));
    // One fidelity for all strategies is reported as such; otherwise "mixed" (see each entry).
    const std::string name(fidelity_name(used));
    fidelity_used = fidelity_used.empty() || fidelity_used == name ? name : "mixed";
  }
  print_comparison(std::cout, trace, cluster, rows);
  if (!o.out_file.empty()) {
    auto result = inputs_json(o, trace, cluster, fidelity_used);
    result["format"] = "redsim-comparison";
    result["version"] = 1;
    result["strategies"] = std::move(results);
    write_file_atomically(o.out_file, result.dump(1) + "\n");
    std::cout << "\nresult:   " << o.out_file << "\n";
  }
}

void run_simulate(const SimulateOptions& o) {
  // Everything is read and checked before anything is written.
  auto trace = load_trace(o.trace_file);
  auto cluster = load_cluster(o.cluster_file);
  auto knobs = resolve_knobs(o.knobs);
  const Fidelity requested = parse_fidelity(o.fidelity);
  if (knobs.strategy == "all") return run_all(o, trace, cluster, knobs);
  auto plan = make_strategy(knobs.strategy)->plan(trace, cluster, knobs);
  check_plan_for_sim(plan, cluster);
  const Fidelity used = resolve_fidelity(plan, cluster, requested);
  auto timeline = simulate(plan, cluster, SimOptions{o.sim_log, used});
  auto summary = summarize(plan, timeline);

  print_summary(std::cout, trace, cluster, knobs, plan, summary);
  if (!o.out_file.empty()) {
    auto result = inputs_json(o, trace, cluster, fidelity_name(used));
    result["format"] = "redsim-result";
    result["version"] = 1;
    result.update(strategy_json(knobs, plan, summary));
    result["timeline"] = timeline_to_json(plan, timeline);
    write_file_atomically(o.out_file, result.dump(1) + "\n");
    std::cout << "\nresult:   " << o.out_file << "\n";
  }
  if (!o.timeline_file.empty()) {
    write_file_atomically(o.timeline_file, timeline_to_chrome_trace(plan, timeline).dump() + "\n");
    std::cout << "timeline: " << o.timeline_file << "  (open in https://ui.perfetto.dev)\n";
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
  cmd->add_option("--out", opts->out_file, "write the result JSON (summary, knobs, per-rank per-op timeline) here");
  cmd->add_option("--timeline", opts->timeline_file,
                  "write a Chrome/Perfetto trace here (a process per rank, a thread per stream; times in us)");
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
