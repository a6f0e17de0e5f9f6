#include "tests/tune/tune_test_support.h"

#include "tests/test_support.h"

namespace redsim::testing {

TuneProblem comm_bound_star() {
  TuneProblem p;
  p.name = "comm-bound star";
  p.trace = uniform_trace(64, 1 << 16, 2e-5, 4e-5, 1e-4);
  p.cluster = ideal_star(4, 1.25e9, 20e-6);
  p.cluster.collective_launch_us = 50;
  p.axes = tune::standard_axes(p.constraints);
  p.axes.channels = {1, 2, 4};
  return p;
}

TuneProblem mixed_multi_node() {
  TuneProblem p;
  p.name = "mixed multi-node";
  p.trace = uniform_trace(48, 1 << 16, 5e-5, 1e-4, 1e-4);
  for (std::size_t i = 0; i < p.trace.params.size(); i += 3) p.trace.params[i].numel = 1 << 19;
  p.cluster = ideal_multi_node(2, 2, 2e10, 3e-6, 2.5e9, 15e-6);
  p.cluster.collective_launch_us = 30;
  p.constraints.microbatches = 2;
  p.constraints.max_localsgd_period = 4;
  p.axes = tune::standard_axes(p.constraints);
  p.axes.channels = {1, 2, 4};
  return p;
}

}  // namespace redsim::testing
