// Unit constants. Every quantity in redsim carries its unit in its name; these convert.
#pragma once
#include <cstdint>

namespace redsim {

inline constexpr std::int64_t kKiB = 1024;
inline constexpr std::int64_t kMiB = 1024 * kKiB;
inline constexpr std::int64_t kGiB = 1024 * kMiB;
inline constexpr double kUsPerS = 1e6;
inline constexpr double kBytesPerGB = 1e9;   // GB/s figures are decimal, as vendors quote them
inline constexpr double kBitsPerByte = 8.0;

inline constexpr double gbps_to_Bps(double gbps) { return gbps * 1e9 / kBitsPerByte; }
inline constexpr double GBps_to_Bps(double GBps) { return GBps * kBytesPerGB; }
inline constexpr double us_to_s(double us) { return us / kUsPerS; }

}  // namespace redsim
