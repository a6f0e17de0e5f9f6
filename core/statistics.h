// Order statistics of a sample, for the fits and comparisons that summarise many estimates or
// errors by their middle (validate/, trace_tools/, cli/).
#pragma once
#include <cstddef>
#include <vector>

namespace redsim {

// The middle value, or the mean of the two middle values; 0 for an empty sample.
double median_of(std::vector<double> v);

// The index of the middle value (the lower middle of an even count; equal values keep their
// order, so the choice is deterministic); 0 for an empty sample. For picking the measured run a
// median stands for, where median_of would give a value no run had.
std::size_t median_index(const std::vector<double>& v);

// The q-quantile (0 <= q <= 1) by linear interpolation between the sorted values at q (n - 1);
// the sample must not be empty.
double quantile(std::vector<double> v, double q);

}  // namespace redsim
