// The SimGrid engine: interprets a Plan on a cluster and returns the simulated Timeline.
// Exact fidelity: every point-to-point transfer of every collective algorithm is simulated.
#pragma once
#include "core/cluster.h"
#include "core/plan.h"
#include "core/timeline.h"

namespace redsim {

struct SimOptions {
  bool sim_log = false;  // let SimGrid print its own log (silenced by default)
};

// Checks the Plan is one this engine can run (supported collectives, well-formed dependencies);
// throws InputError otherwise. simulate() calls it first.
void check_plan_for_sim(const Plan& plan, const ClusterSpec& cluster);

// Runs the simulation in a child process: SimGrid 3.32 allows one Engine per process, and a
// child per simulation lets callers (tests, the tuner) simulate many times, also in parallel.
Timeline simulate(const Plan& plan, const ClusterSpec& cluster, const SimOptions& options = {});

// The simulation itself, in this process. Callable once per process.
Timeline simulate_in_process(const Plan& plan, const ClusterSpec& cluster, const SimOptions& options);

}  // namespace redsim
