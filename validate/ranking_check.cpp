#include "validate/ranking_check.h"

namespace redsim {

RankingCheck check_ranking(const std::vector<MeasuredCase>& cases) {
  RankingCheck r;
  for (std::size_t i = 0; i < cases.size(); ++i)
    for (std::size_t j = i + 1; j < cases.size(); ++j) {
      ++r.pairs;
      const auto& a = cases[i];
      const auto& b = cases[j];
      const double dp = a.predicted_s - b.predicted_s, dm = a.measured_median_s - b.measured_median_s;
      if (!((dp < 0 && dm > 0) || (dp > 0 && dm < 0))) continue;
      ++r.flips;
      const bool apart = a.measured_max_s < b.measured_min_s || b.measured_max_s < a.measured_min_s;
      if (apart) ++r.significant_flips;
    }
  return r;
}

}  // namespace redsim
