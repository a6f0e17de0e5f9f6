// redsim tune: search the knob space in simulation and write the best setting (tuned.json, a
// ranked table, an SVG report) and ready-to-paste snippets for DDP, DeepSpeed, Horovod and NCCL.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <mutex>
#include <sstream>

#include "cli/commands.h"
#include "cli/knob_options.h"
#include "collectives/cluster_subset.h"
#include "cli/text_format.h"
#include "core/atomic_file.h"
#include "core/cluster_json.h"
#include "core/compute_reference.h"
#include "core/error.h"
#include "core/join.h"
#include "core/trace_batch.h"
#include "core/trace_json.h"
#include "tune/emitters.h"
#include "tune/parallel.h"
#include "tune/merged_result.h"
#include "tune/micro_batch_search.h"
#include "tune/report_svg.h"
#include "tune/search_space.h"
#include "tune/target_emitters.h"
#include "tune/model_error.h"
#include "tune/sim_cache.h"
#include "tune/targets.h"
#include "tune/tune_output.h"
#include "tune/tuner.h"

namespace redsim::cli {
namespace {

struct TuneCliOptions {
  std::string trace_file;
  std::string cluster_file;
  double memory_per_device_gb = -1;  // < 0: the cluster's
  int microbatches = 1;
  int max_localsgd_period = 1;
  bool allow_compression = false;
  std::string activation_checkpointing = "auto";
  std::string optimizer_impl = "auto";
  std::vector<std::string> strategies;
  bool exhaustive = false;
  int threads = 0;
  double prune_margin = 0.01;
  int max_simulations = 0;
  int top = 3;
  std::string fidelity = "auto";
  std::string compute_scale;
  std::int64_t batch_size = 0;  // 0: the trace's own
  std::int64_t samples_per_rank = 0;  // > 0: search the micro-batch size (and so M) for these samples a step
  std::string layout;
  std::string out_file;
  std::string report_file;
  std::string emit_dir;
  std::string target = "all";
  bool no_snippets = false;
  CLI::Option* memory_opt = nullptr;
};

// A progress bar on a terminal, plain lines otherwise (one per round), on stderr.
class Progress {
 public:
  Progress() : tty_(::isatty(STDERR_FILENO) == 1) {}
  void set_target(const std::string& target, int index, int count) {
    std::lock_guard<std::mutex> lock(mu_);
    target_ = count > 1 ? target + " (" + std::to_string(index + 1) + "/" + std::to_string(count) + ")" : target;
    start_ = std::chrono::steady_clock::now();
  }
  void operator()(const tune::TuneProgress& p) {
    std::lock_guard<std::mutex> lock(mu_);
    const std::string best = (p.best_objective_s ? ", best " + tune::format_ms(*p.best_objective_s) : std::string()) + eta(p);
    if (tty_) {
      const int width = 30;
      const double frac = p.budget > 0 ? std::min(1.0, static_cast<double>(p.simulations) / p.budget) : 0.0;
      const int fill = static_cast<int>(frac * width);
      std::string bar(static_cast<std::size_t>(fill), '#');
      bar.append(static_cast<std::size_t>(width - fill), '.');
      // The guided search's budget is a cap, not a plan: it usually stops well before.
      const bool cap = p.phase != "simulating";
      std::fprintf(stderr, "\r\033[K  %-9s %-11s [%s] %d %s %d simulations%s", target_.c_str(), p.phase.c_str(), bar.c_str(), p.simulations,
                   cap ? "of at most" : "/", p.budget, best.c_str());
      std::fflush(stderr);
      dirty_ = true;
      return;
    }
    if (!p.end_of_round) return;
    if (p.phase == "simulating")
      std::fprintf(stderr, "tune: %s: exhaustive: %d/%d simulations%s\n", target_.c_str(), p.simulations, p.budget,
                   best.c_str());
    else
      std::fprintf(stderr, "tune: %s: %s: round %d, %d simulations (budget %d)%s\n", target_.c_str(), p.phase.c_str(),
                   p.round, p.simulations, p.budget, best.c_str());
  }
  void done() {
    if (tty_ && dirty_) std::fprintf(stderr, "\r\033[K");
  }

 private:
  // Time left at the mean pace so far: exact for the exhaustive search, a bound for the guided
  // one (its budget is a cap it rarely reaches).
  std::string eta(const tune::TuneProgress& p) const {
    if (p.simulations < 1 || p.budget <= p.simulations) return {};
    const double elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const double left_s = elapsed_s / p.simulations * (p.budget - p.simulations);
    char buf[64];
    std::snprintf(buf, sizeof buf, ", %s%.0f s left", p.phase == "simulating" ? "~" : "at most ~", left_s);
    return buf;
  }

  bool tty_;
  bool dirty_ = false;
  std::string target_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::mutex mu_;
};

tune::TuneConstraints constraints(const TuneCliOptions& o) {
  tune::TuneConstraints c;
  if (o.memory_opt && o.memory_opt->count() > 0) {
    if (!(o.memory_per_device_gb >= 0) || !std::isfinite(o.memory_per_device_gb))
      throw InputError("", "", "--memory-per-device-gb: expected a size in GB >= 0 (0 = no limit), got " +
                                   std::to_string(o.memory_per_device_gb));
    c.memory_per_device_GB = o.memory_per_device_gb;
  }
  c.microbatches = o.microbatches;
  c.max_localsgd_period = o.max_localsgd_period;
  c.allow_compression = o.allow_compression;
  if (o.activation_checkpointing != "auto") {
    c.activation_checkpointing = parse_activation_checkpointing(o.activation_checkpointing);
    if (!c.activation_checkpointing)
      throw InputError("", "", "--activation-checkpointing: expected auto|none|blocks, got \"" + o.activation_checkpointing + "\"");
  }
  c.optimizer_impl = optimizer_impl_option(o.optimizer_impl);
  c.strategies = o.strategies;
  return c;
}

void check_search_options(const TuneCliOptions& o) {
  // Each thread holds a whole simulation: thousands at once would exhaust memory, not go faster.
  if (o.threads < 0 || o.threads > 1024)
    throw InputError("", "", "--threads: expected 0 (all cores) to 1024, got " + std::to_string(o.threads));
  if (!(o.prune_margin >= 0 && o.prune_margin <= 1))
    throw InputError("", "", "--prune-margin: expected a fraction from 0 to 1, got " + std::to_string(o.prune_margin));
  if (o.max_simulations < 0)
    throw InputError("", "", "--max-simulations: expected 0 (default budget) or more, got " + std::to_string(o.max_simulations));
  if (o.top < 1) throw InputError("", "", "--top: expected 1 or more, got " + std::to_string(o.top));
  if (o.exhaustive && o.max_simulations > 0)
    throw InputError("", "", "--max-simulations applies to the guided search, not --exhaustive");
}

// --emit-dir as a directory path: "tuned/" is the directory tuned.
std::filesystem::path emit_dir(const TuneCliOptions& o) {
  std::filesystem::path dir(o.emit_dir);
  if (!dir.has_filename() && dir.has_relative_path()) dir = dir.parent_path();
  return dir;
}

// Outputs go where they can be written, checked now rather than after a long search.
void check_outputs(const TuneCliOptions& o) {
  std::vector<NamedPath> outputs{{"--out", o.out_file}, {"--report", o.report_file}};
  if (!o.emit_dir.empty()) {
    for (const auto& t : tune::parse_targets(o.target))
      for (const auto& f : tune::target_files(t)) outputs.push_back({"--emit-dir", (emit_dir(o) / f).string()});
    outputs.push_back({"--emit-dir", (emit_dir(o) / "README.txt").string()});
  }
  check_outputs_distinct({{"--trace", o.trace_file}, {"--cluster", o.cluster_file}}, outputs);
  check_output_targets({{"--out", o.out_file}, {"--report", o.report_file}});
  if (!o.emit_dir.empty()) {
    const std::filesystem::path dir = emit_dir(o);
    std::error_code ec;
    if (std::filesystem::exists(dir, ec) ? !std::filesystem::is_directory(dir, ec)
                                          : !(dir.parent_path().empty() || std::filesystem::is_directory(dir.parent_path(), ec)))
      throw InputError(o.emit_dir, "", "--emit-dir: not a directory, nor one that can be created");
  }
}

void print_snippets(const std::vector<tune::Snippet>& snippets) {
  std::cout << "\nready-to-paste settings:\n";
  for (const auto& s : snippets) {
    if (s.file == "README.txt") continue;
    std::cout << "\n--- " << s.file << " ---\n";
    if (!s.comment.empty()) std::cout << "# " << s.comment << "\n";
    std::cout << s.contents;
  }
}

void write_snippets(const TuneCliOptions& o, const std::vector<tune::Snippet>& snippets) {
  const std::filesystem::path dir = emit_dir(o);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw InputError(o.emit_dir, "", "--emit-dir: cannot create the directory");
  for (const auto& s : snippets) write_file_atomically((dir / s.file).string(), s.contents);
  std::cout << "snippets:     " << dir.string() << "/ (";
  std::vector<std::string> names;
  for (const auto& s : snippets) names.push_back(s.file);
  std::cout << join(names, ", ") << ")\n";
}

// One search per target; a target with nothing that fits is reported, unless it is the only one.
std::vector<tune::TargetSection> search_targets(const ModelTrace& trace, const ClusterSpec& cluster,
                                                const tune::TuneConstraints& c, const tune::TuneOptions& opt,
                                                const TuneCliOptions& o, Progress& progress,
                                                std::vector<std::string>& skipped) {
  const auto targets = tune::parse_targets(o.target);
  std::vector<tune::TargetSection> sections;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    const auto& t = targets[i];
    progress.set_target(t, static_cast<int>(i), static_cast<int>(targets.size()));
    try {
      sections.push_back(tune::tune_target(trace, cluster, c, t, opt));
    } catch (const InputError& e) {
      if (targets.size() == 1) throw;
      skipped.push_back(e.what());
    }
  }
  if (sections.empty()) throw InputError("", "", skipped.front());
  return sections;
}

void print_sections(const std::vector<tune::TargetSection>& sections, const std::vector<std::string>& skipped) {
  std::cout << "\nper framework (each searched over what it runs with NCCL; every setting simulated):\n";
  for (const auto& s : sections)
    std::cout << "  " << pad(s.target, 10) << s.pick().family << ": " << tune::describe_knobs(s.pick()) << "\n"
              << "  " << pad("", 10) << tune::section_summary(s) << "\n";
  for (const auto& e : skipped) std::cout << "  " << e << "\n";
}

tune::TuneOptions search_options(const TuneCliOptions& o, const std::shared_ptr<Progress>& progress) {
  tune::TuneOptions opt;
  opt.method = o.exhaustive ? tune::SearchMethod::exhaustive : tune::SearchMethod::guided;
  opt.threads = o.threads > 0 ? o.threads : tune::default_threads();
  opt.prune_margin = o.prune_margin;
  opt.max_simulations = o.max_simulations;
  opt.sim.fidelity = parse_fidelity(o.fidelity);
  // One cache for every target's search: a setting is simulated once however many targets run it.
  opt.cache = std::make_shared<tune::SimCache>();
  opt.on_progress = [progress](const tune::TuneProgress& p) { (*progress)(p); };
  return opt;
}

// Every target's search, at each micro-batch size with --samples-per-rank; the progress line ends
// before an error is printed or the report begins.
std::vector<tune::MicroBatchSearch> run_searches(const ModelTrace& trace, const ClusterSpec& cluster,
                                                 const tune::TuneConstraints& c0, const tune::TuneOptions& opt,
                                                 const TuneCliOptions& o, Progress& progress) {
  std::vector<tune::MicroBatchSearch> runs;
  try {
    runs = tune::search_micro_batches(
        trace, o.samples_per_rank, o.trace_file, c0,
        [&](const ModelTrace& t, const tune::TuneConstraints& c, std::vector<std::string>& skipped) {
          return search_targets(t, cluster, c, opt, o, progress, skipped);
        },
        [&] { progress.done(); });
  } catch (...) {
    progress.done();  // the error goes on a line of its own
    throw;
  }
  progress.done();
  return runs;
}

void run_tune(const TuneCliOptions& o) {
  // Everything is read and checked before anything is simulated or written.
  std::string batch_note;
  auto trace = load_trace_at(o.trace_file, o.batch_size, &batch_note);
  auto cluster = cluster_for_trace(trace, o.trace_file, cluster_part(load_cluster(o.cluster_file), o.layout), o.cluster_file,
                                   parse_compute_scale(o.compute_scale));
  const tune::TuneConstraints c0 = constraints(o);
  if (o.samples_per_rank > 0 && (o.batch_size > 0 || o.microbatches != 1))
    throw InputError("", "", "--samples-per-rank chooses the micro-batch size and M itself: expected it without "
                             "--batch-size and --microbatches");
  if (o.samples_per_rank == 0) tune::check_strategies(c0);
  check_search_options(o);
  check_outputs(o);
  if (!batch_note.empty()) std::cout << "note: " << batch_note << "\n";

  auto progress = std::make_shared<Progress>();
  const tune::TuneOptions opt = search_options(o, progress);
  const auto t0 = std::chrono::steady_clock::now();
  const auto runs = run_searches(trace, cluster, c0, opt, o, *progress);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const tune::MicroBatchSearch& chosen = tune::fastest(runs);
  trace = chosen.trace;
  const tune::TuneConstraints& c = chosen.c;
  const auto& sections = chosen.sections;
  const auto& skipped = chosen.skipped;

  // tuned.json is the fastest framework's search; the table and the plot show every target's
  // (the fastest framework's alone when the targets' grids resolved --fidelity auto apart).
  std::size_t main = 0;
  for (std::size_t i = 1; i < sections.size(); ++i)
    if (sections[i].best_s < sections[main].best_s) main = i;
  const tune::TuneResult& result = sections[main].result;
  tune::TuneInputs in{o.trace_file, o.cluster_file, &trace, &cluster, tune::target_constraints(sections[main].target, c)};
  const auto snippets = tune::emit_target_snippets(sections, trace, cluster, c.microbatches);
  // Render every output before writing any.
  std::vector<const tune::TuneResult*> searched;
  for (const auto& s : sections) searched.push_back(&s.result);
  const auto model_error = tune::step_model_error(searched);
  std::string tuned;
  if (!o.out_file.empty()) {
    auto j = tune::tuned_json(result, in);
    j["step_model_error"] = tune::step_model_error_json(model_error);  // every target's guided search
    // The rest of the file is this target's search: say which, so it is not read as all of them.
    j["target"] = sections[main].target;
    j["targets_searched"] = nlohmann::json::array();
    for (const auto& s : sections) j["targets_searched"].push_back(s.target);
    if (o.samples_per_rank > 0) j["micro_batch_search"] = tune::micro_batch_json(runs, chosen);
    tuned = j.dump(1) + "\n";
  }
  const bool merge = sections.size() > 1 && tune::same_fidelity(searched);
  const tune::TuneResult all = merge ? tune::merged_result(searched) : result;
  const tune::TuneInputs in_all{o.trace_file, o.cluster_file, &trace, &cluster, merge ? c : in.constraints};
  const std::string svg = o.report_file.empty() ? std::string() : tune::tune_report_svg(all, in_all);

  std::cout << "fastest framework: " << sections[main].target << "\n";
  tune::print_ranked_table(std::cout, all, in_all, o.top, wall, opt.threads);
  print_sections(sections, skipped);
  if (o.samples_per_rank > 0) tune::print_micro_batches(std::cout, runs, chosen);
  tune::print_step_model_error(std::cout, model_error);
  if (!o.no_snippets) print_snippets(snippets);
  std::cout << "\n";
  if (!o.out_file.empty()) {
    write_file_atomically(o.out_file, tuned);
    // The chosen micro-batch is the trace's, not a knob: simulate needs it said again.
    const std::string batch = o.samples_per_rank > 0 ? " --batch-size " + std::to_string(trace.batch_size_per_rank) : "";
    std::cout << "tuned config: " << o.out_file << "  (redsim simulate --config " << shell_word(o.out_file) << batch
              << " ...)\n";
  }
  if (!o.report_file.empty()) {
    write_file_atomically(o.report_file, svg);
    std::cout << "report:       " << o.report_file << "\n";
  }
  if (!o.emit_dir.empty()) write_snippets(o, snippets);
}

}  // namespace

void add_tune_command(CLI::App& app) {
  auto o = std::make_shared<TuneCliOptions>();
  auto* cmd = app.add_subcommand(
      "tune", "search strategies and knobs in simulation for the fastest optimizer step; emit the best config");
  cmd->add_option("--trace", o->trace_file, "model trace JSON (traces/README.md)")->required();
  cmd->add_option("--cluster", o->cluster_file, "cluster JSON (configs/README.md)")->required();
  add_compute_scale_option(cmd, o->compute_scale);
  add_batch_size_option(cmd, o->batch_size);
  cmd->add_option("--samples-per-rank", o->samples_per_rank,
                  "samples per rank per optimizer step: also search the micro-batch size (each batch size the trace "
                  "was measured at that divides this, M = samples / micro-batch), as DeepSpeed's autotuner does")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 36));
  add_layout_option(cmd, o->layout);
  o->memory_opt = cmd->add_option("--memory-per-device-gb", o->memory_per_device_gb,
                                  "device memory per rank for model state (and activations, when the trace gives them), decimal GB "
                                  "(10^9 bytes); settings whose "
                                  "per-rank memory exceeds it are excluded (default: the cluster's device.memory_GB; "
                                  "0 = no limit)");
  cmd->add_option("--microbatches", o->microbatches,
                  "micro-batches per optimizer step (M): accumulate runs M with deferred sync, bucketed syncs each; "
                  "strategies are compared per optimizer step over the same samples")
      ->capture_default_str();
  cmd->add_option("--max-localsgd-period", o->max_localsgd_period,
                  "largest LocalSGD period H searched (1, 2, 4, ... up to it)")
      ->capture_default_str();
  cmd->add_flag("--allow-compression", o->allow_compression, "also search fp16/bf16 gradients on the wire");
  cmd->add_option("--activation-checkpointing", o->activation_checkpointing,
                  "auto (checkpoint every repeated block of a setting only when it does not fit in memory "
                  "without it), none, or blocks (every setting)")
      ->capture_default_str();
  add_optimizer_impl_option(cmd, o->optimizer_impl, "; the emitted PyTorch files construct AdamW so unless auto");
  cmd->add_option("--strategies", o->strategies, "strategies to search, comma-separated (default: all: " +
                                                     join(tune::tune_families(), ",") + ")")
      ->delimiter(',');
  cmd->add_flag("--exhaustive", o->exhaustive,
                "simulate every grid point that fits (the reference; slow) instead of the guided search");
  cmd->add_option("--threads", o->threads, "simulations run in parallel (default 0: all cores)")->capture_default_str();
  cmd->add_option("--prune-margin", o->prune_margin,
                  "guided: simulate a candidate only if the step model predicts it within this fraction of the best")
      ->capture_default_str();
  cmd->add_option("--max-simulations", o->max_simulations,
                  "guided: simulation budget (default 0: 15% of the grid points that fit, at least 24)")
      ->capture_default_str();
  cmd->add_option("--fidelity", o->fidelity,
                  "simulator fidelity: exact|scalable|auto (auto: scalable for the whole search if any setting "
                  "needs it, else exact)")
      ->capture_default_str();
  cmd->add_option("--top", o->top, "rows per strategy in the ranked table")->capture_default_str();
  cmd->add_option("--out", o->out_file,
                  "write tuned.json here: the chosen knobs (\"knobs\", read by redsim simulate --config), predicted "
                  "step time and breakdown, runners-up, exclusions, search statistics");
  cmd->add_option("--report", o->report_file,
                  "write an SVG plot here: predicted time per optimizer step vs bucket size, per strategy and channels");
  cmd->add_option("--emit-dir", o->emit_dir,
                  "write the snippets here: pytorch_ddp.py, deepspeed_config.json, horovod.env, nccl.env, README.txt");
  cmd->add_option("--target", o->target,
                  "framework to tune for: ddp|deepspeed|horovod|nccl|fsdp|all (all: one search and one emitted file "
                  "each, over only what that framework runs with NCCL, compared with its defaults)")
      ->capture_default_str();
  cmd->add_flag("--no-snippets", o->no_snippets, "do not print the snippets on stdout");
  cmd->callback([o] { run_tune(*o); });
}

}  // namespace redsim::cli
