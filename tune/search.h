// The tuner's search (tune/tuner.h), shared by tuner.cpp (planning, simulating, the exhaustive
// search) and guided_search.cpp (calibration, the step model, bracketing along lines).
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "strategies/strategy.h"
#include "tune/parallel.h"
#include "tune/sim_cache.h"
#include "tune/tuner.h"

namespace redsim::tune::detail {

class Search {
 public:
  Search(const ModelTrace& trace, const ClusterSpec& cluster, const TuneOptions& opt, TuneResult& r)
      : trace_(trace), cluster_(cluster), opt_(opt), r_(r), sim_(opt.sim),
        threads_(opt.threads > 0 ? opt.threads : default_threads()) {}

  void prepare(bool keep_compact);
  void adopt_cached();
  void run_exhaustive();
  void run_guided();
  void finish();

 private:
  Plan plan_of(std::size_t point) const {
    const auto& k = r_.grid.points[point].knobs;
    return make_strategy(k.strategy)->plan(trace_, cluster_, k);
  }
  // Simulates the points whose plans have not been simulated yet (each distinct plan once).
  void evaluate(const std::vector<std::size_t>& points, const std::string& phase);
  void report(const std::string& phase, int sims, bool end_of_round = false) {
    if (!opt_.on_progress) return;
    TuneProgress p;
    p.phase = phase;
    p.simulations = sims;
    p.budget = r_.budget;
    p.round = r_.rounds;
    p.end_of_round = end_of_round;
    if (incumbent_) p.best_objective_s = r_.eval(*incumbent_).objective_s;
    std::lock_guard<std::mutex> lock(progress_mu_);
    opt_.on_progress(p);
  }
  void update_incumbent() {
    for (std::size_t p = 0; p < r_.points.size(); ++p)
      if (r_.points[p].fits && r_.evaluated(p) && (!incumbent_ || better(r_, p, *incumbent_))) incumbent_ = p;
  }
  void predict_all();
  struct Proposal {
    double value;
    std::size_t point;
  };
  void propose_on_line(const std::vector<std::size_t>& line, double best_s, double margin, std::vector<Proposal>& out);
  void calibrate();
  bool search_round();  // false: nothing left to simulate
  void add_evaluation(std::size_t point, Evaluation e, std::vector<CollectiveSample> samples);
  ClassMap class_map(std::size_t p) const;
  std::vector<std::uint32_t> classes_of(std::size_t p) const;
  std::vector<std::size_t> calibration_batch(const std::set<std::uint32_t>& known) const;

  const ModelTrace& trace_;
  const ClusterSpec& cluster_;
  const TuneOptions& opt_;
  TuneResult& r_;
  SimOptions sim_;  // with the fidelity resolved
  int threads_;
  std::mutex progress_mu_;
  std::optional<std::size_t> incumbent_;
  std::map<TimingKey, std::size_t> eval_of_key_;
  std::vector<std::vector<CollectiveSample>> samples_;  // per evaluation
  struct Group {
    std::vector<std::size_t> points;  // settings sharing one plan structure
    CompactPlan compact;              // of the first point's plan
    int channels = 1;                 // the first point's channels and algorithm
    Algorithm algorithm = Algorithm::ring;
    bool verify = false;
  };
  std::vector<Group> groups_;
  std::vector<std::size_t> group_of_;  // per point
  std::vector<std::size_t> rep_;       // per point that fits: the first point with its timing key
  std::vector<std::uint64_t> predicted_version_;        // per point: model version of its prediction
  std::map<std::uint32_t, std::uint64_t> class_version_;
};

}  // namespace redsim::tune::detail
