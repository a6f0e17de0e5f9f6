// Whether the traced gradient buffers fit this machine, and by what factor to scale them if not.
// Nothing is shrunk silently: the decision carries its reason, which the run prints and records.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace redsim::realexec {

// MemAvailable from /proc/meminfo, in bytes; nullopt if it cannot be read.
std::optional<std::int64_t> mem_available_bytes();

// The share of available memory buffers may use: the rest is headroom for the OS, the
// transport's staging buffers and the page cache.
inline constexpr double kMemoryHeadroomFraction = 0.75;

struct BufferScale {
  double factor = 1.0;  // every collective buffer's element count is multiplied by this
  std::string reason;   // one line: why this factor (printed and written into the result)
};

// requested: nullopt for "auto" (1 if the buffers fit, else the largest 2^-k that fits), or an
// explicit factor in (0, 1]. per_rank_bytes: the unscaled collective-buffer bytes one rank
// allocates (the model state takes what is left: rank_runner.cpp);
// budget_bytes: what one rank may use. Throws std::invalid_argument (with a one-line message)
// if an explicit factor does not fit or the buffers cannot fit at any sensible scale.
BufferScale decide_buffer_scale(std::optional<double> requested, std::int64_t per_rank_bytes, int ranks_on_host,
                                std::int64_t budget_bytes);

// "auto" or a number in (0, 1]; throws std::invalid_argument otherwise.
std::optional<double> parse_buffer_scale(const std::string& text);

}  // namespace redsim::realexec
