// A prediction's bus-bandwidth error against nccl-tests measurements, row by row and summarised
// per size band (below 64 KiB, where latency dominates, and from 64 KiB up): the arithmetic
// `redsim collective --compare` and bench/fidelity share.
#pragma once
#include <cstdint>
#include <vector>

namespace redsim {

struct RowError {
  std::int64_t size_bytes = 0;
  double measured_GBps = 0, predicted_GBps = 0;
  double error = 0;  // predicted / measured busbw - 1 (positive: redsim predicts faster)
};

struct BandSummary {
  int rows = 0;
  double max_abs_error = 0;
  double median_abs_error = 0;
  int within = 0;  // rows within the band's bound
};

// Summary of the rows with lo <= size < hi; `bound` is the |error| the goal allows there.
BandSummary summarize_band(const std::vector<RowError>& errors, std::int64_t lo, std::int64_t hi, double bound);

}  // namespace redsim
