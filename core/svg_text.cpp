#include "core/svg_text.h"

#include <cmath>

namespace redsim {

std::string svg_escape(const std::string& s, bool ascii_only, std::size_t max_chars) {
  std::string o;
  std::size_t n = 0;
  for (char ch : s) {
    if (n++ == max_chars) break;
    const auto c = static_cast<unsigned char>(ch);
    if (c == '&') o += "&amp;";
    else if (c == '<') o += "&lt;";
    else if (c == '>') o += "&gt;";
    else if (c == '"') o += "&quot;";
    else if (ascii_only && (c < 0x20 || c >= 0x7f)) o += '?';
    else o += ch;
  }
  return o;
}

double svg_nice_step(double range) {
  const double raw = range / 6;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (raw <= m * mag) return m * mag;
  return 10 * mag;
}

}  // namespace redsim
