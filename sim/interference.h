// What one device does beside its collectives, applied the same way by both fidelities.
// Interference (core/cluster.h, InterferenceSpec): while a collective runs on the device, compute
// progresses at 1/compute_slowdown of its speed; while compute runs, a collective progresses at
// 1/collective_slowdown. Compute is timed here as a rate; a collective's network part is
// simulated at full speed and the progress it lost beside compute is made up afterwards, at the
// same rate rule. So on an otherwise idle device a collective of D seconds that has compute
// beside it throughout takes D x collective_slowdown, and compute beside a collective throughout
// takes its duration x compute_slowdown. A collective also waits collective_latency_us x the
// fraction of its network part that compute overlapped (on a CPU rank, its threads rescheduled
// onto cores the compute holds), so beside compute throughout it takes that much longer.
// With compute_slowdown_sm_share, compute's rate beside collectives is instead the share of SMs
// their blocks leave, 1 - blocks / device.sm_count, blocks summed over the collectives running
// (one per channel each), at most half the SMs (core/cluster.h, sm_share_taken).
// The jobs a device runs at once share it equally: compute ops on different streams (a comm
// hook's callbacks beside backward), as the exact fidelity's SimGrid host shares its executions,
// and on a CPU rank its collectives' reductions, which Gloo runs on the same cores
// (collectives/reduction_work.h). Two such jobs each progress at half speed.
#pragma once
#include <simgrid/s4u.hpp>
#include <vector>

#include "core/cluster.h"
#include "core/plan.h"

namespace redsim {

class DeviceActivity {
 public:
  DeviceActivity(const InterferenceSpec& spec, int sm_count);

  // A compute op of `work_s` seconds alone: returns when it is done, slowed while a collective
  // runs and sharing the device with its other jobs.
  void run_compute(double work_s);
  // A CPU rank's reductions of `work_s` seconds alone, before a collective's network part.
  void run_reduction(double work_s);
  // Around a collective: begin when it starts (the mark it returns goes to finish); finish after
  // its network part, which makes up the progress lost to compute since begin (itself slowed
  // while compute runs). Several collectives (streams) may run at once.
  struct Mark {
    double busy_s = 0;   // compute's busy time when the collective began
    double start_s = 0;  // when it began
    int blocks = 0;      // the SMs it holds (its channels), under the SM-share rule
  };
  // `channels`: the SMs it holds under the SM-share rule (0 for a collective of one rank, where
  // NCCL runs no channel).
  Mark begin_collective(int channels);
  void finish_collective(Mark mark);

 private:
  double compute_busy_s() const;  // compute's busy time so far, for the overlap of a collective
  double share() const;           // the fraction of the device one job gets now
  double compute_rate() const;    // compute's speed beside the collectives running now (1 = alone)
  bool compute_rate_varies() const { return spec_.compute_slowdown_sm_share || spec_.compute_slowdown != 1.0; }
  // Runs `work_s` at rate(), re-read whenever the device's activity changes, until it is done.
  template <class Rate>
  void run_at_rate(double work_s, Rate rate);
  // Counts a job (compute or reduction) in while `body` runs it; wakes the others when their
  // rate changes.
  template <class Body>
  void as_job(int& counter, Body body);

  InterferenceSpec spec_;
  int sm_count_ = 0;
  int collectives_ = 0;
  int blocks_ = 0;  // SMs the running collectives hold
  int computing_ = 0;
  int reducing_ = 0;
  double busy_before_s_ = 0;  // compute busy time up to busy_since_s_
  double busy_since_s_ = 0;
  simgrid::s4u::MutexPtr mutex_ = simgrid::s4u::Mutex::create();
  simgrid::s4u::ConditionVariablePtr changed_ = simgrid::s4u::ConditionVariable::create();
};

// The SMs a collective's kernel holds: one block per channel, none for a group of one rank.
inline int sm_blocks(const PlanOp& op, int world_size) { return group_ranks(op, world_size) >= 2 ? op.channels : 0; }

}  // namespace redsim
