// One view of several searches (tune --target all): every target's grid points and simulations
// together, for the ranked table and the report plot, so a user sees DDP's buckets beside
// DeepSpeed's and FSDP's settings, not only the fastest framework's search.
#pragma once
#include <vector>

#include "tune/tuner.h"

namespace redsim::tune {

// Points that two searches share (same strategy family and knobs as described) appear once,
// with the first search's state; simulations are re-indexed, and each point stays on one line
// (the first search's that holds it). The ranking is over every simulated point that fits.
// Counts add up (simulations: distinct plans each search ran itself, so a plan shared through
// the cache counts once). Every search must have run at one fidelity (same_fidelity).
TuneResult merged_result(const std::vector<const TuneResult*>& searches);
bool same_fidelity(const std::vector<const TuneResult*>& searches);

}  // namespace redsim::tune
