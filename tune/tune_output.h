// What redsim tune writes: tuned.json (the chosen knobs under "knobs", which redsim
// simulate|run|validate --config read), the ranked table on stdout, and the memory exclusions.
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/cluster.h"
#include "core/trace.h"
#include "tune/tuner.h"

namespace redsim::tune {

struct TuneInputs {
  std::string trace_file;
  std::string cluster_file;
  const ModelTrace* trace = nullptr;
  const ClusterSpec* cluster = nullptr;
  TuneConstraints constraints;
};

// Settings left out for memory, grouped by family (and ZeRO stage), with the numbers.
struct ExclusionGroup {
  std::string family;
  int zero_stage = 0;  // zero only
  std::size_t excluded = 0;
  std::size_t total = 0;
  RankMemory least;  // the smallest requirement among the excluded
  RankMemory most;
  std::string reason;  // one line, with the numbers
};
std::vector<ExclusionGroup> exclusion_groups(const TuneResult& r);

// The simulated points with distinct plans after the best, best first (at most n).
std::vector<std::size_t> runners_up(const TuneResult& r, std::size_t n);
// Per family (canonical order): its best simulated point, if any.
std::vector<std::pair<std::string, std::optional<std::size_t>>> best_per_family(const TuneResult& r);

nlohmann::json tuned_json(const TuneResult& r, const TuneInputs& in);

// wall_s < 0: not shown.
void print_ranked_table(std::ostream& out, const TuneResult& r, const TuneInputs& in, int top_per_strategy, double wall_s,
                        int threads);

std::string format_ms(double s);          // "12.345 ms"

}  // namespace redsim::tune
