#include "tune/model_error.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

namespace redsim::tune {

std::vector<ModelErrorRow> step_model_error(const std::vector<const TuneResult*>& results) {
  std::vector<ModelErrorRow> rows;
  std::map<std::string, std::size_t> row_of;
  for (const auto* r : results) {
    std::set<std::size_t> seen;  // evaluations, each once: settings sharing a plan share it
    for (std::size_t p = 0; p < r->points.size(); ++p) {
      if (!r->evaluated(p) || !seen.insert(*r->points[p].evaluation).second) continue;
      const Evaluation& e = r->eval(p);
      if (!e.estimate_s || e.objective_s <= 0) continue;
      const std::string& family = r->candidate(p).family;
      auto [it, fresh] = row_of.try_emplace(family, rows.size());
      if (fresh) rows.push_back(ModelErrorRow{family});
      ModelErrorRow& row = rows[it->second];
      const double err = (*e.estimate_s - e.objective_s) / e.objective_s;
      const double corrected = e.corrected_estimate_s ? (*e.corrected_estimate_s - e.objective_s) / e.objective_s : err;
      ++row.settings;
      row.mean_abs_error += std::abs(err);
      row.mean_signed_error += err;
      row.corrected_mean_abs_error += std::abs(corrected);
      if (std::abs(err) >= row.max_abs_error) {
        row.max_abs_error = std::abs(err);
        row.worst_estimate_s = *e.estimate_s;
        row.worst_simulated_s = e.objective_s;
      }
    }
  }
  for (auto& row : rows) {
    row.mean_abs_error /= row.settings;
    row.mean_signed_error /= row.settings;
    row.corrected_mean_abs_error /= row.settings;
  }
  return rows;
}

nlohmann::json step_model_error_json(const std::vector<ModelErrorRow>& rows) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& r : rows)
    j.push_back({{"strategy", r.family},
                 {"settings", r.settings},
                 {"mean_abs_error_pct", 100 * r.mean_abs_error},
                 {"max_abs_error_pct", 100 * r.max_abs_error},
                 {"mean_signed_error_pct", 100 * r.mean_signed_error},
                 {"corrected_mean_abs_error_pct", 100 * r.corrected_mean_abs_error},
                 {"worst_estimate_s", r.worst_estimate_s},
                 {"worst_simulated_s", r.worst_simulated_s}});
  return j;
}

void print_step_model_error(std::ostream& out, const std::vector<ModelErrorRow>& rows) {
  if (rows.empty()) return;
  out << "\nstep model vs simulation (guided search; error = (estimate - simulated) / simulated):\n"
      << "  strategy    settings  mean |err|  max |err|  mean err  corrected mean |err|  worst: estimate -> simulated\n";
  for (const auto& r : rows) {
    char line[240];
    std::snprintf(line, sizeof line, "  %-10s %9d %10.1f%% %9.1f%% %+8.1f%% %20.1f%%  %.3f ms -> %.3f ms\n",
                  r.family.c_str(), r.settings, 100 * r.mean_abs_error, 100 * r.max_abs_error, 100 * r.mean_signed_error,
                  100 * r.corrected_mean_abs_error, r.worst_estimate_s * 1e3, r.worst_simulated_s * 1e3);
    out << line;
  }
}

}  // namespace redsim::tune
