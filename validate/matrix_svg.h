// validate --matrix's plot: predicted against measured step time per case, with labelled ticks on
// both axes, a title, each case's label beside its point, the y = x line and the +-max-error band
// (a case inside the band passes).
#pragma once
#include <string>
#include <vector>

#include "validate/validate_case.h"
#include "validate/validate_matrix.h"

namespace redsim {

std::string matrix_scatter_svg(const std::vector<CaseResult>& results, const MatrixSummary& summary, double max_error);

}  // namespace redsim
