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

// The band arithmetic is validate's (validate/busbw_bands.h), shared with redsim collective --compare.
using redsim::BandSummary;
using redsim::summarize_band;

}  // namespace redsim::fidelity
