#include "validate/busbw_bands.h"

#include <algorithm>
#include <cmath>

#include "core/statistics.h"

namespace redsim {

BandSummary summarize_band(const std::vector<RowError>& errors, std::int64_t lo, std::int64_t hi, double bound) {
  BandSummary s;
  std::vector<double> abs_err;
  for (const auto& e : errors) {
    if (e.size_bytes < lo || e.size_bytes >= hi) continue;
    const double a = std::fabs(e.error);
    abs_err.push_back(a);
    s.max_abs_error = std::max(s.max_abs_error, a);
    if (a <= bound) ++s.within;
  }
  s.rows = static_cast<int>(abs_err.size());
  s.median_abs_error = median_of(std::move(abs_err));
  return s;
}

}  // namespace redsim
