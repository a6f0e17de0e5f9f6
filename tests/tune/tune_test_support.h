// Small tuning problems for the tune tests: synthetic traces on ideal clusters, each simulation a
// few milliseconds.
#pragma once
#include <string>

#include "core/cluster.h"
#include "core/trace.h"
#include "tune/search_space.h"

namespace redsim::testing {

struct TuneProblem {
  std::string name;
  ModelTrace trace;
  ClusterSpec cluster;
  tune::TuneConstraints constraints;
  tune::SearchAxes axes;
};

// Comm-bound: 64 small layers (256 KiB of gradients each) on 4 single-device nodes at 10 Gb/s;
// bucket size trades launch overhead against overlap.
TuneProblem comm_bound_star();
// Mixed parameter sizes on 2 nodes x 2 devices, 2 micro-batches, LocalSGD up to 4 steps.
TuneProblem mixed_multi_node();

}  // namespace redsim::testing
