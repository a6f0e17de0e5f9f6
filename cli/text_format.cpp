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

}  // namespace redsim::cli
