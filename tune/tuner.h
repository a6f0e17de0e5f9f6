// redsim tune: searches the knob grid (tune/search_space.h) for the setting with the shortest
// predicted time per optimizer step, under the constraints.
//
// Two methods share one evaluator (plan, simulate, summarise; memoised by the Plan's timing key,
// run in parallel):
//  - exhaustive: simulates every point of the grid that fits in memory. The reference.
//  - guided (default): calibrates a step model (tune/step_model.h) from a first simulation per
//    collective class, then searches each line of the grid (the points that differ only in
//    bucket size; step time is close to unimodal along it) by bracketing: it simulates the
//    model's best unsimulated point on each side of the line's best simulated point until both
//    neighbours of that point are simulated (a local refinement), and prunes a line, or a side
//    of it, once its compute floor or its predicted best (corrected by what the line's own
//    simulations showed) cannot beat the incumbent by the prune margin. Rounds of at most
//    kRoundSize simulations run in parallel; every decision is taken between rounds from
//    results kept in canonical order, so the outcome does not depend on which simulation
//    finishes first, nor on the number of threads.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/cluster.h"
#include "core/plan.h"
#include "core/trace.h"
#include "sim/sim_engine.h"
#include "tune/search_space.h"
#include "tune/step_model.h"

namespace redsim::tune {

class SimCache;  // tune/sim_cache.h

enum class SearchMethod { guided, exhaustive };
std::string_view search_method_name(SearchMethod m);

inline constexpr int kRoundSize = 8;  // simulations per round of the guided search

// What a simulation of one point says (the objective and the summary's breakdown).
struct Evaluation {
  double objective_s = 0;  // time of one optimizer step: M micro-batches on every rank
  double step_time_s = 0;  // the plan's step (per step of a LocalSGD window; M micro-batches for accumulate)
  double compute_time_s = 0;
  double comm_time_s = 0;
  double exposed_comm_s = 0;
  double time_per_sample_s = 0;
  std::int64_t bytes_sent_per_rank = 0;
  int steps_in_plan = 1;
  // Guided search: the step model's estimate of this setting just before it was simulated (raw,
  // and corrected by its line's nearest simulated point), to report the model's error.
  std::optional<double> estimate_s;
  std::optional<double> corrected_estimate_s;
};

struct PointState {
  RankMemory memory;
  bool fits = true;  // memory.total_bytes() <= the limit (or no limit)
  TimingKey key;
  double compute_floor_s = 0;                  // lower bound of the objective
  std::optional<std::size_t> evaluation;       // index into TuneResult::evaluations
  std::optional<double> predicted_s;           // the step model's last prediction (guided)
  // ... corrected by the residual of the nearest simulated setting of its line: what the search
  // compared with the incumbent (guided, settings that fit).
  std::optional<double> model_s;
};

struct TuneProgress {
  std::string phase;  // "planning", "calibrating", "searching", "simulating"
  int simulations = 0;
  int budget = 0;     // simulations allowed (guided) or planned (exhaustive)
  std::optional<double> best_objective_s;
  int round = 0;
  bool end_of_round = false;  // false: a simulation finished
};

inline SimOptions default_sim_options() {
  SimOptions o;
  o.fidelity = Fidelity::auto_select;
  return o;
}

struct TuneOptions {
  SearchMethod method = SearchMethod::guided;
  int threads = 0;             // 0: std::thread::hardware_concurrency()
  double prune_margin = 0.01;  // guided: keep a candidate the model predicts within this fraction of the incumbent
  int max_simulations = 0;     // guided: 0 = 15% of the grid points that fit, at least 24
  // exhaustive: skip settings whose compute floor (a lower bound of their time) exceeds this,
  // e.g. a time some setting is known to reach: the optimum is unchanged (branch and bound).
  std::optional<double> exhaustive_bound_s;
  // The engine's options. fidelity auto is resolved once for the whole search (scalable if any
  // point of the grid needs it, else exact), so that every point is simulated alike.
  SimOptions sim = default_sim_options();
  // Simulations shared with other searches of the same trace and cluster (tune --target all):
  // adopted before searching, added to after each round. Empty: none shared.
  std::shared_ptr<SimCache> cache;
  // Called (serialised) after each simulation and each round; may be empty.
  std::function<void(const TuneProgress&)> on_progress;
};

struct TuneResult {
  SearchMethod method = SearchMethod::guided;
  Grid grid;
  std::int64_t memory_limit_bytes = 0;  // 0 = none
  double objective_samples = 0;         // samples per rank... x world: batch x world x M
  std::vector<PointState> points;       // per grid point
  std::vector<Evaluation> evaluations;  // per distinct simulated plan, in simulation order
  std::vector<std::size_t> ranking;     // simulated points that fit, best first
  std::size_t best = 0;                 // == ranking.front()
  int simulations = 0;                  // distinct plans simulated by this search
  int reused = 0;                       // distinct plans whose simulation came from TuneOptions::cache
  std::size_t feasible_points = 0;      // grid points that fit in memory
  int budget = 0;                       // guided: the simulation budget
  std::size_t bounded_out = 0;          // exhaustive with a bound: settings skipped by it
  bool budget_exhausted = false;
  int rounds = 0;
  Fidelity fidelity = Fidelity::exact;  // the fidelity every simulation used

  bool evaluated(std::size_t point) const { return points[point].evaluation.has_value(); }
  const Evaluation& eval(std::size_t point) const { return evaluations.at(*points[point].evaluation); }
  const Candidate& candidate(std::size_t point) const { return grid.points[point]; }
};

// Orders simulated points: objective, then memory per rank, then canonical grid order.
bool better(const TuneResult& r, std::size_t a, std::size_t b);

// The unsimulated setting of a family that fits and that the step model rates best (guided
// search only), with its corrected prediction (PointState::model_s).
std::optional<std::pair<std::size_t, double>> best_predicted(const TuneResult& r, const std::string& family);

TuneResult autotune(const ModelTrace& trace, const ClusterSpec& cluster, const TuneConstraints& constraints,
                const SearchAxes& axes, const TuneOptions& options);

}  // namespace redsim::tune
