// Small pieces every SVG writer here needs: text escaped for XML, and round axis steps.
#pragma once
#include <cstddef>
#include <string>

namespace redsim {

// `s` with &, <, > and " escaped. `ascii_only` replaces other bytes outside printable ASCII with
// '?' (labels that come from input files), and at most `max_chars` input characters are kept.
std::string svg_escape(const std::string& s, bool ascii_only = false, std::size_t max_chars = std::string::npos);

// A round step (1, 2, 2.5 or 5 x a power of ten) giving about six ticks over `range` (> 0).
double svg_nice_step(double range);

}  // namespace redsim
