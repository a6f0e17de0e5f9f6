// validate --matrix: many cases from a JSON array, each overriding the command line's case, run
// one after another; then the table, the verdict over all of them and whether the prediction
// ranks the cases as the measurements do (validate/ranking_check.h).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "validate/ranking_check.h"
#include "validate/validate_case.h"

namespace redsim {

// A JSON array of objects with any of trace, cluster, measured, ranks, testbed, strategy,
// bucket_mb, layout, batch_size and label; what a case leaves out is the base case's. InputError
// naming the file and JSON path for anything else.
std::vector<ValidateCase> read_matrix(const std::string& file, const ValidateCase& base);

struct MatrixSummary {
  double median_abs_error = 0;
  double max_abs_error = 0;
  int fails = 0;  // cases beyond max_error
  RankingCheck ranking;
};
MatrixSummary summarize_matrix(const std::vector<CaseResult>& results);

// The text table (one row per case, then the summary and the ranking lines).
std::string matrix_table(const std::vector<CaseResult>& results, const MatrixSummary& summary, double max_error);
// The redsim-validation-matrix report: the summary and every case's redsim-validation.
nlohmann::json matrix_to_json(const std::vector<CaseResult>& results, const MatrixSummary& summary, double max_error);
// Predicted against measured step time, one point per case, the diagonal dashed.

}  // namespace redsim
