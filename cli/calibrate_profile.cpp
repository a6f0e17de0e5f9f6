// Reads the profiles and fits (trace_tools/profile_fit.h), asking the collective model for each
// collective's time alone on the part of the cluster the job ran on (sim/collective_sweep.h),
// prints what was fitted from how much evidence, and writes the cluster atomically.
#include "cli/calibrate_profile.h"

#include <cstdio>
#include <iostream>
#include <map>
#include <tuple>

#include "cli/cluster_output.h"
#include "cli/text_format.h"
#include "collectives/cluster_subset.h"
#include "core/atomic_file.h"
#include "core/cluster_json.h"
#include "core/compute_reference.h"
#include "core/error.h"
#include "sim/collective_sweep.h"
#include "trace_tools/profile_fit.h"

namespace redsim::cli {
namespace {

// The part of the cluster a profiled job of `world` ranks ran on.
ClusterSpec job_cluster(const ClusterSpec& base, const std::string& cluster_file, int world) {
  try {
    return cluster_subset(base, world);
  } catch (const InputError& e) {
    throw InputError(cluster_file, "$", "a cluster the profiled job of " + std::to_string(world) + " ranks fits on (" +
                                            e.what() + ")");
  }
}

// One sweep per (kind, dtype, world): the sizes of that kind the profiles hold. Every layout is
// checked before the progress line, so bad input gets one line on stderr, its error.
std::vector<double> predict_alone(const ClusterSpec& base, const std::string& cluster_file,
                                  const std::vector<CollectiveQuery>& queries) {
  std::map<std::tuple<OpKind, DType, int>, std::vector<std::size_t>> groups;
  std::map<int, ClusterSpec> jobs;
  for (std::size_t i = 0; i < queries.size(); ++i) {
    groups[{queries[i].kind, queries[i].dtype, queries[i].world}].push_back(i);
    if (!jobs.count(queries[i].world)) jobs.emplace(queries[i].world, job_cluster(base, cluster_file, queries[i].world));
  }
  std::cout << std::flush;
  std::cerr << "simulating the profiles' " << queries.size() << " collective sizes alone on " << base.name << "...\n";
  std::vector<double> us(queries.size(), 0.0);
  for (const auto& [key, idx] : groups) {
    SweepOptions o;
    o.ops = {std::get<0>(key)};
    o.dtype = std::get<1>(key);
    for (auto i : idx) o.sizes.push_back(queries[i].bytes);
    const auto rows = collective_sweep(jobs.at(std::get<2>(key)), o);
    for (std::size_t k = 0; k < idx.size() && k < rows.size(); ++k) us[idx[k]] = rows[k].time_us;
  }
  return us;
}

void print_fit(const ProfileFit& fit) {
  std::cout << "  " << fit.files << " profile(s): " << fit.compute_kernels << " compute kernels, " << fit.nccl_kernels
            << " NCCL kernels, " << fit.buckets << " gradient buckets in " << fit.steps << " step(s)\n\n"
            << "  fitted                               before      after  estimates  quartiles        note\n";
  for (const auto& p : fit.params) {
    char line[160];  // the columns; the note, of any length, follows
    if (p.fitted)
      std::snprintf(line, sizeof line, "  %-34s %8.3f  %9.3f  %9d  %7.3f..%-7.3f  ", p.name.c_str(), p.before, p.after,
                    p.evidence, p.q1, p.q3);
    else
      std::snprintf(line, sizeof line, "  %-34s %8.3f  %9.3f  %9d  %-16s  not fitted: ", p.name.c_str(), p.before,
                    p.after, p.evidence, "-");
    std::cout << line << p.note << "\n";
  }
  for (const auto& w : fit.warnings) std::cout << "  note: " << w << "\n";
}

}  // namespace

void calibrate_from_profiles(const ProfileCalibration& o) {
  if (o.cluster_file.empty())
    throw InputError("", "", "--from-profile needs --cluster FILE: the cluster the profiled job ran on");
  std::vector<NamedPath> inputs{{"--cluster", o.cluster_file}};
  for (const auto& t : o.traces) inputs.push_back({"--from-profile", t});
  check_outputs_distinct(inputs, {{"--out", o.out_file}});
  check_output_targets({{"--out", o.out_file}});
  const ClusterSpec base = load_cluster(o.cluster_file);
  std::cout << "redsim calibrate: " << o.traces.size() << " profiler trace(s) on " << o.cluster_file << " (" << base.name
            << ")\n";
  // Progress only once every profile has been read (predict_alone).
  const ProfileFit fit = fit_profiles(base, o.traces, [&](const std::vector<CollectiveQuery>& q) {
    return predict_alone(base, o.cluster_file, q);
  });
  print_fit(fit);
  ClusterSpec c = fit.cluster;
  name_fitted_cluster(c, base, o.name, "Interference and bucket overhead", "--from-profile", o.traces);
  write_calibrated_cluster(c, o.out_file);
  // A profile's compute ran beside NCCL: imported as measured it would be slowed twice here.
  if (c.interference.slows_compute())
    std::cout << "import a profile for it with its compute timed alone: redsim trace import --kineto "
              << shell_word(o.traces.front()) << " --compute-slowdown " << compute_slowdown_arg(c.interference)
              << " --out TRACE.json\n";
}

}  // namespace redsim::cli
