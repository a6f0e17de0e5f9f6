// Reads the logs (validate/nccl_tests_log.h), simulates each on the part of the cluster it ran on
// with the same sizes, op, type, root and -g (sim/collective_sweep.h), fits the link parameters
// (validate/nccl_tests_fit.h), prints the fit and every row's residual, and writes the cluster.
#include "cli/calibrate_nccl_tests.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <set>

#include "cli/cluster_output.h"
#include "cli/nccl_tests_sweep.h"
#include "cli/text_format.h"
#include "core/atomic_file.h"
#include "core/cluster_json.h"
#include "core/compute_reference.h"
#include "core/error.h"
#include "core/statistics.h"
#include "validate/busbw_svg.h"
#include "validate/nccl_tests_fit.h"

namespace redsim::cli {
namespace {

std::vector<PredictedRow> predict_run(const ClusterSpec& layout, const NcclTestsRun& run) {
  std::vector<PredictedRow> rows;
  for (const auto& r : simulate_run(layout, run, sweep_for_run(run))) rows.push_back({r.time_us, r.device_time_us, r.channels});
  return rows;
}

double error_pct(double predicted, double measured) { return (predicted / measured - 1) * 100; }

double median_abs(std::vector<double> v) {
  for (auto& x : v) x = std::abs(x);
  return median_of(std::move(v));
}

void print_fit(const NcclTestsFit& fit, const std::vector<NcclTestsRun>& runs) {
  std::cout << "\n  fitted                                 before        after  note\n";
  for (const auto& p : fit.params) {
    char line[160];
    std::snprintf(line, sizeof line, "  %-36s %10.3f  %11.3f  ", p.name.c_str(), p.before, p.after);
    std::cout << line << p.note << "\n";
  }
  if (fit.params.empty()) std::cout << "  (nothing: the logs exercise no link with several devices or nodes)\n";
  std::vector<double> before, after;
  std::size_t current = runs.size();
  for (const auto& r : fit.rows) {
    const auto& run = runs[r.run];
    if (r.run != current) {
      current = r.run;
      std::cout << "\n  " << run.file << " line " << run.first_line << ": " << op_kind_name(run.op) << " (op from "
                << run.op_from << "), " << run.ranks << " ranks = " << run.nodes << " x " << run.devices_per_node << ", "
                << run.device << "\n"
                << "          size (B)   measured us   before us   error    fitted us   error\n";
    }
    const auto& row = run.rows[r.row];
    const double eb = error_pct(r.before_us, r.measured_us), ea = error_pct(r.after_us, r.measured_us);
    char line[200];
    std::snprintf(line, sizeof line, "  %16lld  %12.2f  %10.2f  %+6.1f%%  %11.2f  %+6.1f%%%s\n",
                  static_cast<long long>(row.size_bytes), r.measured_us, r.before_us, eb, r.after_us, ea,
                  r.fitted ? "" : "   (#wrong > 0: not fitted)");
    std::cout << line;
    if (r.fitted) before.push_back(eb), after.push_back(ea);
  }
  std::cout << "\n  median |time error| over " << before.size() << " rows: " << fmt("%.1f%%", median_abs(before))
            << " as given, " << fmt("%.1f%%", median_abs(after)) << " fitted (" << fit.simulations << " simulations)\n";
}

// The logs' NCCL release, where they print one and agree, is the one the fit simulates and the
// fitted cluster names (it decides how NCCL lays work out: collectives/README.md).
void take_logged_nccl_version(const std::vector<NcclTestsRun>& runs, ClusterSpec& cluster) {
  std::set<int> versions;
  for (const auto& r : runs)
    if (r.nccl_version > 0) versions.insert(r.nccl_version);
  if (versions.empty() || cluster.library != CollectiveLibrary::nccl) return;
  if (versions.size() > 1) {
    std::cout << "  note: the logs print " << versions.size() << " NCCL releases (" << nccl_version_name(*versions.begin())
              << " to " << nccl_version_name(*versions.rbegin()) << "): fitting with the cluster's "
              << nccl_version_name(cluster.nccl_version) << "\n";
    return;
  }
  cluster.nccl_version = *versions.begin();
  std::cout << "  NCCL " << nccl_version_name(cluster.nccl_version) << ", as the logs print it: the fit simulates it"
            << (cluster.nccl_version == kModelledNcclVersion ? " (the default release)" : " and the fitted cluster's nccl_version says it")
            << "\n";
}

// Measured, as-given and fitted busbw per run. A row's bus bandwidth is inversely proportional to
// its time at a fixed size, so the predictions' busbw follow from the log's own: busbw x t / t'.
std::string fit_chart(const NcclTestsFit& fit, const std::vector<NcclTestsRun>& runs, const std::string& cluster_name) {
  std::vector<BusbwPanel> panels(runs.size());
  for (std::size_t i = 0; i < runs.size(); ++i) panels[i].title = run_heading(runs[i]);
  for (const auto& r : fit.rows) {
    const auto& row = runs[r.run].rows[r.row];
    auto scaled = [&](double us) { return us > 0 ? row.busbw_GBps * r.measured_us / us : 0.0; };
    panels[r.run].points.push_back({row.size_bytes, row.busbw_GBps, scaled(r.before_us), "", scaled(r.after_us)});
  }
  for (auto& p : panels) p.subtitle = "the cluster as given and as fitted (" + cluster_name + ")";
  return busbw_compare_svg(panels, "redsim calibrate --from-nccl-tests: measured, as-given and fitted bus bandwidth",
                           "as given");
}

}  // namespace

void calibrate_from_nccl_tests(const NcclTestsCalibration& o) {
  if (o.cluster_file.empty())
    throw InputError("", "", "--from-nccl-tests needs --cluster FILE: the cluster the logs ran on, as a starting point");
  std::vector<NamedPath> inputs{{"--cluster", o.cluster_file}};
  for (const auto& log : o.logs) inputs.push_back({"--from-nccl-tests", log});
  check_outputs_distinct(inputs, {{"--out", o.out_file}, {"--svg", o.svg_file}});
  check_output_targets({{"--out", o.out_file}, {"--svg", o.svg_file}});
  ClusterSpec base = load_cluster(o.cluster_file);
  std::vector<NcclTestsRun> runs;
  std::vector<NcclTestsSkip> skipped;
  for (const auto& log : o.logs)
    for (auto& r : read_nccl_tests_log(log, &skipped)) runs.push_back(std::move(r));
  std::cout << "redsim calibrate: " << runs.size() << " nccl-tests run(s) from " << o.logs.size() << " log(s), on "
            << o.cluster_file << " (" << base.name << ")\n";
  for (const auto& k : skipped) std::cout << "  note: " << skipped_run_note(k) << "\n";
  take_logged_nccl_version(runs, base);
  for (const auto& r : runs)
    if (!r.device.empty() && normalized_device_name(r.device) != normalized_device_name(base.device.name)) {
      bool alias = false;
      for (const auto& a : base.device.aliases) alias = alias || normalized_device_name(a) == normalized_device_name(r.device);
      if (!alias)
        std::cout << "  note: " << r.file << " ran on \"" << r.device << "\", the cluster's device is \"" << base.device.name
                  << "\": the fit takes the cluster's topology as that machine's\n";
    }
  // A log's NCCL_ALGO that its release set aside on the run's hardware, as NCCL warned then.
  for (const auto& r : runs) {
    if (!r.nccl_algo) continue;  // no list, no note: the run's layout is not built for nothing
    if (const auto why = ignored_list_note(layout_of_run(base, o.cluster_file, r), sweep_for_run(r).request); !why.empty())
      std::cout << "  note: " << r.file << " line " << r.first_line << ": " << why << "\n";
  }
  const auto progress = [](const std::string& what) { std::cerr << what << "\n"; };
  NcclTestsFit fit = fit_nccl_tests(base, o.cluster_file, runs, predict_run, progress);
  print_fit(fit, runs);
  const bool host = std::any_of(fit.params.begin(), fit.params.end(),
                                [](const FittedParam& p) { return p.name == "$.collective_launch_us"; });
  name_fitted_cluster(fit.cluster, base, o.name, host ? "Link parameters and the host's launch cost" : "Link parameters",
                      "--from-nccl-tests", o.logs);
  write_calibrated_cluster(fit.cluster, o.out_file);
  if (!o.svg_file.empty()) {
    write_file_atomically(o.svg_file, fit_chart(fit, runs, fit.cluster.name));
    std::cout << "svg: " << o.svg_file << "\n";
  }
}

}  // namespace redsim::cli
