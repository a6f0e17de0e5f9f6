#include "cli/text_format.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>

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

std::string shell_word(const std::string& s) {
  const auto plain = [](unsigned char c) { return std::isalnum(c) || (c != 0 && std::strchr("_./+-=:,@%", c) != nullptr); };
  const auto raw = [](unsigned char c) { return c < 0x20 || c >= 0x7f; };
  if (!s.empty() && std::all_of(s.begin(), s.end(), [&](char c) { return plain(static_cast<unsigned char>(c)); }))
    return s;
  if (std::none_of(s.begin(), s.end(), [&](char c) { return raw(static_cast<unsigned char>(c)); })) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
  }
  std::string out = "$'";
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (raw(c)) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += (c == '\'' || c == '\\') ? std::string("\\") + ch : std::string(1, ch);
    }
  }
  return out + "'";
}

}  // namespace redsim::cli
