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

// An NCCL kernel runs one block per channel: its grid's x, or 0 where the profile gives none.
int grid_blocks(const Kernel& k);

// The SM-share rule (core/cluster.h, InterferenceSpec::compute_slowdown_sm_share) on a profile:
// the NCCL kernels of each device with the SMs each held (its grid's blocks).
struct HeldSms {
  double begin_us, end_us;
  int blocks;
};
using HeldByDevice = std::map<std::string, std::vector<HeldSms>>;
HeldByDevice nccl_blocks_by_device(const KinetoEvents& ev);
// Microseconds compute kernel k gave up beside NCCL kernels under the rule: its overlap with each
// times the share of the device's `sm_count` SMs that one's blocks held (at most half).
double sm_share_lost_us(const Kernel& k, const HeldByDevice& held, int sm_count);
// The profile's SMs per device (its "deviceProperties" numSms, alike on every device), or 0 where
// it gives none or they differ.
int profile_sm_count(const nlohmann::json& root);

}  // namespace redsim::kineto
