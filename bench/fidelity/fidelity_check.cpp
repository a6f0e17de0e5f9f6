// bench/fidelity: redsim collective against published nccl-tests tables (tables.json says which
// table, which preset and how the measurement ran). Prints the busbw error per size and a
// summary per size band; the goal bands are below 64 KiB (|error| <= 30%) and from 64 KiB up
// (<= 15%). Presets come from specifications (configs/README.md); nothing here is fitted.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench/fidelity/published_table.h"
#include "collectives/cluster_subset.h"
#include "core/cluster_json.h"
#include "core/error.h"
#include "core/json_in.h"
#include "sim/collective_sweep.h"

using namespace redsim;

namespace {

struct Entry {
  std::string name, csv, column, cluster, algorithm, how;
  OpKind op = OpKind::allreduce;
  int gpus = 1, iters = 20, ranks = 0;
  int nccl_version = 0;  // 0: the cluster file's
};

// nccl-tests' five collectives by redsim's names (allreduce, reduce_scatter, ...).
OpKind op_named(const JsonIn& j) {
  const auto k = nccl_tests_kind_named(j.one_of({"allreduce", "reduce_scatter", "allgather", "broadcast", "reduce"}));
  if (!k) j.fail("a collective");
  return *k;
}

std::vector<Entry> read_manifest(const std::string& file) {
  const auto root = JsonIn::parse_file(file);
  JsonIn j(root, "$", file);
  std::vector<Entry> out;
  for (const auto& t : j.at("tables").items()) {
    t.allow_only({"name", "csv", "column", "cluster", "op", "gpus_per_process", "iters", "algorithm", "ranks", "nccl_version", "how_it_ran"});
    Entry e;
    e.name = t.at("name").nonempty_string();
    e.csv = t.at("csv").nonempty_string();
    e.column = t.at("column").nonempty_string();
    e.cluster = t.at("cluster").nonempty_string();
    if (const auto op = t.find("op")) e.op = op_named(*op);
    e.gpus = static_cast<int>(t.positive_integer_or("gpus_per_process", 1));
    e.iters = static_cast<int>(t.positive_integer_or("iters", 20));  // nccl-tests' default -n
    e.algorithm = t.string_or("algorithm", "auto");
    e.ranks = static_cast<int>(t.positive_integer_or("ranks", 0));
    e.how = t.string_or("how_it_ran", "");
    // The release the table was measured with, where it says: the model lays work out as it did.
    if (const auto v = t.find("nccl_version")) e.nccl_version = nccl_version_from_json(*v);
    out.push_back(e);
  }
  return out;
}

void print_band(const char* label, const fidelity::BandSummary& b, double bound) {
  std::printf("  %-10s %2d rows: max |error| %5.1f%%, median %5.1f%%, within %.0f%%: %d of %d\n", label, b.rows,
              100 * b.max_abs_error, 100 * b.median_abs_error, 100 * bound, b.within, b.rows);
}

void check(const Entry& e, const std::string& root, Fidelity fidelity) {
  const auto measured = fidelity::read_published_table(root + "/" + e.csv, e.column);
  auto full = load_cluster(root + "/" + e.cluster);
  if (e.nccl_version > 0) full.nccl_version = e.nccl_version;
  const auto cluster = cluster_subset(full, e.ranks > 0 ? e.ranks : full.world_size());
  SweepOptions o;
  o.min_bytes = measured.front().size_bytes;
  o.max_bytes = measured.back().size_bytes;
  o.step_factor = 2;
  o.ops = {e.op};
  o.gpus_per_process = e.gpus;
  o.iters = e.iters;
  o.fidelity = fidelity;
  if (e.algorithm != "auto") o.request.algorithm = parse_algorithm(e.algorithm);
  const auto rows = collective_sweep(cluster, o);
  std::vector<fidelity::TableRow> predicted;
  for (const auto& r : rows) predicted.push_back({r.size_bytes, r.busbw_GBps});
  const auto errors = fidelity::compare(measured, predicted);
  std::cout << "\n== " << e.name << "\n   " << op_kind_name(e.op) << ", " << e.cluster << ", -g " << e.gpus << ", -n " << e.iters << ", algorithm " << e.algorithm
            << ", NCCL " << nccl_version_name(cluster.nccl_version) << " model; " << e.how
            << "\n        size   measured  predicted    error   choice\n";
  for (const auto& err : errors) {
    std::string choice;
    for (const auto& r : rows)
      if (r.size_bytes == err.size_bytes)
        choice = choice_label(r);
    std::printf("  %10lld  %9.2f  %9.2f  %+6.1f%%   %s\n", static_cast<long long>(err.size_bytes), err.measured_GBps,
                err.predicted_GBps, 100 * err.error, choice.c_str());
  }
  print_band("< 64 KiB", fidelity::summarize_band(errors, 0, kGoalBandBytes, kSmallBandBound), kSmallBandBound);
  print_band(">= 64 KiB", fidelity::summarize_band(errors, kGoalBandBytes, std::int64_t{1} << 62, kLargeBandBound),
             kLargeBandBound);
}

// Tables measured the same way on the same fabric (cluster file, collective, -g, algorithm), side
// by side: where they lie further apart than the goal's tolerance allows, no model meets it on all.
void print_spread(const std::vector<Entry>& group, const std::string& root) {
  std::vector<std::vector<fidelity::TableRow>> tables;
  for (const auto& e : group) tables.push_back(fidelity::read_published_table(root + "/" + e.csv, e.column));
  const Entry& g = group.front();
  std::cout << "\n== spread: " << op_kind_name(g.op) << " on " << g.cluster << ", -g " << g.gpus << ", algorithm "
            << g.algorithm << ", " << group.size() << " tables\n";
  for (std::size_t i = 0; i < group.size(); ++i) std::cout << "   [" << i + 1 << "] " << group[i].name << "\n";
  std::cout << "        size";
  for (std::size_t i = 0; i < group.size(); ++i) std::printf("  %7s", ("[" + std::to_string(i + 1) + "]").c_str());
  std::cout << "  max/min   busbw within the goal of every table\n";
  int rows = 0, fit = 0;
  for (const double bound : {kSmallBandBound, kLargeBandBound})
    for (const auto& r : fidelity::spread(tables, bound)) {
      if (goal_bound(r.size_bytes) != bound) continue;  // the other band's row
      std::printf("  %10lld", static_cast<long long>(r.size_bytes));
      for (double b : r.busbw_GBps) std::printf("  %7.2f", b);
      std::printf("  %7.2f   ", r.max_GBps / r.min_GBps);
      if (r.one_prediction_fits()) std::printf("%.2f .. %.2f\n", r.lo_GBps, r.hi_GBps);
      else std::printf("none (+-%.0f%%)\n", 100 * bound);
      ++rows;
      fit += r.one_prediction_fits() ? 1 : 0;
    }
  std::printf("  one prediction can meet the goal on all %zu tables at %d of %d sizes\n", group.size(), fit, rows);
}

void spreads(const std::vector<Entry>& entries, const std::string& root) {
  std::vector<bool> done(entries.size(), false);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (done[i]) continue;
    std::vector<Entry> group;
    for (std::size_t j = i; j < entries.size(); ++j) {
      const auto &a = entries[i], &b = entries[j];
      if (a.cluster == b.cluster && a.op == b.op && a.gpus == b.gpus && a.algorithm == b.algorithm && a.ranks == b.ranks)
        group.push_back(b), done[j] = true;
    }
    if (group.size() > 1) print_spread(group, root);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench/fidelity: redsim collective against published nccl-tests tables"};
  std::string root = ".", manifest = "bench/fidelity/tables.json", only, fidelity = "auto";
  app.add_option("--root", root, "the repository root (../shared must be beside it)")->capture_default_str();
  app.add_option("--manifest", manifest, "tables to check, relative to --root")->capture_default_str();
  app.add_option("--only", only, "check only the tables whose name contains this");
  app.add_option("--fidelity", fidelity, "exact|scalable|auto")->capture_default_str();
  bool spread = false;
  app.add_flag("--spread", spread,
               "instead of simulating, set the tables of one setup (cluster file, collective, -g, algorithm) side by side "
               "and say at which sizes one prediction could be within the goal of all of them");
  CLI11_PARSE(app, argc, argv);
  try {
    std::vector<Entry> entries;
    for (const auto& e : read_manifest(root + "/" + manifest))
      if (only.empty() || e.name.find(only) != std::string::npos) entries.push_back(e);
    if (spread)
      spreads(entries, root);
    else
      for (const auto& e : entries) check(e, root, parse_fidelity(fidelity));
  } catch (const InputError& e) {
    std::cerr << "fidelity_check: error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
