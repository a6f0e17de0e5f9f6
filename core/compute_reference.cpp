#include "core/compute_reference.h"

#include <cctype>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "core/error.h"

namespace redsim {

std::string normalized_device_name(const std::string& name) {
  std::string out;
  for (char ch : name) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isspace(c)) {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += static_cast<char>(std::tolower(c));
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  for (const char* vendor : {"nvidia ", "tesla "})
    if (out.rfind(vendor, 0) == 0) out.erase(0, std::string(vendor).size());
  return out;
}

namespace {

bool is_cluster_device(const DeviceSpec& d, const std::string& trace_device) {
  const auto want = normalized_device_name(trace_device);
  if (normalized_device_name(d.name) == want) return true;
  for (const auto& alias : d.aliases)
    if (normalized_device_name(alias) == want) return true;
  return false;
}

// A trace whose compute was timed beside collectives already holds their slowdown; a cluster that
// slows compute beside collectives would add it again, so the user says which one counts.
void check_interference_counted_once(const ModelTrace& trace, const std::string& trace_file,
                                     const ClusterSpec& cluster, const std::string& cluster_file) {
  if (!trace.compute_beside_collectives || !cluster.interference.slows_compute()) return;
  const std::string rule = compute_slowdown_arg(cluster.interference);
  throw InputError(trace_file, "$.compute_timed",
                   "compute timed alone for the cluster " + cluster_file +
                       ", which slows compute beside collectives itself (interference.compute_slowdown " + rule +
                       "), but this trace's compute was measured beside NCCL kernels: re-import the profile with "
                       "trace import --compute-slowdown " + rule +
                       " (times each kernel as if alone), or use a copy of the cluster with "
                       "interference.compute_slowdown 1");
}

}  // namespace

std::string compute_slowdown_arg(const InterferenceSpec& interference) {
  if (interference.compute_slowdown_sm_share) return "sm_share";
  std::ostringstream out;
  out << std::setprecision(6) << interference.compute_slowdown;
  return out.str();
}

double compute_divisor(const ModelTrace& trace, const std::string& trace_file, const ClusterSpec& cluster,
                       const std::string& cluster_file, std::optional<double> compute_scale) {
  if (compute_scale) {
    if (!(*compute_scale > 0) || !std::isfinite(*compute_scale))
      throw InputError("", "", "--compute-scale: expected a positive number (trace times are divided by it)");
    return *compute_scale;
  }
  const DeviceSpec& d = cluster.device;
  if (is_cluster_device(d, trace.reference_device)) return 1.0;
  if (d.speedup_reference == "*" ||
      (!d.speedup_reference.empty() &&
       normalized_device_name(d.speedup_reference) == normalized_device_name(trace.reference_device)))
    return d.compute_speedup;
  std::string known = "\"" + d.name + "\"";
  if (!d.speedup_reference.empty()) known += " (compute_speedup is relative to \"" + d.speedup_reference + "\")";
  throw InputError(trace_file, "$.reference_device",
                   "a device the cluster " + cluster_file + " can convert: the trace was timed on \"" +
                       trace.reference_device + "\" but the cluster's device is " + known +
                       "; pass --compute-scale F (trace times are divided by F) or use a trace timed on the cluster's device");
}

ClusterSpec cluster_for_trace(const ModelTrace& trace, const std::string& trace_file, ClusterSpec cluster,
                              const std::string& cluster_file, std::optional<double> compute_scale) {
  check_interference_counted_once(trace, trace_file, cluster, cluster_file);
  cluster.device.compute_speedup = compute_divisor(trace, trace_file, cluster, cluster_file, compute_scale);
  cluster.device.speedup_reference = trace.reference_device;
  return cluster;
}

}  // namespace redsim
