// How much of a kernel's time another kind of kernel ran beside it on the same device: the union
// of one kind's kernels per device, and a span's overlap with it. For the profile fit
// (profile_fit.h) and for taking interference out of an imported trace (kineto_import.h).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "trace_tools/kineto_events.h"

namespace redsim::kineto {

struct Interval {
  double begin_us, end_us;
};
using Busy = std::vector<Interval>;  // sorted, disjoint

// Per device (a kernel span's pid): when NCCL kernels (nccl = true) or compute kernels ran.
std::map<std::string, Busy> busy_by_device(const KinetoEvents& ev, bool nccl);

// Microseconds of [begin_us, end_us) that `busy` covers.
double overlap_us(const Busy& busy, double begin_us, double end_us);

// The fraction of kernel k's time the other kind ran beside it (0 for a kernel of no time).
double overlap_fraction(const Kernel& k, const std::map<std::string, Busy>& other_by_device);

}  // namespace redsim::kineto
