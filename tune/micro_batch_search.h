// tune --samples-per-rank S: the micro-batch size searched too. Each batch size the trace was
// measured at (its curve, traces/README.md "Another batch size") that divides S is tuned with
// M = S / micro-batch, and the fastest optimizer step wins, as DeepSpeed's autotuner picks
// train_micro_batch_size_per_gpu. A size with nothing that fits in memory is reported, not fatal.
#pragma once
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/trace.h"
#include "tune/search_space.h"
#include "tune/targets.h"

namespace redsim::tune {

// The searches of every target at one micro-batch size: its trace, M and what they found.
struct MicroBatchSearch {
  ModelTrace trace;
  TuneConstraints c;
  std::vector<TargetSection> sections;
  std::vector<std::string> skipped;  // targets with nothing that fits, when others had something
  std::string failed;                // why nothing was searched at this size ("" = searched)
  double best_s() const;             // the fastest target's best time per optimizer step
};

// Searches every target of one trace under one set of constraints (cmd_tune's search_targets);
// throws InputError when nothing can be searched.
using SearchTargets =
    std::function<std::vector<TargetSection>(const ModelTrace&, const TuneConstraints&, std::vector<std::string>& skipped)>;

// The batch sizes the trace was measured at (its curve, or its own batch) that divide `samples`
// into at most 4096 micro-batches; InputError naming `file` and the JSON path when none does.
// Only measured sizes: between them the curve interpolates, and tune should not pick a size
// nobody timed.
std::vector<std::int64_t> micro_batch_sizes(const ModelTrace& trace, std::int64_t samples, const std::string& file);

// samples == 0: one search of `trace` under `c` as given (InputError passes through). Otherwise one
// search per micro-batch size, its InputError kept as the size's `failed`; `interrupted` runs
// before a failure is recorded (to end a progress line). Each size is announced on stderr.
std::vector<MicroBatchSearch> search_micro_batches(const ModelTrace& trace, std::int64_t samples, const std::string& file,
                                                   const TuneConstraints& c, const SearchTargets& search,
                                                   const std::function<void()>& interrupted);

// The fastest searched size (the smallest on a tie); InputError when none could be searched.
const MicroBatchSearch& fastest(const std::vector<MicroBatchSearch>& runs);

// The "micro-batch size" block of tune's report: one line per size searched, the choice marked.
void print_micro_batches(std::ostream& out, const std::vector<MicroBatchSearch>& runs, const MicroBatchSearch& chosen);

// tuned.json's micro_batch_search: per size its batch, M and best_step_s or not_tuned; the chosen one marked.
nlohmann::json micro_batch_json(const std::vector<MicroBatchSearch>& runs, const MicroBatchSearch& chosen);

}  // namespace redsim::tune
