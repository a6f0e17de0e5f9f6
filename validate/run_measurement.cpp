#include "validate/run_measurement.h"

#include <cstdio>
#include <vector>

#include "core/error.h"
#include "core/knobs_json.h"
#include "validate/child_command.h"
#include "validate/temp_file.h"

namespace redsim {

MeasuredRunFailed::MeasuredRunFailed(int status)
    : std::runtime_error("the measured run failed (exit status " + std::to_string(status) + ")"), status_(status) {}

std::string measurement_source(const RunMeasurement& how) {
  return how.testbed.empty() ? "redsim run --ranks " + std::to_string(how.ranks) : "testbed " + how.testbed;
}

namespace {

// `redsim run ...` locally, or under the testbed; the world size checked against the cluster's.
std::vector<std::string> run_argv(const RunMeasurement& how, const std::string& cluster_file,
                                  const ClusterSpec& cluster) {
  if (!how.testbed.empty()) {
    const TestbedSpec tb = parse_testbed(how.testbed);
    if (tb.ranks() != cluster.world_size())
      throw InputError(cluster_file, "", "--testbed has " + std::to_string(tb.ranks()) + " ranks but the cluster has " +
                                             std::to_string(cluster.world_size()));
    return testbed_argv(tb, {"run"});
  }
  if (how.ranks != cluster.world_size())
    throw InputError(cluster_file, "", "--ranks " + std::to_string(how.ranks) + " but the cluster has " +
                                           std::to_string(cluster.world_size()) + " ranks");
  return {self_exe(), "run", "--ranks", std::to_string(how.ranks)};
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

}  // namespace

MeasuredRun measure_with_redsim_run(const RunMeasurement& how, const std::string& trace_file,
                                    const std::string& cluster_file, const ClusterSpec& cluster, const Knobs& knobs,
                                    const Plan& plan, const std::function<void(const std::string&)>& starting) {
  if (how.steps < 1) throw InputError("", "", "--steps: expected at least 1");
  std::vector<std::string> args = run_argv(how, cluster_file, cluster);
  const TempFile config("validate-knobs", ".json");
  const TempFile result("validate-result", ".json");
  config.write(nlohmann::json{{"knobs", knobs_to_json(knobs)}}.dump(1) + "\n");
  for (const auto& a : std::vector<std::string>{"--backend", how.backend, "--trace", trace_file, "--cluster",
                                                cluster_file, "--config", config.path(), "--steps",
                                                std::to_string(how.steps), "--warmup", std::to_string(how.warmup),
                                                "--buffer-scale", "1", "--timeout-s", seconds_text(how.timeout_s),
                                                "--out", result.path()})
    args.push_back(a);
  if (how.compute_scale) {
    args.push_back("--compute-scale");
    args.push_back(seconds_text(*how.compute_scale));
  }
  if (!how.layout.empty()) {
    args.push_back("--layout");
    args.push_back(how.layout);
  }
  if (how.batch_size > 0) {
    args.push_back("--batch-size");
    args.push_back(std::to_string(how.batch_size));
  }
  starting(how.testbed.empty() ? "`redsim run` on " + std::to_string(how.ranks) + " local rank(s)"
                               : "`redsim run` in testbed " + how.testbed);
  const int rc = run_child(args);
  if (rc != 0) throw MeasuredRunFailed(rc);
  return read_measured_run(result.path(), plan);
}

}  // namespace redsim
