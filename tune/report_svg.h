// The tune report: predicted time per optimizer step against bucket size, one line per strategy
// and channel count (the best simulated setting of that pair at each bucket size), the chosen
// point marked. Hand-written SVG, no dependencies.
#pragma once
#include <string>

#include "tune/tune_output.h"
#include "tune/tuner.h"

namespace redsim::tune {

std::string tune_report_svg(const TuneResult& r, const TuneInputs& in);

}  // namespace redsim::tune
