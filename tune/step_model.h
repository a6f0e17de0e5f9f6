// A cheap model of a Plan's step time, calibrated from the simulations the tuner has run.
//
// Every strategy here issues its collectives on one FIFO comm stream, and compute does not
// share the network, so a collective lasts about as long wherever it sits in the step: the step
// is a max-plus evaluation of the Plan's dependency graph once each collective's duration is
// known. The model learns those durations from simulated Timelines (per collective class:
// kind, algorithm and channels; by bytes, interpolated piecewise linearly) and evaluates a
// compact copy of each Plan. The tuner uses it to rank and prune settings; every reported
// number comes from a simulation.
#pragma once
#include <cstdint>
#include <map>
#include <vector>

#include "core/collective_types.h"
#include "core/plan.h"
#include "core/timeline.h"

namespace redsim::tune {

inline constexpr std::uint32_t kComputeClass = 0xffffffffu;

// kind, effective algorithm (reduce, reduce-scatter, allgather and broadcast always run rings)
// and channel count.
std::uint32_t collective_class(const PlanOp& op);

// The Plan reduced to what its timing depends on.
struct CompactPlan {
  struct Op {
    std::uint32_t stream = 0;
    std::uint32_t cls = kComputeClass;
    double value = 0;  // compute: duration in s; collective: bytes
    std::uint32_t dep_begin = 0, dep_count = 0;
  };
  std::vector<Op> ops;
  std::vector<std::uint32_t> deps;
  std::uint32_t streams = 0;
  std::vector<std::uint32_t> classes;  // distinct collective classes, sorted
  double objective_per_end = 1;        // objective = end of the plan x this
  double compute_floor = 0;            // a lower bound of the objective: the compute stream's busy time
};

// objective_samples: the samples per rank the objective counts (batch x world x M); the objective
// is the time of that many samples at the plan's rate.
CompactPlan compact_plan(const Plan& plan, double objective_samples);

// A 128-bit key of everything in a Plan that its simulated timing depends on: plans with equal
// keys simulate identically (names, slices, dtypes and reduce ops do not change the timing).
struct TimingKey {
  std::uint64_t a = 0, b = 0;
  bool operator==(const TimingKey& o) const { return a == o.a && b == o.b; }
  bool operator<(const TimingKey& o) const { return a != o.a ? a < o.a : b < o.b; }
};
TimingKey timing_key(const Plan& plan);

// One observed collective: its class, bytes and duration (latest end over ranks minus start).
struct CollectiveSample {
  std::uint32_t cls = 0;
  std::int64_t bytes = 0;
  double duration_s = 0;
};
std::vector<CollectiveSample> collective_samples(const Plan& plan, const Timeline& timeline);

class CollectiveCostModel {
 public:
  void add(const CollectiveSample& s);
  void finish();  // sorts and averages; call after the adds, before predictions
  bool knows(std::uint32_t cls) const { return curves_.count(cls) > 0; }
  double predict(std::uint32_t cls, std::int64_t bytes) const;

 private:
  struct Point {
    std::int64_t bytes;
    double sum_s;
    int n;
  };
  std::map<std::uint32_t, std::vector<Point>> curves_;
};

// The plans of settings that differ only in channels and algorithm differ only in their
// collectives' channel counts and algorithms: one compact plan serves them all, its classes
// mapped from the setting it was built for (`from`) to another (`to`).
struct ClassMap {
  int channels_from = 0, channels_to = 0;
  Algorithm algorithm_from = Algorithm::ring, algorithm_to = Algorithm::ring;
  std::uint32_t operator()(std::uint32_t cls) const;
};

// Predicted end of the plan (s, whole plan) under the model; classes it does not know cost 0.
double predict_end(const CompactPlan& plan, const CollectiveCostModel& model, const ClassMap& map = {});

}  // namespace redsim::tune
