// Number formatting shared by the subcommands' human-readable output.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace redsim::cli {

// printf-style formatting of one number, e.g. fmt("%.3f ms", 1.5).
std::string fmt(const char* format, double v);
// 1.50 MiB, 12.0 KiB, 3 B (binary units).
std::string human_bytes(double bytes);
// Seconds as milliseconds, three decimals: "12.345 ms".
std::string ms(double seconds);
// Bytes in MiB, one decimal: "1.5 MiB".
std::string mib(std::int64_t bytes);
// Bytes in GiB, two decimals, no unit (the column header or the line names it): "74.51".
std::string gib(std::int64_t bytes);
// 1234567 -> "1,234,567".
std::string with_commas(std::int64_t v);
// part / whole as "12.5%" (0.0% when whole is 0).
std::string pct(double part, double whole);
// A file name as one word of a POSIX shell command line the user may paste: as is when it holds
// only characters no shell treats specially, else in single quotes, or as bash's $'...' with \xNN
// escapes when it holds control or non-ASCII bytes (never echoed raw to the terminal).
std::string shell_word(const std::string& s);
// s padded with spaces to width, on the right (or on the left, right-aligning it).
std::string pad(std::string s, std::size_t width, bool right = false);

}  // namespace redsim::cli
