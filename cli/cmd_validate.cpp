// redsim validate: simulate a Plan and compare it with a measurement of the same Plan — either a
// measured result file (--measured: `redsim run --out`, or step times only, e.g. from PyTorch DDP)
// or a run that validate starts itself (`redsim run` as a child process: --ranks N locally, or
// --testbed nodes=K,ranks-per-node=R,rate=R inside realexec/testbed's network namespaces, where
// each rank joins the job from torchrun's environment). Reports predicted vs measured step time,
// per-op start/end error and exposed-communication error, and a verdict against --max-error
// (exit 0 within, 1 exceeded, 2 bad input). --matrix FILE runs a list of cases and writes a
// table and an SVG scatter plot. The work is validate/'s; this file parses options and prints.
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/knob_options.h"
#include "cli/text_format.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/trace_json.h"
#include "sim/sim_engine.h"
#include "validate/validate_case.h"
#include "validate/matrix_svg.h"
#include "validate/validate_matrix.h"

namespace redsim::cli {
namespace {

struct ValidateOptions {
  std::string trace_file;
  std::string cluster_file;
  KnobOptions knobs;
  std::string measured_file;
  RunMeasurement run;
  double max_error = 0.10;
  std::string out_file;
  std::string matrix_file;
  std::string table_file;
  std::string svg_file;
  std::string fidelity = "auto";
  std::string compute_scale;
  std::string layout;
  std::int64_t batch_size = 0;  // 0: the trace's own
  bool step_times_only = false;
};

// The simulator, for validate/: the fidelity asked for, resolved per plan.
Predictor simulator(const std::string& fidelity) {
  return [requested = parse_fidelity(fidelity)](const Plan& plan, const ClusterSpec& cluster) {
    const Fidelity used = resolve_fidelity(plan, cluster, requested);
    return Prediction{simulate(plan, cluster, SimOptions{false, used}),
                      {{"engine", "simgrid"}, {"fidelity", std::string(fidelity_name(used))}}};
  };
}

void note(const std::string& line) { std::cout << line << "\n"; }

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
  std::cout << "  verdict: " << (r.pass ? "PASS" : "FAIL") << " (|error| "
            << fmt("%.1f%%", std::abs(c.step_error) * 100) << " vs --max-error " << fmt("%.1f%%", max_error * 100)
            << ")\n";
}

int run_validate(const ValidateOptions& o) {
  const std::vector<NamedPath> outputs{{"--out", o.out_file}, {"--table", o.table_file}, {"--svg", o.svg_file}};
  check_outputs_distinct({{"--trace", o.trace_file},
                          {"--cluster", o.cluster_file},
                          {"--config", o.knobs.config_file},
                          {"--measured", o.measured_file},
                          {"--matrix", o.matrix_file}},
                         outputs);
  check_output_targets(outputs);
  RunMeasurement run = o.run;
  run.compute_scale = parse_compute_scale(o.compute_scale);
  ValidateCase base{"", o.trace_file, o.cluster_file, resolve_knobs(o.knobs), o.measured_file, run, o.max_error, o.layout, o.batch_size};
  base.step_times_only = o.step_times_only;
  const Predictor predict = simulator(o.fidelity);
  if (o.matrix_file.empty() && !o.trace_file.empty()) check_knobs_for_trace(o.knobs, base.knobs, load_trace(o.trace_file));
  if (o.matrix_file.empty()) {
    const auto r = validate_case(base, predict, note);
    print_case(r, o.max_error);
    if (!o.out_file.empty()) {
      write_file_atomically(o.out_file, r.out.dump(1) + "\n");
      std::cout << "\nresult: " << o.out_file << "\n";
    }
    return r.pass ? 0 : 1;
  }
  std::vector<CaseResult> results;
  const auto cases = read_matrix(o.matrix_file, base);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    try {
      results.push_back(validate_case(cases[i], predict, note));
    } catch (const InputError& e) {
      // Name the case in the matrix as well as the file at fault inside it.
      throw InputError(o.matrix_file, "$[" + std::to_string(i) + "]", std::string("in this case: ") + e.what());
    }
    print_case(results.back(), o.max_error);
  }
  const MatrixSummary summary = summarize_matrix(results);
  const std::string table = matrix_table(results, summary, o.max_error);
  std::cout << "\n" << table;
  if (!o.table_file.empty()) write_file_atomically(o.table_file, table);
  if (!o.svg_file.empty()) write_file_atomically(o.svg_file, matrix_scatter_svg(results, summary, o.max_error));
  if (!o.out_file.empty())
    write_file_atomically(o.out_file, matrix_to_json(results, summary, o.max_error).dump(1) + "\n");
  return summary.fails == 0 ? 0 : 1;
}

}  // namespace

void add_validate_command(CLI::App& app) {
  auto opts = std::make_shared<ValidateOptions>();
  auto* cmd = app.add_subcommand(
      "validate", "simulate a Plan and compare it with a real run of the same Plan (measured file, local ranks, or "
                  "the network-namespace testbed); exit 1 when the step-time error exceeds --max-error");
  cmd->add_option("--trace", opts->trace_file, "model trace JSON (traces/README.md)")->required();
  cmd->add_option("--cluster", opts->cluster_file, "cluster JSON (configs/README.md)")->required();
  add_knob_options(cmd, opts->knobs, false);
  add_compute_scale_option(cmd, opts->compute_scale);
  add_layout_option(cmd, opts->layout);
  add_batch_size_option(cmd, opts->batch_size);
  cmd->add_option("--measured", opts->measured_file,
                  "measured result: `redsim run --out` or `redsim trace import --measured` JSON, an object with "
                  "step_times_s (seconds), or an array of step times in seconds (e.g. from PyTorch DDP); omit to "
                  "measure with --ranks or --testbed");
  cmd->add_flag("--step-times-only", opts->step_times_only,
               "with --measured: compare step times alone, leaving out the file's timeline (a measurement of another "
               "plan, e.g. a profile at another bucket size)");
  cmd->add_option("--backend", opts->run.backend, "backend for the measured run (gloo or nccl)")->capture_default_str();
  cmd->add_option("--ranks", opts->run.ranks, "measure with `redsim run` on this many local ranks");
  cmd->add_option("--testbed", opts->run.testbed,
                  "measure inside realexec/testbed: nodes=K,ranks-per-node=R,rate=400mbit (needs root; the script is "
                  "found via $REDSIM_TESTBED, the source tree compiled in, or ../realexec/testbed from the binary)");
  cmd->add_option("--steps", opts->run.steps, "measured steps for the run validate starts")->capture_default_str();
  cmd->add_option("--warmup", opts->run.warmup, "warm-up steps for the run validate starts")->capture_default_str();
  cmd->add_option("--timeout-s", opts->run.timeout_s, "collective timeout for the run validate starts")
      ->capture_default_str();
  cmd->add_option("--max-error", opts->max_error,
                  "largest acceptable |predicted - measured median| / measured median step time (fraction)")
      ->capture_default_str();
  cmd->add_option("--fidelity", opts->fidelity, "simulator fidelity: exact, scalable or auto")->capture_default_str();
  cmd->add_option("--out", opts->out_file, "write the comparison JSON here");
  cmd->add_option("--matrix", opts->matrix_file,
                  "JSON array of cases (objects with any of trace, cluster, measured, ranks, testbed, strategy, "
                  "bucket_mb, layout, batch_size, label overriding the command line); writes --table and --svg");
  cmd->add_option("--table", opts->table_file, "with --matrix: write the text table here");
  cmd->add_option("--svg", opts->svg_file, "with --matrix: write an SVG scatter plot of predicted vs measured here");
  cmd->callback([opts] {
    int rc = 0;
    try {
      rc = run_validate(*opts);
    } catch (const MeasuredRunFailed& e) {
      std::cout.flush();
      std::cerr << "redsim: error: " << e.what() << "\n";
      rc = e.status() == kExitBadInput ? kExitBadInput : 1;
    }
    std::cout.flush();
    if (rc != 0) std::exit(rc);
  });
}

}  // namespace redsim::cli
