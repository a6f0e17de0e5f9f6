// Does a set of predictions order the cases as the measurements do? For redsim validate
// --matrix ("the strategy ranking preserved"): every pair of cases is compared; a pair the
// prediction orders the other way round is a flip, and a flip is significant only when the two
// measurements are told apart by their own spread (their min..max ranges do not overlap) — a
// flip between cases the measurement cannot separate says nothing about the model.
#pragma once
#include <vector>

namespace redsim {

struct MeasuredCase {
  double predicted_s = 0;
  double measured_median_s = 0;
  double measured_min_s = 0;
  double measured_max_s = 0;
};

struct RankingCheck {
  int pairs = 0;              // n (n - 1) / 2
  int flips = 0;              // pairs ordered differently (ties on either side are not flips)
  int significant_flips = 0;  // flips whose measured ranges do not overlap
  bool preserved() const { return significant_flips == 0; }
};

RankingCheck check_ranking(const std::vector<MeasuredCase>& cases);

}  // namespace redsim
