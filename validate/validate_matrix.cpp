#include "validate/validate_matrix.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

#include "core/join.h"
#include "core/json_in.h"
#include "core/trace.h"
#include "strategies/strategy.h"

namespace redsim {

using nlohmann::json;

namespace {

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

ValidateCase read_case(const JsonIn& c, const ValidateCase& base) {
  c.allow_only({"trace", "cluster", "measured", "ranks", "testbed", "strategy", "bucket_mb", "layout", "batch_size", "label"});
  ValidateCase v = base;
  v.trace_file = c.string_or("trace", v.trace_file);
  v.cluster_file = c.string_or("cluster", v.cluster_file);
  v.measured_file = c.string_or("measured", v.measured_file);
  v.run.testbed = c.string_or("testbed", v.run.testbed);
  if (auto r = c.find("ranks")) {
    const std::int64_t n = r->positive_integer();
    if (n > 65536) r->fail("a rank count from 1 to 65536");
    v.run.ranks = static_cast<int>(n);
  }
  if (auto s = c.find("strategy")) {
    v.knobs.strategy = s->nonempty_string();
    const auto names = strategy_names();
    if (std::find(names.begin(), names.end(), v.knobs.strategy) == names.end())
      s->fail("one of " + join(names, "|"));
  }
  if (auto mb = c.find("bucket_mb")) {
    const double m = mb->number();
    if (!(m > 0) || m > 1024.0 * 1024.0) mb->fail("a positive size in MiB (at most 1 TiB)");
    v.knobs.bucket_cap_bytes = std::llround(m * 1048576.0);
  }
  v.layout = c.string_or("layout", v.layout);
  if (auto b = c.find("batch_size")) {
    v.batch_size = b->positive_integer();
    if (v.batch_size > kMaxBatchSizePerRank) b->fail("a batch size per rank from 1 to 2^24");
  }
  v.label = c.string_or("label", "");
  return v;
}

}  // namespace

std::vector<ValidateCase> read_matrix(const std::string& file, const ValidateCase& base) {
  const json j = JsonIn::parse_file(file);
  const JsonIn root(j, "$", file);
  std::vector<ValidateCase> cases;
  std::set<std::string> labels;
  for (const auto& c : root.nonempty_items()) {
    cases.push_back(read_case(c, base));
    // The table, the JSON and the ranking name cases by label: two alike could not be told apart.
    if (const auto& l = cases.back().label; !l.empty() && !labels.insert(l).second)
      c.at("label").fail("a label that no case before it has");
  }
  return cases;
}

MatrixSummary summarize_matrix(const std::vector<CaseResult>& results) {
  MatrixSummary s;
  std::vector<double> abs_err;
  std::vector<MeasuredCase> ranked;
  for (const auto& r : results) {
    s.fails += r.pass ? 0 : 1;
    abs_err.push_back(std::abs(r.cmp.step_error));
    ranked.push_back({r.cmp.predicted_step_s, r.cmp.measured_step_median_s, r.cmp.measured_step_min_s,
                      r.cmp.measured_step_max_s});
  }
  s.median_abs_error = median_of(abs_err);
  s.max_abs_error = abs_err.empty() ? 0 : *std::max_element(abs_err.begin(), abs_err.end());
  s.ranking = check_ranking(ranked);
  return s;
}

std::string matrix_table(const std::vector<CaseResult>& results, const MatrixSummary& s, double max_error) {
  std::ostringstream table;
  table << "case                                      predicted_ms  measured_ms  min_ms  max_ms  error   verdict\n";
  for (const auto& r : results) {
    char line[256];
    std::snprintf(line, sizeof line, "%-40.40s %13.3f %12.3f %7.3f %7.3f %+6.1f%%  %s\n", r.label.c_str(),
                  r.cmp.predicted_step_s * 1e3, r.cmp.measured_step_median_s * 1e3, r.cmp.measured_step_min_s * 1e3,
                  r.cmp.measured_step_max_s * 1e3, r.cmp.step_error * 100, r.pass ? "pass" : "FAIL");
    table << line;
  }
  table << "median |error| " << fmt("%.1f%%", s.median_abs_error * 100) << ", worst "
        << fmt("%.1f%%", s.max_abs_error * 100) << ", " << s.fails << " of " << results.size()
        << " over --max-error " << fmt("%.1f%%", max_error * 100) << "\n";
  table << "ranking " << (s.ranking.preserved() ? "preserved" : "NOT preserved") << ": " << s.ranking.flips << " of "
        << s.ranking.pairs << " pairs ordered otherwise by the prediction, " << s.ranking.significant_flips
        << " of them between cases the measurement tells apart (min..max ranges apart)\n";
  return table.str();
}

json matrix_to_json(const std::vector<CaseResult>& results, const MatrixSummary& s, double max_error) {
  json all = json::array();
  for (const auto& r : results) {
    json e = r.out;
    e["label"] = r.label;
    all.push_back(std::move(e));
  }
  return {{"format", "redsim-validation-matrix"},
          {"version", 1},
          {"median_abs_error", s.median_abs_error},
          {"max_abs_error", s.max_abs_error},
          {"max_error", max_error},
          {"ranking",
           {{"pairs", s.ranking.pairs},
            {"flips", s.ranking.flips},
            {"significant_flips", s.ranking.significant_flips},
            {"preserved", s.ranking.preserved()}}},
          {"cases", std::move(all)}};
}

}  // namespace redsim
