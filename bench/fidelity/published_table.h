// Published nccl-tests bus-bandwidth tables (bench/fidelity/README.md): reading them, and the
// error of a prediction against them per size and per size band.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "validate/busbw_bands.h"

namespace redsim::fidelity {

struct TableRow {
  std::int64_t size_bytes = 0;
  double busbw_GBps = 0;
};

// Reads a CSV: '#' comment lines, a header naming a size column (`size_bytes`, or `size_label`
// with nccl-tests' rounded labels such as 65K, 132K, 1M, 33M, 2G, each the power of two it
// rounds) and the busbw columns; returns the rows of `column`. Throws InputError with the file
// and line on anything else.
std::vector<TableRow> read_published_table(const std::string& file, const std::string& column);

// The power of two nccl-tests rounded to `label` ("65K" -> 65536, "1M" -> 1048576); throws
// InputError if the label is not one.
std::int64_t size_of_label(const std::string& label);

// Errors per size, for the sizes both tables have (rows with no measurable bandwidth skipped).
std::vector<redsim::RowError> compare(const std::vector<TableRow>& measured, const std::vector<TableRow>& predicted);

// How far apart several tables of one setup are at one size. A prediction x is within `tolerance`
// of a table's busbw a when |x / a - 1| <= tolerance, i.e. x in [a (1 - t), a (1 + t)]; one x can
// be within it of every table only if those intervals meet: max (1 - t) <= min (1 + t).
struct SpreadRow {
  std::int64_t size_bytes = 0;
  std::vector<double> busbw_GBps;  // each table's, in the order given
  double min_GBps = 0, max_GBps = 0;
  double lo_GBps = 0, hi_GBps = 0;  // the predictions within tolerance of every table (lo > hi: none)
  bool one_prediction_fits() const { return lo_GBps <= hi_GBps; }
};

// The sizes every table has with a measurable bandwidth (rows printed as 0 skipped), in size order.
std::vector<SpreadRow> spread(const std::vector<std::vector<TableRow>>& tables, double tolerance);

// The band arithmetic is validate's (validate/busbw_bands.h), shared with redsim collective --compare.
using redsim::BandSummary;
using redsim::summarize_band;

}  // namespace redsim::fidelity
