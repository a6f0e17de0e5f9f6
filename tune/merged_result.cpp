#include "tune/merged_result.h"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <string>

#include "tune/search_space.h"

namespace redsim::tune {
namespace {

std::string identity(const Candidate& c) { return c.family + "|" + describe_knobs(c); }

// Appends r's points not yet in `out` (by identity); returns each of r's points' index in `out`.
std::vector<std::size_t> add_points(const TuneResult& r, TuneResult& out, std::map<std::string, std::size_t>& seen) {
  std::vector<std::size_t> index(r.grid.points.size());
  for (std::size_t p = 0; p < r.grid.points.size(); ++p) {
    auto [it, fresh] = seen.emplace(identity(r.grid.points[p]), out.grid.points.size());
    index[p] = it->second;
    if (!fresh) continue;
    PointState s = r.points[p];
    if (s.evaluation) {
      s.evaluation = out.evaluations.size();
      out.evaluations.push_back(r.eval(p));
    }
    out.grid.points.push_back(r.grid.points[p]);
    out.grid.line_of.push_back(0);  // set with the lines below
    out.points.push_back(std::move(s));
  }
  return index;
}

}  // namespace

bool same_fidelity(const std::vector<const TuneResult*>& searches) {
  return std::all_of(searches.begin(), searches.end(), [&](const TuneResult* r) { return r->fidelity == searches.front()->fidelity; });
}

TuneResult merged_result(const std::vector<const TuneResult*>& searches) {
  if (searches.empty()) throw std::logic_error("merged_result: no search");
  TuneResult out;
  const TuneResult& first = *searches.front();
  out.method = first.method;
  out.memory_limit_bytes = first.memory_limit_bytes;
  out.objective_samples = first.objective_samples;
  out.fidelity = first.fidelity;
  std::map<std::string, std::size_t> seen;
  std::set<std::size_t> on_line;
  std::set<std::string> notes;
  for (const auto* r : searches) {
    if (r->fidelity != out.fidelity)
      throw std::logic_error("merged_result: searches at different fidelities do not compare");
    const auto index = add_points(*r, out, seen);
    // Each point on one line: a line keeps the points no earlier line holds.
    for (const auto& line : r->grid.lines) {
      std::vector<std::size_t> mapped;
      for (auto p : line)
        if (on_line.insert(index[p]).second) mapped.push_back(index[p]);
      if (mapped.empty()) continue;
      for (auto p : mapped) out.grid.line_of[p] = out.grid.lines.size();
      out.grid.lines.push_back(std::move(mapped));
    }
    for (const auto& n : r->grid.notes)
      if (notes.insert(n).second) out.grid.notes.push_back(n);
    out.simulations += r->simulations;
    out.budget += r->budget;
    out.bounded_out += r->bounded_out;
    out.budget_exhausted = out.budget_exhausted || r->budget_exhausted;
    out.rounds += r->rounds;
  }
  for (std::size_t p = 0; p < out.points.size(); ++p) {
    out.feasible_points += out.points[p].fits ? 1 : 0;
    if (out.points[p].fits && out.points[p].evaluation) out.ranking.push_back(p);
  }
  std::sort(out.ranking.begin(), out.ranking.end(), [&](std::size_t a, std::size_t b) { return better(out, a, b); });
  if (out.ranking.empty()) throw std::logic_error("merged_result: nothing simulated fits");
  out.best = out.ranking.front();
  return out;
}

}  // namespace redsim::tune
