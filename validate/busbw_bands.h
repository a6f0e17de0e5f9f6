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

// Issue 13's goal bands: below 64 KiB, where latency dominates, |error| within 30%; from 64 KiB up
// within 15%.
inline constexpr std::int64_t kGoalBandBytes = 64 * 1024;
inline constexpr double kSmallBandBound = 0.30, kLargeBandBound = 0.15;
// The bound the goal allows at a size.
inline double goal_bound(std::int64_t size_bytes) { return size_bytes < kGoalBandBytes ? kSmallBandBound : kLargeBandBound; }

// Summary of the rows with lo <= size < hi; `bound` is the |error| the goal allows there.
BandSummary summarize_band(const std::vector<RowError>& errors, std::int64_t lo, std::int64_t hi, double bound);

}  // namespace redsim
