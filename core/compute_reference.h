// Which factor turns a trace's compute times into the cluster device's: the trace says the
// device its times were measured or synthesised on, the cluster says its device and what its
// compute_speedup is relative to. A trace that matches neither is refused unless the user states
// the factor (--compute-scale); a silent factor of 3x or 100x is worse than an error.
#pragma once
#include <optional>
#include <string>

#include "core/cluster.h"
#include "core/trace.h"

namespace redsim {

// Device names compare without case, spacing and a leading vendor word ("NVIDIA A100-SXM4-80GB"
// is "A100-SXM4-80GB"), so a torch.cuda.get_device_name() string matches a preset's name.
std::string normalized_device_name(const std::string& name);

// What `trace import --compute-slowdown` takes to time compute alone for this interference:
// "sm_share", or the factor to 6 significant digits.
std::string compute_slowdown_arg(const InterferenceSpec& interference);

// The number trace compute times are divided by on this cluster: 1 when the trace was timed on the
// cluster's device (its name or an alias), the device's compute_speedup when the trace was timed
// on its speedup_reference ("*": any), `compute_scale` when given (it overrides both). Throws
// InputError naming both files and what to do otherwise.
double compute_divisor(const ModelTrace& trace, const std::string& trace_file, const ClusterSpec& cluster,
                       const std::string& cluster_file, std::optional<double> compute_scale);

// The cluster as this trace sees it: device.compute_speedup replaced by compute_divisor() and
// speedup_reference by the trace's device, so planning divides by the right factor.
ClusterSpec cluster_for_trace(const ModelTrace& trace, const std::string& trace_file, ClusterSpec cluster,
                              const std::string& cluster_file, std::optional<double> compute_scale);

}  // namespace redsim
