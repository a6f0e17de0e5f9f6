// A real nccl-tests run (validate/nccl_tests_log.h) simulated as it ran: the same op, sizes, type,
// root, -g and -n (sim/collective_sweep.h). calibrate --from-nccl-tests fits to it, collective
// --compare reports it.
#pragma once
#include <string>
#include <vector>

#include "core/cluster.h"
#include "sim/collective_sweep.h"
#include "validate/nccl_tests_log.h"

namespace redsim::cli {

// How a run is named in tables and charts: "FILE line N: allreduce, 8 ranks (1 x 8), -g 8, -n 20".
std::string run_heading(const NcclTestsRun& run);

// The sweep that repeats `run`: its rows' sizes, its op, type and root, its -g and -n.
SweepOptions sweep_for_run(const NcclTestsRun& run);

// One simulated row per row of `run`, on `layout` (the part of the cluster it ran on). Throws
// InputError naming the log's line when a size holds less than one element per rank.
std::vector<SweepRow> simulate_run(const ClusterSpec& layout, const NcclTestsRun& run, SweepOptions o);

}  // namespace redsim::cli
