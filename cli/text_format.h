// Number formatting shared by the subcommands' human-readable output.
#pragma once
#include <string>

namespace redsim::cli {

// printf-style formatting of one number, e.g. fmt("%.3f ms", 1.5).
std::string fmt(const char* format, double v);
// 1.50 MiB, 12.0 KiB, 3 B (binary units).
std::string human_bytes(double bytes);
// Seconds as milliseconds, three decimals: "12.345 ms".
std::string ms(double seconds);

}  // namespace redsim::cli
