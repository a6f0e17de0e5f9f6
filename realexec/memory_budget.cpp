#include "realexec/memory_budget.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace redsim::realexec {
namespace {

std::string gib(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

std::string factor_text(double f) {
  char buf[64];
  if (f < 1.0 && std::fabs(1.0 / f - std::round(1.0 / f)) < 1e-9)
    std::snprintf(buf, sizeof buf, "1/%.0f", 1.0 / f);
  else
    std::snprintf(buf, sizeof buf, "%g", f);
  return buf;
}

}  // namespace

std::optional<std::int64_t> mem_available_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("MemAvailable:", 0) == 0) {
      std::istringstream s(line.substr(13));
      std::int64_t kb = 0;
      if (s >> kb) return kb * 1024;
    }
  }
  return std::nullopt;
}

std::optional<double> parse_buffer_scale(const std::string& text) {
  if (text == "auto") return std::nullopt;
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || !(v > 0) || v > 1 || !std::isfinite(v))
    throw std::invalid_argument("--buffer-scale: expected auto or a factor in (0, 1], got \"" + text + "\"");
  return v;
}

BufferScale decide_buffer_scale(std::optional<double> requested, std::int64_t per_rank_bytes, int ranks_on_host,
                                std::int64_t budget_bytes) {
  const double need = static_cast<double>(per_rank_bytes);
  const double budget = static_cast<double>(budget_bytes);
  const std::string what = std::to_string(ranks_on_host) + " rank(s) x " + gib(need) + " of collective buffers";
  BufferScale s;
  if (requested) {
    s.factor = *requested;
    if (need * s.factor > budget)
      throw std::invalid_argument("--buffer-scale " + factor_text(s.factor) + ": " + what + " scaled by it still need " +
                                  gib(need * s.factor) + " per rank, more than the " + gib(budget) +
                                  " each rank may use here; use a smaller factor or --buffer-scale auto");
    s.reason = s.factor == 1.0 ? "buffers at their traced sizes (--buffer-scale 1)"
                               : "every buffer scaled by " + factor_text(s.factor) + " as requested (--buffer-scale)";
    return s;
  }
  if (need <= budget) {
    s.reason = "buffers at their traced sizes: " + what + " fit in " + gib(budget) + " per rank";
    return s;
  }
  double f = 1.0;
  while (need * f > budget && f > 1e-6) f /= 2;
  if (need * f > budget)
    throw std::invalid_argument(what + " do not fit in " + gib(budget) + " per rank even scaled by " + factor_text(f));
  s.factor = f;
  s.reason = "every buffer scaled by " + factor_text(f) + ": " + what + " do not fit in the " + gib(budget) +
             " per rank available here (" + std::to_string(static_cast<int>(kMemoryHeadroomFraction * 100)) +
             "% of MemAvailable shared by the ranks of this host)";
  return s;
}

}  // namespace redsim::realexec
