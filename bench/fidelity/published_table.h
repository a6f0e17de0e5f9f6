// Published nccl-tests bus-bandwidth tables (bench/fidelity/README.md): reading them, and the
// error of a prediction against them per size and per size band.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

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

struct RowError {
  std::int64_t size_bytes = 0;
  double measured_GBps = 0, predicted_GBps = 0;
  double error = 0;  // predicted / measured - 1 (positive: redsim predicts faster)
};

// Errors per size, for the sizes both tables have (rows with no measurable bandwidth skipped).
std::vector<RowError> compare(const std::vector<TableRow>& measured, const std::vector<TableRow>& predicted);

struct BandSummary {
  int rows = 0;
  double max_abs_error = 0;
  double median_abs_error = 0;
  int within = 0;  // rows within the band's bound
};
// Summary of the rows with lo <= size < hi; `bound` is the |error| the goal allows there.
BandSummary summarize_band(const std::vector<RowError>& errors, std::int64_t lo, std::int64_t hi, double bound);

}  // namespace redsim::fidelity
