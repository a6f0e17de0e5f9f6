#include "trace_tools/grad_ready.h"

#include <algorithm>
#include <cmath>

namespace redsim {

double backward_total_s(const ModelTrace& trace) {
  double total = 0;
  for (std::size_t l = trace.layers.size(); l-- > 0;) total += trace.layers[l].backward_s;
  return total;
}

std::vector<GradReady> grad_ready_times(const ModelTrace& trace) {
  // End of each layer's backward: layers run last to first.
  std::vector<double> end(trace.layers.size(), 0.0);
  double t = 0;
  for (std::size_t l = trace.layers.size(); l-- > 0;) {
    t += trace.layers[l].backward_s;
    end[l] = t;
  }
  std::vector<GradReady> out;
  out.reserve(trace.grad_ready_order.size());
  for (auto p : trace.grad_ready_order) out.push_back({p, end[trace.params[p].layer]});
  return out;
}

std::vector<ReadyBin> grad_ready_histogram(const ModelTrace& trace, std::size_t bins) {
  bins = std::max<std::size_t>(bins, 1);
  const double total = backward_total_s(trace);
  std::vector<ReadyBin> out(bins);
  for (std::size_t b = 0; b < bins; ++b) {
    out[b].start_s = total * static_cast<double>(b) / static_cast<double>(bins);
    out[b].end_s = total * static_cast<double>(b + 1) / static_cast<double>(bins);
  }
  for (const auto& g : grad_ready_times(trace)) {
    std::size_t b = 0;
    if (total > 0)
      b = std::min(bins - 1, static_cast<std::size_t>(std::floor(g.ready_s / total * static_cast<double>(bins))));
    ++out[b].tensors;
    out[b].bytes += trace.params[g.param].bytes();
  }
  return out;
}

}  // namespace redsim
