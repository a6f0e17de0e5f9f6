// From every rank's raw step records to one measured Timeline.
//
// Each rank reports, per measured step, when it left the step barrier (its origin) and the
// absolute monotonic ready/start/end of every op. Rank 0 gathers the reports through the store
// and aligns them: when every rank ran on one host (same host name and boot id) the clock is
// shared, and every step's times are taken from the earliest origin of that step; otherwise
// each rank's times are taken from its own origin (the barrier makes the origins agree to
// within the barrier's skew). A collective's start_s is, as in the simulator, the moment the
// last rank issued it (never after this rank's end); with per-rank clocks it is the rank's own
// issue time. The step time of a step is the latest end of any op on any rank; the reported
// Timeline is the median step's.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/plan.h"
#include "core/timeline.h"
#include "realexec/executor.h"

namespace redsim::realexec {

struct RankReport {
  int rank = 0;
  std::string host;  // host name and boot id: equal strings mean a shared CLOCK_MONOTONIC
  std::vector<StepRecord> steps;  // measured steps, warm-up excluded
  std::int64_t buffers_checked = 0;  // over every step, warm-up included
  HeldMemory held;                   // what the rank's executor allocated
  double state_scale = 1.0;          // the factor its model state was held at (rank_runner.cpp)
  std::int64_t peak_rss_bytes = 0;   // the rank process's peak resident memory, after its steps
};

std::vector<char> serialize_report(const RankReport& report);
// Throws std::runtime_error for a malformed or mismatching report.
RankReport deserialize_report(const std::vector<char>& bytes, std::size_t op_count);

// "hostname/boot_id" of this machine.
std::string host_identity();

struct Measured {
  Timeline timeline;               // the median step, seconds from its origin
  // Every measured execution of the plan, in order, per training step: a plan covering several
  // (LocalSGD's H) is timed whole and divided by them, as the simulator's summary is.
  std::vector<double> step_times_s;
  int median_step = 0;             // index into step_times_s
  bool shared_clock = true;
  std::vector<std::string> hosts;  // distinct host identities
  std::int64_t buffers_checked = 0;  // over all ranks and steps
  std::vector<HeldMemory> held;             // per rank, as its executor allocated
  std::vector<std::int64_t> peak_rss_bytes;  // per rank process
  std::vector<double> state_scale;           // per rank: its model state's factor
};

// reports: one per rank, in rank order. Throws std::invalid_argument if any is missing or
// holds a different number of steps or ops.
Measured assemble(const Plan& plan, const std::vector<RankReport>& reports);

// The Timeline of one measured step (index into the steps), aligned as described above.
Timeline step_timeline(const Plan& plan, const std::vector<RankReport>& reports, std::size_t step, bool shared_clock);

}  // namespace redsim::realexec
