// The executor's clock: CLOCK_MONOTONIC, which every process of one host shares, in seconds.
#pragma once
#include <time.h>

namespace redsim::realexec {

inline double now_s() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Emulated compute: a busy-wait (the thread keeps its core, as a kernel or a CPU op would) that
// ends at start + duration_s on the monotonic clock. Returns the end time.
inline double spin_until(double end_s) {
  double t = now_s();
  while (t < end_s) t = now_s();
  return t;
}

}  // namespace redsim::realexec
