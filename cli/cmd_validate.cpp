// redsim validate: simulate a Plan and compare it with a measurement of the same Plan — either a
// measured result file (--measured: `redsim run --out`, or step times only, e.g. from PyTorch DDP)
// or a run that validate starts itself (`redsim run` as a child process: --ranks N locally, or
// --testbed nodes=K,ranks-per-node=R,rate=R inside realexec/testbed's network namespaces, where
// each rank joins the job from torchrun's environment). Reports predicted vs measured step time,
// per-op start/end error and exposed-communication error, and a verdict against --max-error
// (exit 0 within, 1 exceeded, 2 bad input). --matrix FILE runs a list of cases and writes a
// table and an SVG scatter plot.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/child_command.h"
#include "cli/commands.h"
#include "cli/text_format.h"
#include "cli/knob_options.h"
#include "core/atomic_file.h"
#include "validate/ranking_check.h"
#include "core/cluster_json.h"
#include "core/error.h"
#include "core/json_in.h"
#include "core/knobs_json.h"
#include "core/result_json.h"
#include "validate/run_comparison.h"
#include "core/step_summary.h"
#include "core/trace_json.h"
#include "sim/sim_engine.h"
#include "strategies/strategy.h"

namespace redsim::cli {
namespace {

using nlohmann::json;

struct ValidateOptions {
  std::string trace_file;
  std::string cluster_file;
  KnobOptions knobs;
  std::string measured_file;
  std::string backend = "gloo";
  int ranks = 0;
  std::string testbed;
  int steps = 10;
  int warmup = 2;
  double max_error = 0.10;
  std::string out_file;
  std::string matrix_file;
  std::string table_file;
  std::string svg_file;
  std::string fidelity = "auto";
  double timeout_s = 120;
};

struct Testbed {
  int nodes = 0, ranks_per_node = 0;
  std::string rate;
};

Testbed parse_testbed(const std::string& s) {
  Testbed t;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) throw InputError("", "", "--testbed: expected key=value items, got \"" + item + "\"");
    const std::string k = item.substr(0, eq), v = item.substr(eq + 1);
    try {
      if (k == "nodes")
        t.nodes = std::stoi(v);
      else if (k == "ranks-per-node")
        t.ranks_per_node = std::stoi(v);
      else if (k == "rate")
        t.rate = v;
      else
        throw InputError("", "", "--testbed: unknown key \"" + k + "\" (expected nodes, ranks-per-node, rate)");
    } catch (const std::logic_error&) {
      throw InputError("", "", "--testbed: " + k + ": expected an integer, got \"" + v + "\"");
    }
  }
  if (t.nodes < 1 || t.ranks_per_node < 1 || t.rate.empty())
    throw InputError("", "", "--testbed: expected nodes=K,ranks-per-node=R,rate=RATE (e.g. rate=400mbit), got \"" +
                                 s + "\"");
  return t;
}

// Knob flags as given, passed through to `redsim run`.
std::vector<std::string> knob_args(const KnobOptions& k) {
  std::vector<std::string> a;
  auto add = [&](CLI::Option* opt, const std::string& flag, const std::string& value) {
    if (opt != nullptr && opt->count() > 0) {
      a.push_back(flag);
      if (!value.empty()) a.push_back(value);
    }
  };
  if (!k.config_file.empty()) a.insert(a.end(), {"--config", k.config_file});
  add(k.strategy_opt, "--strategy", k.strategy);
  add(k.bucket_mb_opt, "--bucket-mb", fmt("%.17g", k.bucket_mb));
  add(k.first_bucket_mb_opt, "--first-bucket-mb", fmt("%.17g", k.first_bucket_mb));
  add(k.bucket_order_opt, "--bucket-order", k.bucket_order);
  add(k.channels_opt, "--channels", std::to_string(k.channels));
  add(k.algorithm_opt, "--algorithm", k.algorithm);
  add(k.wire_dtype_opt, "--wire-dtype", k.wire_dtype);
  add(k.reduce_op_opt, "--reduce-op", k.reduce_op);
  add(k.no_broadcast_buffers_opt, "--no-broadcast-buffers", "");
  add(k.zero_stage_opt, "--zero-stage", std::to_string(k.zero_stage));
  add(k.allgather_bucket_mb_opt, "--allgather-bucket-mb", fmt("%.17g", k.allgather_bucket_mb));
  add(k.no_overlap_comm_opt, "--no-overlap-comm", "");
  add(k.microbatches_opt, "--microbatches", std::to_string(k.microbatches));
  add(k.sync_every_microbatch_opt, "--sync-every-microbatch", "");
  add(k.localsgd_period_opt, "--localsgd-period", std::to_string(k.localsgd_period));
  return a;
}

struct CaseResult {
  std::string label;
  RunComparison cmp;
  json out;
};

// One validation: simulate the plan, obtain the measurement, compare.
CaseResult validate_once(const ValidateOptions& o, const std::vector<std::string>& knob_argv) {
  const auto trace = load_trace(o.trace_file);
  const auto cluster = load_cluster(o.cluster_file);
  const auto knobs = resolve_knobs(o.knobs);
  if (knobs.strategy == "all")
    throw InputError("", "", "--strategy all: validate compares one strategy at a time");
  if (!(o.max_error > 0) || !std::isfinite(o.max_error))
    throw InputError("", "", "--max-error: expected a positive fraction (e.g. 0.10), got " + std::to_string(o.max_error));
  const Plan plan = make_strategy(knobs.strategy)->plan(trace, cluster, knobs);

  MeasuredRun m;
  std::string measured_from;
  if (!o.measured_file.empty()) {
    if (o.ranks > 0 || !o.testbed.empty())
      throw InputError("", "", "--measured takes a measurement from a file: give neither --ranks nor --testbed");
    m = read_measured_run(o.measured_file, plan);
    measured_from = o.measured_file;
  } else {
    if ((o.ranks > 0) == !o.testbed.empty())
      throw InputError("", "", "give exactly one of --measured FILE, --ranks N (local run) or --testbed nodes=K,...");
    if (o.steps < 1) throw InputError("", "", "--steps: expected at least 1");
    const std::string tmp =
        (std::filesystem::temp_directory_path() / ("redsim-validate-" + std::to_string(::getpid()) + ".json")).string();
    std::vector<std::string> args;
    if (!o.testbed.empty()) {
      const Testbed tb = parse_testbed(o.testbed);
      if (tb.nodes * tb.ranks_per_node != cluster.world_size())
        throw InputError(o.cluster_file, "", "--testbed has " + std::to_string(tb.nodes * tb.ranks_per_node) +
                                                 " ranks but the cluster has " + std::to_string(cluster.world_size()));
      args = {"/bin/bash", find_testbed(), "run", "--nodes", std::to_string(tb.nodes), "--ranks-per-node",
              std::to_string(tb.ranks_per_node), "--rate", tb.rate, "--", self_exe(), "run"};
    } else {
      if (o.ranks != cluster.world_size())
        throw InputError(o.cluster_file, "", "--ranks " + std::to_string(o.ranks) + " but the cluster has " +
                                                 std::to_string(cluster.world_size()) + " ranks");
      args = {self_exe(), "run", "--ranks", std::to_string(o.ranks)};
    }
    for (const auto& a : std::vector<std::string>{"--backend", o.backend, "--trace", o.trace_file, "--cluster",
                                                  o.cluster_file, "--steps", std::to_string(o.steps), "--warmup",
                                                  std::to_string(o.warmup), "--buffer-scale", "1", "--timeout-s",
                                                  fmt("%g", o.timeout_s), "--out", tmp})
      args.push_back(a);
    args.insert(args.end(), knob_argv.begin(), knob_argv.end());
    std::cout << "redsim validate: measuring with `redsim run`"
              << (o.testbed.empty() ? " on " + std::to_string(o.ranks) + " local rank(s)" : " in testbed " + o.testbed)
              << "\n";
    const int rc = run_child(args);
    if (rc != 0) {
      std::filesystem::remove(tmp);
      std::cerr << "redsim: error: the measured run failed (exit status " << rc << ")\n";
      std::exit(rc == kExitBadInput ? kExitBadInput : 1);
    }
    try {
      m = read_measured_run(tmp, plan);
    } catch (...) {
      std::filesystem::remove(tmp);
      throw;
    }
    std::filesystem::remove(tmp);
    measured_from = o.testbed.empty() ? "redsim run --ranks " + std::to_string(o.ranks) : "testbed " + o.testbed;
  }
  if (m.buffer_scale != 1.0)
    std::cout << "warning: the measured run scaled its buffers by " << m.buffer_scale
              << " (memory); the simulated plan uses the traced sizes, so the comparison is not like for like\n";

  const Fidelity used = resolve_fidelity(plan, cluster, parse_fidelity(o.fidelity));
  const Timeline predicted = simulate(plan, cluster, SimOptions{false, used});
  CaseResult res;
  res.cmp = compare_runs(plan, predicted, m.step_times_s, m.timeline ? &m.timeline->timeline : nullptr,
                         m.timeline ? m.timeline->ranks : std::vector<int>{});
  const bool pass = std::abs(res.cmp.step_error) <= o.max_error;
  res.label = plan.strategy + " " + trace.model + " " + cluster.name;
  res.out = {{"format", "redsim-validation"},
             {"version", 1},
             {"trace", {{"file", o.trace_file}, {"model", trace.model}}},
             {"cluster", {{"file", o.cluster_file}, {"name", cluster.name}, {"world_size", cluster.world_size()}}},
             {"knobs", knobs_to_json(knobs)},
             {"simulator", {{"engine", "simgrid"}, {"fidelity", std::string(fidelity_name(used))}}},
             {"measured", {{"from", measured_from}, {"steps", m.step_times_s.size()}, {"has_timeline", m.timeline.has_value()}}},
             {"comparison", comparison_to_json(plan, res.cmp)},
             {"max_error", o.max_error},
             {"verdict", pass ? "pass" : "fail"}};
  return res;
}

void print_case(const CaseResult& r, double max_error) {
  const auto& c = r.cmp;
  std::cout << "\nredsim validate: " << r.label << "\n";
  std::cout << "  step time   predicted " << fmt("%.3f ms", c.predicted_step_s * 1e3) << "   measured "
            << fmt("%.3f ms", c.measured_step_median_s * 1e3) << " median (min "
            << fmt("%.3f", c.measured_step_min_s * 1e3) << ", max " << fmt("%.3f ms)", c.measured_step_max_s * 1e3)
            << "   error " << fmt("%+.1f%%", c.step_error * 100) << "\n";
  if (c.has_op_timeline) {
    std::cout << "  exposed comm predicted " << fmt("%.3f ms", c.predicted_exposed_comm_s * 1e3) << "   measured "
              << fmt("%.3f ms", c.measured_exposed_comm_s * 1e3) << "\n";
    std::cout << "  op start error (fraction of measured step) median " << fmt("%.1f%%", c.median_op_start_error * 100)
              << ", max " << fmt("%.1f%%", c.max_op_start_error * 100) << "; op end error median "
              << fmt("%.1f%%", c.median_op_end_error * 100) << ", max " << fmt("%.1f%%", c.max_op_end_error * 100)
              << "\n";
  } else {
    std::cout << "  (step times only: no per-op comparison)\n";
  }
  std::cout << "  verdict: " << (std::abs(c.step_error) <= max_error ? "PASS" : "FAIL") << " (|error| "
            << fmt("%.1f%%", std::abs(c.step_error) * 100) << " vs --max-error " << fmt("%.1f%%", max_error * 100)
            << ")\n";
}

std::string svg_scatter(const std::vector<CaseResult>& rs) {
  double hi = 0;
  for (const auto& r : rs) hi = std::max({hi, r.cmp.predicted_step_s, r.cmp.measured_step_median_s});
  hi = hi > 0 ? hi * 1.1e3 : 1;  // ms
  const double W = 480, H = 480, m = 60, pw = W - 2 * m, ph = H - 2 * m;
  auto X = [&](double v) { return m + v / hi * pw; };
  auto Y = [&](double v) { return H - m - v / hi * ph; };
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H << "\">\n"
    << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    << "<line x1=\"" << m << "\" y1=\"" << H - m << "\" x2=\"" << W - m << "\" y2=\"" << H - m
    << "\" stroke=\"black\"/>\n"
    << "<line x1=\"" << m << "\" y1=\"" << H - m << "\" x2=\"" << m << "\" y2=\"" << m << "\" stroke=\"black\"/>\n"
    << "<line x1=\"" << X(0) << "\" y1=\"" << Y(0) << "\" x2=\"" << X(hi) << "\" y2=\"" << Y(hi)
    << "\" stroke=\"gray\" stroke-dasharray=\"4\"/>\n"
    << "<text x=\"" << W / 2 << "\" y=\"" << H - 20 << "\" text-anchor=\"middle\">measured step (ms)</text>\n"
    << "<text x=\"20\" y=\"" << H / 2 << "\" text-anchor=\"middle\" transform=\"rotate(-90 20 " << H / 2
    << ")\">predicted step (ms)</text>\n"
    << "<text x=\"" << W - m << "\" y=\"" << H - m + 16 << "\" text-anchor=\"end\">" << fmt("%.3g", hi)
    << "</text>\n<text x=\"" << m - 4 << "\" y=\"" << m << "\" text-anchor=\"end\">" << fmt("%.3g", hi)
    << "</text>\n";
  for (const auto& r : rs) {
    s << "<circle cx=\"" << X(r.cmp.measured_step_median_s * 1e3) << "\" cy=\"" << Y(r.cmp.predicted_step_s * 1e3)
      << "\" r=\"4\" fill=\"steelblue\"><title>";
    for (char ch : r.label) s << (ch == '<' ? ' ' : ch == '&' ? '+' : ch);
    s << fmt(" %+.1f%%", r.cmp.step_error * 100) << "</title></circle>\n";
  }
  s << "</svg>\n";
  return s.str();
}

int run_validate(const ValidateOptions& o) {
  if (o.matrix_file.empty()) {
    const auto r = validate_once(o, knob_args(o.knobs));
    print_case(r, o.max_error);
    if (!o.out_file.empty()) {
      write_file_atomically(o.out_file, r.out.dump(1) + "\n");
      std::cout << "\nresult: " << o.out_file << "\n";
    }
    return std::abs(r.cmp.step_error) <= o.max_error ? 0 : 1;
  }
  // Matrix: a JSON array of cases; each case's keys override the command line's:
  // trace, cluster, measured, strategy, bucket_mb, config, ranks, testbed, label.
  const json cases = JsonIn::parse_file(o.matrix_file);
  if (!cases.is_array() || cases.empty()) throw InputError(o.matrix_file, "$", "expected a non-empty array of cases");
  std::vector<CaseResult> results;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const json& c = cases[i];
    const std::string p = "$[" + std::to_string(i) + "]";
    if (!c.is_object()) throw InputError(o.matrix_file, p, "expected an object");
    ValidateOptions co = o;
    auto str = [&](const char* k, std::string& dst) {
      if (!c.contains(k)) return;
      if (!c[k].is_string()) throw InputError(o.matrix_file, p + "." + k, "expected a string");
      dst = c[k].get<std::string>();
    };
    str("trace", co.trace_file);
    str("cluster", co.cluster_file);
    str("measured", co.measured_file);
    str("testbed", co.testbed);
    if (c.contains("ranks")) {
      if (!c["ranks"].is_number_integer()) throw InputError(o.matrix_file, p + ".ranks", "expected an integer");
      co.ranks = c["ranks"].get<int>();
    }
    if (c.contains("strategy")) str("strategy", co.knobs.strategy);
    if (c.contains("bucket_mb") && !c["bucket_mb"].is_number())
      throw InputError(o.matrix_file, p + ".bucket_mb", "expected a number");
    if (c.contains("strategy") || c.contains("bucket_mb")) {
      // The case's knobs go through a temporary --config (flags given on the command line win over
      // a config, so the case's own keys drop those flags).
      json kj = json::object();
      if (!o.knobs.config_file.empty()) {
        const json base = JsonIn::parse_file(o.knobs.config_file);
        kj = base.contains("knobs") ? base["knobs"] : base;
      }
      if (c.contains("strategy")) {
        kj["strategy"] = co.knobs.strategy;
        co.knobs.strategy_opt = nullptr;
      }
      if (c.contains("bucket_mb")) {
        kj["bucket_cap_bytes"] = std::llround(c["bucket_mb"].get<double>() * 1048576.0);
        co.knobs.bucket_mb_opt = nullptr;
      }
      const std::string tmp = (std::filesystem::temp_directory_path() /
                               ("redsim-validate-case-" + std::to_string(::getpid()) + "-" + std::to_string(i) + ".json"))
                                  .string();
      std::ofstream(tmp) << json{{"knobs", kj}}.dump() << "\n";
      co.knobs.config_file = tmp;
    }
    const std::vector<std::string> kargs = knob_args(co.knobs);
    auto r = validate_once(co, kargs);
    if (c.contains("label") && c["label"].is_string()) r.label = c["label"].get<std::string>();
    if (co.knobs.config_file != o.knobs.config_file) std::filesystem::remove(co.knobs.config_file);
    print_case(r, o.max_error);
    results.push_back(std::move(r));
  }
  std::ostringstream table;
  table << "case                                      predicted_ms  measured_ms  min_ms  max_ms  error   verdict\n";
  int fails = 0;
  std::vector<double> abs_err;
  json all = json::array();
  for (const auto& r : results) {
    const bool pass = std::abs(r.cmp.step_error) <= o.max_error;
    fails += pass ? 0 : 1;
    abs_err.push_back(std::abs(r.cmp.step_error));
    char line[256];
    std::snprintf(line, sizeof line, "%-40.40s %13.3f %12.3f %7.3f %7.3f %+6.1f%%  %s\n", r.label.c_str(),
                  r.cmp.predicted_step_s * 1e3, r.cmp.measured_step_median_s * 1e3, r.cmp.measured_step_min_s * 1e3,
                  r.cmp.measured_step_max_s * 1e3, r.cmp.step_error * 100, pass ? "pass" : "FAIL");
    table << line;
    json e = r.out;
    e["label"] = r.label;
    all.push_back(std::move(e));
  }
  const double med = median_of(abs_err);
  const double worst = *std::max_element(abs_err.begin(), abs_err.end());
  std::vector<MeasuredCase> ranked;
  for (const auto& r : results)
    ranked.push_back({r.cmp.predicted_step_s, r.cmp.measured_step_median_s, r.cmp.measured_step_min_s,
                      r.cmp.measured_step_max_s});
  const RankingCheck ranking = check_ranking(ranked);
  table << "median |error| " << fmt("%.1f%%", med * 100) << ", worst " << fmt("%.1f%%", worst * 100) << ", "
        << fails << " of " << results.size() << " over --max-error " << fmt("%.1f%%", o.max_error * 100) << "\n";
  table << "ranking " << (ranking.preserved() ? "preserved" : "NOT preserved") << ": " << ranking.flips << " of "
        << ranking.pairs << " pairs ordered otherwise by the prediction, " << ranking.significant_flips
        << " of them between cases the measurement tells apart (min..max ranges apart)\n";
  std::cout << "\n" << table.str();
  if (!o.table_file.empty()) write_file_atomically(o.table_file, table.str());
  if (!o.svg_file.empty()) write_file_atomically(o.svg_file, svg_scatter(results));
  if (!o.out_file.empty())
    write_file_atomically(o.out_file, json{{"format", "redsim-validation-matrix"},
                                           {"version", 1},
                                           {"median_abs_error", med},
                                           {"max_abs_error", worst},
                                           {"max_error", o.max_error},
                                           {"ranking", {{"pairs", ranking.pairs},
                                                        {"flips", ranking.flips},
                                                        {"significant_flips", ranking.significant_flips},
                                                        {"preserved", ranking.preserved()}}},
                                           {"cases", all}}
                                              .dump(1) +
                                          "\n");
  return fails == 0 ? 0 : 1;
}

}  // namespace

void add_validate_command(CLI::App& app) {
  auto opts = std::make_shared<ValidateOptions>();
  auto* cmd = app.add_subcommand(
      "validate", "simulate a Plan and compare it with a real run of the same Plan (measured file, local ranks, or "
                  "the network-namespace testbed); exit 1 when the step-time error exceeds --max-error");
  cmd->add_option("--trace", opts->trace_file, "model trace JSON (traces/README.md)")->required();
  cmd->add_option("--cluster", opts->cluster_file, "cluster JSON (configs/README.md)")->required();
  add_knob_options(cmd, opts->knobs);
  cmd->add_option("--measured", opts->measured_file,
                  "measured result: `redsim run --out` JSON, an object with step_times_s (seconds), or an array of "
                  "step times in seconds (e.g. from PyTorch DDP); omit to measure with --ranks or --testbed");
  cmd->add_option("--backend", opts->backend, "backend for the measured run (gloo or nccl)")->capture_default_str();
  cmd->add_option("--ranks", opts->ranks, "measure with `redsim run` on this many local ranks");
  cmd->add_option("--testbed", opts->testbed,
                  "measure inside realexec/testbed: nodes=K,ranks-per-node=R,rate=400mbit (needs root; the script is "
                  "found via $REDSIM_TESTBED, the source tree compiled in, or ../realexec/testbed from the binary)");
  cmd->add_option("--steps", opts->steps, "measured steps for the run validate starts")->capture_default_str();
  cmd->add_option("--warmup", opts->warmup, "warm-up steps for the run validate starts")->capture_default_str();
  cmd->add_option("--timeout-s", opts->timeout_s, "collective timeout for the run validate starts")
      ->capture_default_str();
  cmd->add_option("--max-error", opts->max_error,
                  "largest acceptable |predicted - measured median| / measured median step time (fraction)")
      ->capture_default_str();
  cmd->add_option("--fidelity", opts->fidelity, "simulator fidelity: exact, scalable or auto")->capture_default_str();
  cmd->add_option("--out", opts->out_file, "write the comparison JSON here");
  cmd->add_option("--matrix", opts->matrix_file,
                  "JSON array of cases (objects with any of trace, cluster, measured, ranks, testbed, strategy, "
                  "bucket_mb, label overriding the command line); writes --table and --svg");
  cmd->add_option("--table", opts->table_file, "with --matrix: write the text table here");
  cmd->add_option("--svg", opts->svg_file, "with --matrix: write an SVG scatter plot of predicted vs measured here");
  cmd->callback([opts] {
    const int rc = run_validate(*opts);
    std::cout.flush();
    if (rc != 0) std::exit(rc);
  });
}

}  // namespace redsim::cli
