// How compute and a collective slow each other on this machine's ranks, for redsim calibrate
// (core/cluster.h, InterferenceSpec): every rank at once runs a fixed compute load alone, then a
// collective loop alone, then both together (the collective on a second thread, as DDP's
// communication runs beside backward). The compute load is a blocked single-precision matrix
// multiply on one thread: dense arithmetic with cache traffic, like the convolution and GEMM
// kernels of a training step, not a model's own kernels.
#pragma once
#include <cstdint>
#include <vector>

#include "realexec/backend.h"

namespace redsim::realexec {

// An allreduce loop beside the compute load: its time alone and beside compute.
struct AllreduceBeside {
  std::int64_t bytes = 0;
  double alone_s = 0, beside_s = 0;  // per allreduce
  int beside = 0;                    // allreduces that ended while compute ran
};

struct InterferenceMeasurement {
  double compute_lone_s = 0;  // the load on rank 0 while every other rank waits: one process alone
  // The whole compute load, every rank at once (alone: each rank computing on until all have timed
  // theirs, as ranks sharing a host always are), and beside the large allreduce loop; each the
  // mean over ranks.
  double compute_alone_s = 0, compute_beside_s = 0;
  double compute_alone_slowest_s = 0;  // the slowest rank's time alone (printed: how unequal the ranks' shares are)
  // The lone and every-rank times are the pair (of speed_pairs timed) whose ratio is the median
  // (core/statistics.h median_index); these are the lowest and highest ratio of the pairs
  // (printed: how much the host moved while calibrate measured).
  double rank_speed_low = 0, rank_speed_high = 0;
  int speed_pairs = 0;  // how many pairs were timed (more_speed_pairs)
  // The large allreduce, and a small one whose time beside compute is mostly a delay: together
  // they separate a rate (collective_slowdown) from a fixed delay (collective_latency_s).
  AllreduceBeside large, small;
  // Slowdowns (>= 1 when the other work slows this one; below 1 is noise).
  double compute_slowdown() const { return compute_beside_s / compute_alone_s; }
  // The line through (alone, beside) of the two sizes, beside = g x alone + d: g, at least 1 (and
  // at most 10), and d, at least 0. With only the large size measured, g is its ratio and d 0.
  double collective_slowdown() const;
  double collective_latency_s() const;
  // How fast a rank computes beside its peers against one process alone on the machine (below 1
  // where ranks share cores, as the testbed's namespaces do): --compute-scale for traces captured
  // in a plain process.
  double rank_speed() const { return compute_lone_s / compute_alone_s; }

 private:
  bool two_sizes() const { return small.beside > 0 && large.beside > 0 && large.alone_s > small.alone_s; }
};

// Pairs of (rank 0 alone, every rank at once) that calibrate times the compute load in:
// kSpeedPairs, or kMaxSpeedPairs when the first kSpeedPairs speeds (lone / together) spread over
// more than kSpeedSpread of their median. Of the 16 calibrations of stops 54-57's grids, 14 spread
// 0.4-7.4% and two 19-20%, a busy moment of the host; one of those (0.499-0.602) set a rank speed
// of 0.521 where the model's own four copies ran at 0.48-0.50 in the minutes after
// (bench/validate/README.md, stop 57). More pairs let the median pass such a moment.
inline constexpr int kSpeedPairs = 5;
inline constexpr int kMaxSpeedPairs = 15;
inline constexpr double kSpeedSpread = 0.10;

// Whether to time another pair, given the speeds so far (the same on every rank: each is an agreed
// lone time over a mean over ranks).
bool more_speed_pairs(const std::vector<double>& speeds);

// Collective over every rank; rank 0's figures are the ones reported: its lone time, the compute
// times averaged over ranks, and its allreduce times (a collective ends together on every rank).
// `buf` holds at least `bytes` of backend memory.
InterferenceMeasurement measure_interference(Backend& backend, Communicator& comm, void* buf, std::int64_t bytes,
                                             double target_s);

// The mean over ranks of each rank's `value`, and `value` reduced by `op` over ranks (allreduces:
// every rank gets the result).
double mean_over_ranks(Communicator& comm, Backend& backend, double value);
double reduce_over_ranks(Communicator& comm, Backend& backend, double value, ReduceOp op);

// One unit of the compute load: a 128x128x128 matrix multiply; returns a value that depends
// on every result, so the work cannot be optimised away.
float compute_load_unit(int seed);

}  // namespace redsim::realexec
