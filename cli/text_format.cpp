#include "cli/text_format.h"

#include <cstdio>

#include "core/units.h"

namespace redsim::cli {

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string human_bytes(double b) {
  if (b >= kGiB) return fmt("%.2f GiB", b / kGiB);
  if (b >= kMiB) return fmt("%.2f MiB", b / kMiB);
  if (b >= kKiB) return fmt("%.1f KiB", b / kKiB);
  return fmt("%.0f B", b);
}

std::string ms(double seconds) { return fmt("%.3f ms", seconds * 1e3); }

std::string mib(std::int64_t bytes) { return fmt("%.1f MiB", static_cast<double>(bytes) / kMiB); }

std::string gib(std::int64_t bytes) { return fmt("%.2f", static_cast<double>(bytes) / kGiB); }

std::string with_commas(std::int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

std::string pct(double part, double whole) { return fmt("%.1f%%", whole > 0 ? 100.0 * part / whole : 0.0); }

std::string pad(std::string s, std::size_t width, bool right) {
  if (s.size() >= width) return s;
  return right ? std::string(width - s.size(), ' ') + s : s + std::string(width - s.size(), ' ');
}

}  // namespace redsim::cli
