// The executor's clock: CLOCK_MONOTONIC, which every process of one host shares, in seconds.
#pragma once
#include <time.h>

namespace redsim::realexec {

inline double now_s() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Emulated compute: ends at end_s on the monotonic clock. It sleeps until kComputeSpinTail_s
// before the end, then spins for precision. The traced durations are a device's (a GPU's
// kernels), which leave the host's cores to the communication threads; spinning through them
// where a host runs more ranks than it has cores (the testbed: 4 ranks on 2 cores) starved
// Gloo's threads and made every op overshoot its end by a scheduling quantum (ResNet-50 with 4
// micro-batches ran 160 ms a step slower than its traced compute). Returns the end time.
inline constexpr double kComputeSpinTail_s = 200e-6;

inline double spin_until(double end_s) {
  double t = now_s();
  if (end_s - t > kComputeSpinTail_s) {
    const double wake = end_s - kComputeSpinTail_s;
    timespec ts{};
    ts.tv_sec = static_cast<time_t>(wake);
    ts.tv_nsec = static_cast<long>((wake - static_cast<double>(ts.tv_sec)) * 1e9);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) != 0) {
    }
    t = now_s();
  }
  while (t < end_s) t = now_s();
  return t;
}

}  // namespace redsim::realexec
