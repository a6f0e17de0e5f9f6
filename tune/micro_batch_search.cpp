#include "tune/micro_batch_search.h"

#include <algorithm>
#include <cstdio>

#include "core/error.h"
#include "core/join.h"
#include "core/trace_batch.h"
#include "tune/tune_output.h"

namespace redsim::tune {

double MicroBatchSearch::best_s() const {
  double best = 0;
  for (const auto& t : sections) best = best == 0 || t.best_s < best ? t.best_s : best;
  return best;
}

std::vector<std::int64_t> micro_batch_sizes(const ModelTrace& t, std::int64_t samples, const std::string& file) {
  const auto measured = t.curve_batch_sizes.empty() ? std::vector<std::int64_t>{t.batch_size_per_rank} : t.curve_batch_sizes;
  std::vector<std::int64_t> sizes;
  std::vector<std::string> names;
  for (const auto b : measured) {
    names.push_back(std::to_string(b));
    if (samples % b == 0 && samples / b <= 4096) sizes.push_back(b);
  }
  if (sizes.empty())
    throw InputError(file, t.curve_batch_sizes.empty() ? "$.batch_size_per_rank" : "$.curve_batch_sizes",
                     "--samples-per-rank " + std::to_string(samples) + ": expected a multiple of a batch size the trace "
                     "was measured at (" + join(names, ", ") + "), at most 4096 of them; capture more sizes with "
                     "redsim_capture.py --batch-sizes");
  return sizes;
}

std::vector<MicroBatchSearch> search_micro_batches(const ModelTrace& trace, std::int64_t samples, const std::string& file,
                                                   const TuneConstraints& c, const SearchTargets& search,
                                                   const std::function<void()>& interrupted) {
  std::vector<MicroBatchSearch> runs;
  if (samples == 0) {
    runs.push_back({trace, c, {}, {}, {}});
    runs.back().sections = search(trace, c, runs.back().skipped);
    return runs;
  }
  const auto sizes = micro_batch_sizes(trace, samples, file);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    MicroBatchSearch r{trace_at_batch(trace, sizes[i], file), c, {}, {}, {}};
    r.c.microbatches = static_cast<int>(samples / sizes[i]);
    std::fprintf(stderr, "tune: micro-batch %lld x %d (%zu of %zu sizes)\n", static_cast<long long>(sizes[i]),
                 r.c.microbatches, i + 1, sizes.size());
    try {
      check_strategies(r.c);
      r.sections = search(r.trace, r.c, r.skipped);
    } catch (const InputError& e) {
      interrupted();
      r.failed = e.what();  // nothing fits at this size, or no family runs with this M
    }
    runs.push_back(std::move(r));
  }
  return runs;
}

const MicroBatchSearch& fastest(const std::vector<MicroBatchSearch>& runs) {
  const MicroBatchSearch* best = nullptr;
  for (const auto& r : runs)
    if (r.failed.empty() && (!best || r.best_s() < best->best_s())) best = &r;
  if (!best) throw InputError("", "", "--samples-per-rank: no micro-batch size could be tuned: " + runs.front().failed);
  return *best;
}

void print_micro_batches(std::ostream& out, const std::vector<MicroBatchSearch>& runs, const MicroBatchSearch& chosen) {
  out << "\nmicro-batch size (samples per rank per step = micro-batch x M):\n";
  for (const auto& r : runs) {
    std::string size = std::to_string(r.trace.batch_size_per_rank) + " x " + std::to_string(r.c.microbatches);
    size.resize(std::max<std::size_t>(size.size() + 1, 10), ' ');
    out << "  " << size << (r.failed.empty() ? format_ms(r.best_s()) + " per step" : r.failed)
        << (&r == &chosen ? "  <- chosen" : "") << "\n";
  }
}

nlohmann::json micro_batch_json(const std::vector<MicroBatchSearch>& runs, const MicroBatchSearch& chosen) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : runs) {
    nlohmann::json e = {{"batch_size_per_rank", r.trace.batch_size_per_rank}, {"microbatches", r.c.microbatches}};
    if (r.failed.empty())
      e["best_step_s"] = r.best_s();
    else
      e["not_tuned"] = r.failed;
    if (&r == &chosen) e["chosen"] = true;
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace redsim::tune
