// When each gradient becomes ready in backward, by the trace's own rule: a parameter's gradient
// is ready when its owning layer's backward ends, and backward runs the layers in reverse
// forward order starting at time 0. Used by `redsim trace show` for its histogram.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/trace.h"

namespace redsim {

struct GradReady {
  std::size_t param = 0;  // index into ModelTrace::params
  double ready_s = 0;     // from the start of backward
};

// Every trainable parameter, in trace.grad_ready_order.
std::vector<GradReady> grad_ready_times(const ModelTrace& trace);

// Total backward time: the sum of every layer's backward_s.
double backward_total_s(const ModelTrace& trace);

struct ReadyBin {
  double start_s = 0, end_s = 0;  // [start, end); the last bin also holds end
  std::size_t tensors = 0;
  std::int64_t bytes = 0;
};

// `bins` equal bins over [0, backward_total_s]; a time t falls in bin
// min(bins - 1, floor(t / total * bins)) (all in bin 0 when the total is 0).
std::vector<ReadyBin> grad_ready_histogram(const ModelTrace& trace, std::size_t bins);

}  // namespace redsim
