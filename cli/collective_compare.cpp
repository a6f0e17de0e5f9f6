// Each run of each log is simulated on the part of the cluster it ran on (validate/nccl_tests_fit.h
// layout_of_run), with its sizes, op, type, root, -g and -n and, where the log prints one, its
// NCCL release (cli/nccl_tests_sweep.h). Nothing is fitted: calibrate --from-nccl-tests does that.
#include "cli/collective_compare.h"

#include <cstdio>
#include <iostream>
#include <limits>

#include <nlohmann/json.hpp>

#include "cli/nccl_tests_sweep.h"
#include "cli/text_format.h"
#include "core/atomic_file.h"
#include "core/cluster_json.h"
#include "core/error.h"
#include "core/plan_json.h"
#include "validate/busbw_bands.h"
#include "validate/busbw_svg.h"
#include "validate/nccl_tests_fit.h"

namespace redsim::cli {
namespace {

struct ComparedRun {
  const NcclTestsRun* run = nullptr;
  ClusterSpec layout;
  CollectiveRequest request;
  std::string pins;  // what pinned the run's choice and where it came from; "" when nothing
  std::vector<SweepRow> predicted;
};

// The run's pins: --algorithm / --protocol / --channels where given, else the NCCL_ALGO /
// NCCL_PROTO its log printed (`logged`, sweep_for_run's: NCCL's lists, so a log's bare "Tree" is
// NCCL's bare value).
void take_pins(ComparedRun& c, const CollectiveRequest& given, const CollectiveRequest& logged) {
  c.request = logged;
  std::string from_log, from_options;
  auto say = [](std::string& to, const std::string& what) { to += (to.empty() ? "" : " ") + what; };
  if (given.algorithm || given.algorithm_list) {
    c.request.algorithm = given.algorithm;
    c.request.algorithm_list = given.algorithm_list;
    say(from_options, "algorithm " + requested_algorithm(given));
  } else if (logged.algorithm_list) {
    say(from_log, "NCCL_ALGO=" + nccl_list_value(*logged.algorithm_list));
  }
  if (given.protocol || given.protocol_list) {
    c.request.protocol = given.protocol;
    c.request.protocol_list = given.protocol_list;
    say(from_options, "protocol " + requested_protocol(given));
  } else if (logged.protocol_list) {
    say(from_log, "NCCL_PROTO=" + nccl_list_value(*logged.protocol_list));
  }
  c.request.channels = given.channels;
  if (given.channels) say(from_options, "channels " + std::to_string(given.channels));
  // The log's channel bounds, applied on the run's layout by simulate_run unless --channels is given.
  else
    for (const auto& [name, v] : {std::pair{"NCCL_MIN_NCHANNELS", c.run->nccl_min_channels}, {"NCCL_MAX_NCHANNELS", c.run->nccl_max_channels}})
      if (v) say(from_log, name + ("=" + std::to_string(*v)));
  if (!from_log.empty()) c.pins = from_log + " (the log's)";
  if (!from_options.empty()) c.pins += (c.pins.empty() ? "" : ", ") + from_options + " (given)";
}

// Positive: redsim predicts faster (higher bus bandwidth) than measured.
double error_pct(const NcclTestsRow& m, const SweepRow& p) { return (m.time_us / p.time_us - 1) * 100; }

std::string run_subtitle(const ComparedRun& c, const std::string& cluster_file) {
  const auto& r = *c.run;
  return "on " + cluster_file +
         (c.layout.library == CollectiveLibrary::nccl ? ", NCCL " + nccl_version_name(c.layout.nccl_version) +
                                                            (r.nccl_version > 0 ? " (the log's)" : " (the cluster's)")
                                                      : std::string(", ideal collectives")) +
         (c.pins.empty() ? "" : ", " + c.pins);
}

void print_run(const ComparedRun& c, const std::string& cluster_file) {
  std::cout << "\n# " << run_heading(*c.run) << " " << run_subtitle(c, cluster_file) << "\n";
  if (const auto why = ignored_list_note(c.layout, c.request); !why.empty()) std::cout << "# note: " << why << "\n";
  std::cout << "#       size   measured us  predicted us   measured busbw  predicted busbw    error   choice\n";
  std::vector<RowError> counted;
  for (std::size_t i = 0; i < c.predicted.size(); ++i) {
    const auto& m = c.run->rows[i];
    const auto& p = c.predicted[i];
    const double e = error_pct(m, p);
    std::cout << fmt("%12.0f", static_cast<double>(m.size_bytes)) << fmt("  %12.2f", m.time_us)
              << fmt("  %12.2f", p.time_us)
              << fmt("  %15.2f", m.busbw_GBps) << fmt("  %15.2f", p.busbw_GBps) << fmt("  %+7.1f%%", e) << "   "
              << choice_label(p);
    // A row whose results were wrong measured a broken run: shown, left out of the summary.
    if (m.wrong && *m.wrong > 0) {
      std::cout << "   (#wrong > 0: not counted)\n";
      continue;
    }
    std::cout << "\n";
    counted.push_back({m.size_bytes, m.busbw_GBps, p.busbw_GBps, e / 100});
  }
  auto summary = [&](const char* name, std::int64_t lo, std::int64_t hi, double bound) {
    const BandSummary b = summarize_band(counted, lo, hi, bound);
    if (b.rows == 0) return;
    std::cout << "#  " << name << fmt(" %2.0f rows:", b.rows) << fmt(" median |error| %5.1f%%,", 100 * b.median_abs_error)
              << fmt(" worst %5.1f%%,", 100 * b.max_abs_error) << fmt(" within %.0f%%: ", 100 * bound) << b.within
              << " of " << b.rows << "\n";
  };
  summary("below 64 KiB:  ", 0, kGoalBandBytes, kSmallBandBound);
  summary("from 64 KiB up:", kGoalBandBytes, std::numeric_limits<std::int64_t>::max(), kLargeBandBound);
  // One thread launching several GPUs' kernels paces the small and mid sizes by the host's cost,
  // which differs by host (bench/fidelity/README.md): say which figures the prediction took.
  const int g = c.run->gpus_per_thread;
  if (g > 1)
    std::cout << "#  -g " << g << ": one thread launches " << g << " GPUs' kernels, so the host's costs set an iteration "
              << "at small and mid sizes:\n#        " << g << " x (" << fmt("%g", c.layout.launch_us(c.run->op)) << " us + "
              << fmt("%g", c.layout.collective_launch_per_channel_us) << " us a channel past the first) in "
              << "this cluster file; calibrate --from-nccl-tests fits both from the log\n";
}

nlohmann::json run_json(const ComparedRun& c) {
  auto rows = nlohmann::json::array();
  for (std::size_t i = 0; i < c.predicted.size(); ++i) {
    const auto& m = c.run->rows[i];
    const auto& p = c.predicted[i];
    rows.push_back({{"size_bytes", m.size_bytes},
                    {"measured_time_us", m.time_us},
                    {"predicted_time_us", p.time_us},
                    {"measured_busbw_GBps", m.busbw_GBps},
                    {"predicted_busbw_GBps", p.busbw_GBps},
                    {"error_pct", error_pct(m, p)},
                    {"wrong", m.wrong ? nlohmann::json(*m.wrong) : nlohmann::json(nullptr)},
                    {"algorithm", algorithm_name(p.algorithm)},
                    {"protocol", p.protocol ? nlohmann::json(protocol_name(*p.protocol)) : nlohmann::json(nullptr)},
                    {"channels", p.channels}});
  }
  const auto& r = *c.run;
  return {{"file", r.file},
          {"line", r.first_line},
          {"op", op_kind_name(r.op)},
          {"ranks", r.ranks},
          {"nodes", r.nodes},
          {"devices_per_node", r.devices_per_node},
          {"device", r.device},
          {"gpus_per_process", r.gpus_per_thread},
          {"iters", r.iters},
          {"nccl_version", c.layout.library == CollectiveLibrary::nccl
                               ? nlohmann::json(nccl_version_name(c.layout.nccl_version))
                               : nlohmann::json(nullptr)},
          {"requested", requested_to_json(c.request)},
          {"rows", rows}};
}

}  // namespace

void compare_collective_logs(const CollectiveCompare& o) {
  std::vector<NamedPath> inputs{{"--cluster", o.cluster_file}};
  for (const auto& log : o.logs) inputs.push_back({"--compare", log});
  check_outputs_distinct(inputs, {{"--json", o.json_file}, {"--svg", o.svg_file}});
  check_output_targets({{"--json", o.json_file}, {"--svg", o.svg_file}});
  const ClusterSpec cluster = load_cluster(o.cluster_file);
  std::vector<NcclTestsRun> runs;
  std::vector<NcclTestsSkip> skipped;
  for (const auto& log : o.logs)
    for (auto& r : read_nccl_tests_log(log, &skipped)) runs.push_back(std::move(r));
  for (const auto& k : skipped) std::cerr << "redsim: note: " << skipped_run_note(k) << "\n";
  // Simulate everything before printing or writing anything, so bad input leaves no half output.
  std::vector<ComparedRun> compared;
  for (const auto& run : runs) {
    ComparedRun c;
    c.run = &run;
    c.layout = layout_of_run(cluster, o.cluster_file, run);
    if (run.nccl_version > 0 && c.layout.library == CollectiveLibrary::nccl) c.layout.nccl_version = run.nccl_version;
    SweepOptions s = sweep_for_run(run);
    take_pins(c, o.request, s.request);
    s.request = c.request;
    s.fidelity = o.fidelity;
    c.predicted = simulate_run(c.layout, run, s);
    compared.push_back(std::move(c));
  }
  std::cout << "# redsim collective --compare: " << runs.size() << " nccl-tests run(s) on " << o.cluster_file << " ("
            << cluster.name << "); error = measured time / predicted time - 1 (positive: redsim predicts faster)\n";
  for (const auto& c : compared) print_run(c, o.cluster_file);
  if (!o.json_file.empty()) {
    auto arr = nlohmann::json::array();
    for (const auto& c : compared) arr.push_back(run_json(c));
    const nlohmann::json j = {{"format", "redsim-collective-compare"},
                              {"version", 1},
                              {"cluster", {{"file", o.cluster_file}, {"name", cluster.name}}},
                              {"runs", arr}};
    write_file_atomically(o.json_file, j.dump(1) + "\n");
    std::cout << "json: " << o.json_file << "\n";
  }
  if (!o.svg_file.empty()) {
    std::vector<BusbwPanel> panels;
    for (const auto& c : compared) {
      BusbwPanel p;
      p.title = run_heading(*c.run);
      p.subtitle = run_subtitle(c, o.cluster_file);
      for (std::size_t i = 0; i < c.predicted.size(); ++i)
        p.points.push_back({c.run->rows[i].size_bytes, c.run->rows[i].busbw_GBps, c.predicted[i].busbw_GBps,
                            choice_label(c.predicted[i])});
      panels.push_back(std::move(p));
    }
    const std::string heading = "redsim collective --compare: measured and predicted bus bandwidth, " + cluster.name;
    write_file_atomically(o.svg_file, busbw_compare_svg(panels, heading));
    std::cout << "svg: " << o.svg_file << "\n";
  }
}

}  // namespace redsim::cli
