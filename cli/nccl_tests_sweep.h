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

// The channels NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS gave the run's communicator on `layout`
// (graph/connect.cc: the minimum clamped to [0, MAXCHANNELS], the maximum to [1, MAXCHANNELS],
// MAXCHANNELS 32 to 2.24 and 64 from 2.25;
// the topology's channels cut to the maximum, then copied up to the minimum); 0 when the log sets
// neither or they do not bind, so that NCCL's own count stands.
int logged_channels(const ClusterSpec& layout, const NcclTestsRun& run);

// Why NCCL sets `request`'s NCCL_ALGO list aside on `layout` (nccl_algo_pin.h's
// ignored_list_reason), for a "note:" line; "" when it does not, or the collectives are ideal.
std::string ignored_list_note(const ClusterSpec& layout, const CollectiveRequest& request);

// One simulated row per row of `run`, on `layout` (the part of the cluster it ran on), on the
// channels the log's bounds give when `o` pins none. Throws
// InputError naming the log's line when a size holds less than one element per rank.
std::vector<SweepRow> simulate_run(const ClusterSpec& layout, const NcclTestsRun& run, SweepOptions o);

}  // namespace redsim::cli
