// redsim run: the Plan `redsim simulate` would simulate, executed on real communicators (Gloo over
// TCP on CPUs, NCCL on CUDA devices) by N local rank processes (--ranks N) or as one rank of a
// job started by torchrun, mpirun or srun. Writes the measured result in simulate's format.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <numeric>

#include "cli/commands.h"
#include "cli/text_format.h"
#include "cli/knob_options.h"
#include "collectives/cluster_subset.h"
#include "cli/run_memory.h"
#include "cli/summary_table.h"
#include "core/atomic_file.h"
#include "core/cluster_json.h"
#include "core/compute_reference.h"
#include "core/error.h"
#include "core/join.h"
#include "core/plan_json.h"
#include "core/result_json.h"
#include "core/step_summary.h"
#include "core/chrome_trace.h"
#include "core/timeline_json.h"
#include "core/trace_batch.h"
#include "core/trace_json.h"
#include "core/units.h"
#include "realexec/exec_layout.h"
#include "realexec/launch_env.h"
#include "realexec/local_launcher.h"
#include "realexec/memory_budget.h"
#include "realexec/rank_runner.h"
#include "strategies/memory_model.h"
#include "strategies/strategy.h"
#include "tune/emitters.h"

namespace redsim::cli {
namespace {

// What the real run does with a pinned algorithm or protocol, and for NCCL the environment that
// runs what was simulated (in the cluster file's release's syntax: collectives/nccl_algo_pin.h).
std::string real_pin_note(const std::string& backend, const Knobs& knobs, const ClusterSpec& cluster) {
  if (backend == "gloo") return "Gloo runs its own ring (allreduce, reduce) and binomial-tree (broadcast) algorithms";
  std::string env;
  if (knobs.algorithm && !nccl_algorithm_name(*knobs.algorithm).empty())
    env += " " + tune::nccl_algo_assignment(*knobs.algorithm, cluster.nccl_version);
  if (knobs.algorithm_list) env += " " + tune::nccl_env_assignment("NCCL_ALGO", nccl_list_value(*knobs.algorithm_list));
  if (knobs.protocol) env += " NCCL_PROTO=" + std::string(nccl_protocol_name(*knobs.protocol));
  if (knobs.protocol_list) env += " " + tune::nccl_env_assignment("NCCL_PROTO", nccl_list_value(*knobs.protocol_list));
  if (env.empty()) return "NCCL picks its own algorithm";
  return "NCCL picks its own unless launched with" + env + " (NCCL " + nccl_version_name(cluster.nccl_version) +
         "'s syntax)";
}

namespace rx = redsim::realexec;

struct RunOptions {
  std::string backend = "gloo";
  int ranks = 0;
  CLI::Option* ranks_opt = nullptr;
  std::string trace_file;
  std::string cluster_file;
  KnobOptions knobs;
  int steps = 20;
  int warmup = 3;
  std::string out_file;
  std::string timeline_file;
  std::string plan_file;
  std::string store_addr;  // launched jobs: where rank 0's store listens ("": the environment's)
  double timeout_s = 60;
  std::string buffer_scale = "auto";
  std::string compute_scale;
  std::int64_t batch_size = 0;  // 0: the trace's own
  std::string layout;
};

// Test-only failure injection: REDSIM_TEST_FAIL_RANK=k REDSIM_TEST_FAIL_STEP=s
// [REDSIM_TEST_FAIL_MODE=kill|exit|hang] makes rank k die at its first collective of step s
// (step numbers count warm-up steps).
rx::FailureInjection failure_injection_from_env() {
  rx::FailureInjection f;
  const char* r = std::getenv("REDSIM_TEST_FAIL_RANK");
  const char* s = std::getenv("REDSIM_TEST_FAIL_STEP");
  if (r == nullptr || s == nullptr) return f;
  f.rank = std::atoi(r);
  f.step = std::atoi(s);
  const std::string mode = std::getenv("REDSIM_TEST_FAIL_MODE") ? std::getenv("REDSIM_TEST_FAIL_MODE") : "kill";
  if (mode == "exit")
    f.mode = rx::FailureInjection::Mode::exit;
  else if (mode == "hang")
    f.mode = rx::FailureInjection::Mode::hang;
  else if (mode == "kill")
    f.mode = rx::FailureInjection::Mode::kill;
  else
    throw InputError("", "", "REDSIM_TEST_FAIL_MODE: expected kill|exit|hang, got \"" + mode + "\"");
  return f;
}

void print_measured(std::ostream& out, const ModelTrace& trace, const ClusterSpec& cluster, const rx::RunOutcome& o,
                    const StepSummary& s) {
  const auto& m = o.measured;
  std::vector<double> sorted = m.step_times_s;
  std::sort(sorted.begin(), sorted.end());
  const double mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) / static_cast<double>(sorted.size());
  out << "\nredsim run: " << o.plan.strategy << " | " << trace.model << " on " << cluster.name << " | " << o.world_size
      << " rank(s), " << o.backend_description << "\n";
  out << "measured " << o.steps << " step(s) after " << o.warmup_steps << " warm-up step(s)"
      << (m.shared_clock ? " (one host: shared clock)" : " (several hosts: per-rank clocks aligned at each step's barrier)")
      << "\n\n";
  out << "  step time            " << ms(m.step_times_s[static_cast<std::size_t>(m.median_step)]) << " median  (min "
      << ms(sorted.front()) << ", mean " << ms(mean) << ", max " << ms(sorted.back()) << ")"
      << (o.plan.steps > 1 ? " per training step: each run of the plan covers " + std::to_string(o.plan.steps) : "")
      << "\n";
  out << "  median step: compute " << ms(s.compute_time_s) << ", comm busy " << ms(s.comm_time_s) << ", exposed comm "
      << ms(s.exposed_comm_s) << "\n";
  out << "  time per sample      " << fmt("%.3f us", s.time_per_sample_s * 1e6) << "  (global batch "
      << o.plan.samples_per_step << ")\n";
  out << "  bytes sent per rank  " << human_bytes(static_cast<double>(s.bytes_sent_per_rank)) << "\n";
  out << "  buffers              " << o.scale.reason << "\n";
  out << "  verification         passed: " << m.buffers_checked
      << " collective results checked against the reference (every rank, every step)\n\n";
  print_run_memory(out, o);
  out << "  collective                 tensors        bytes    start ms      end ms   busbw GB/s\n";
  print_elided(out, s.collectives.size(), [&](std::size_t i) {
    const auto& c = s.collectives[i];
    char line[200];
    std::snprintf(line, sizeof line, "  %-24.24s %9zu %12s %11.3f %11.3f %12.2f\n", o.plan.ops[c.op].name.c_str(),
                  c.tensors, human_bytes(static_cast<double>(c.bytes)).c_str(), c.start_s * 1e3, c.end_s * 1e3,
                  c.busbw_GBps);
    out << line;
  });
}

void write_outputs(const RunOptions& o, const ModelTrace& trace, const ClusterSpec& cluster, const Knobs& knobs,
                   const rx::RunOutcome& r) {
  const auto& m = r.measured;
  const StepSummary summary = summarize(r.plan, m.timeline);
  print_measured(std::cout, trace, cluster, r, summary);
  if (!o.out_file.empty()) {
    Measurement measurement{m.step_times_s, m.median_step, nlohmann::json::object()};
    measurement.details = {
        {"backend", r.backend},
        {"backend_description", r.backend_description},
        {"ranks", r.world_size},
        {"warmup_steps", r.warmup_steps},
        {"steps", r.steps},
        {"timeline_step", "median"},
        {"buffer_scale", r.scale.factor},
        {"buffer_scale_reason", r.scale.reason},
        {"verification",
         {{"status", "passed"},
          {"buffers_checked", m.buffers_checked},
          {"steps_checked", r.warmup_steps + r.steps},
          {"method", "every collective's result compared element by element with the reference reduction of "
                     "rank-dependent small integers (exact in fp32, fp16 and bf16)"}}},
        {"clock", m.shared_clock ? "CLOCK_MONOTONIC shared by every rank (one host); times from the step's barrier"
                                 : "each rank's CLOCK_MONOTONIC, aligned at each step's barrier (several hosts)"},
        {"hosts", m.hosts},
        {"compute", "busy-wait of each op's traced duration on the rank's compute-stream thread"},
        {"collective_timeout_s", r.timeout_s},
        {"memory", run_memory_json(r)}};
    const ResultInputs inputs{o.trace_file, &trace, o.cluster_file, &cluster,
                              {{"name", r.backend}, {"kind", "measured"}, {"description", r.backend_description}}};
    const RedsimResult result{inputs, &knobs, &r.plan, &summary, &m.timeline, {}, std::move(measurement)};
    write_file_atomically(o.out_file, result_to_json(result).dump(1) + "\n");
    std::cout << "\nresult:   " << o.out_file << "\n";
  }
  if (!o.timeline_file.empty()) {
    std::vector<int> ranks(static_cast<std::size_t>(m.timeline.world_size));
    for (std::size_t i = 0; i < ranks.size(); ++i) ranks[i] = static_cast<int>(i);
    write_file_atomically(o.timeline_file,
                          [&](const OutputSink& out) { write_chrome_trace(r.plan, m.timeline, ranks, {}, out); });
    std::cout << "timeline: " << o.timeline_file << "  (open in https://ui.perfetto.dev)\n";
  }
  if (!o.plan_file.empty()) {
    write_file_atomically(o.plan_file, plan_to_json(r.plan).dump(1) + "\n");
    std::cout << "plan:     " << o.plan_file << "\n";
  }
  std::cout.flush();
}

[[noreturn]] void exit_with(int code) {
  std::cout.flush();
  std::cerr.flush();
  std::exit(code);
}

// The options that need no file, checked; the buffer scale they ask for.
std::optional<double> check_options(const RunOptions& o) {
  const auto backends = rx::available_backends();
  if (std::find(backends.begin(), backends.end(), o.backend) == backends.end()) {
    if (o.backend == "nccl")
      throw InputError("", "", "--backend nccl: this redsim was built without the NCCL backend (CUDA and NCCL were not "
                               "found when it was configured); use --backend gloo");
    throw InputError("", "", "--backend: expected " + join(backends, "|") + ", got \"" + o.backend + "\"");
  }
  if (o.steps < 1) throw InputError("", "", "--steps: expected at least 1 measured step, got " + std::to_string(o.steps));
  if (o.warmup < 0) throw InputError("", "", "--warmup: expected 0 or more steps, got " + std::to_string(o.warmup));
  if (!(o.timeout_s > 0) || !std::isfinite(o.timeout_s) || o.timeout_s > 86400)
    throw InputError("", "", "--timeout-s: expected a positive number of seconds (at most 86400), got " +
                                 std::to_string(o.timeout_s));
  try {
    return rx::parse_buffer_scale(o.buffer_scale);
  } catch (const std::invalid_argument& e) {
    throw InputError("", "", e.what());
  }
}

// Who runs: --ranks N local processes, or this process as one rank of a launched job.
struct World {
  bool local = false;
  std::optional<rx::LaunchEnv> env;
  int size = 0;
  bool writes_outputs() const { return local || env->rank == 0; }
};

World run_world(const RunOptions& o) {
  World w;
  w.local = o.ranks_opt != nullptr && o.ranks_opt->count() > 0;
  if (w.local) {
    if (o.ranks < 1 || o.ranks > 1024)
      throw InputError("", "", "--ranks: expected 1 to 1024 local ranks, got " + std::to_string(o.ranks));
    w.size = o.ranks;
    return w;
  }
  try {
    w.env = rx::launch_env();
  } catch (const std::invalid_argument& e) {
    throw InputError("", "", std::string("launcher environment: ") + e.what());
  }
  if (!w.env)
    throw InputError("", "", "--ranks N is required unless redsim run is started by torchrun (RANK, WORLD_SIZE, "
                             "MASTER_ADDR, MASTER_PORT), mpirun (OMPI_COMM_WORLD_RANK/SIZE or PMI_RANK/SIZE, with "
                             "MASTER_ADDR and MASTER_PORT) or srun (SLURM_PROCID, SLURM_NTASKS, with MASTER_ADDR "
                             "and MASTER_PORT)");
  w.size = w.env->world_size;
  return w;
}

void check_cluster_world(const RunOptions& o, const ClusterSpec& cluster, const World& w) {
  if (cluster.world_size() != w.size)
    throw InputError(o.cluster_file, "", "the cluster has " + std::to_string(cluster.world_size()) + " ranks (" +
                                             std::to_string(cluster.nodes) + " node(s) x " +
                                             std::to_string(cluster.devices_per_node) + " device(s)) but the run has " +
                                             std::to_string(w.size) +
                                             (w.local ? " (--ranks)" : " (" + w.env->launcher + "'s world size)") +
                                             ": they must be equal (--layout " + std::to_string(w.size) +
                                             " runs on the cluster's first " + std::to_string(w.size) + " ranks)");
}

rx::RunConfig run_config(const RunOptions& o, std::optional<double> scale) {
  rx::RunConfig cfg;
  cfg.backend = o.backend;
  cfg.warmup_steps = o.warmup;
  cfg.steps = o.steps;
  cfg.buffer_scale = scale;
  cfg.inject = failure_injection_from_env();
  // Test-only: REDSIM_TEST_CORRUPT_RANK=k REDSIM_TEST_CORRUPT_OP=i damages op i's result on rank k
  // after every run of it, so verification must stop the run.
  if (const char* r = std::getenv("REDSIM_TEST_CORRUPT_RANK")) cfg.corrupt_rank = std::atoi(r);
  if (const char* i = std::getenv("REDSIM_TEST_CORRUPT_OP")) cfg.corrupt_op = std::atoi(i);
  return cfg;
}

void run_run(const RunOptions& o) {
  // Everything is read and checked before any rank starts.
  const std::optional<double> scale = check_options(o);
  check_outputs_distinct({{"--trace", o.trace_file}, {"--cluster", o.cluster_file}, {"--config", o.knobs.config_file}},
                         {{"--out", o.out_file}, {"--timeline", o.timeline_file}, {"--plan", o.plan_file}});
  const World world = run_world(o);
  std::string batch_note;
  const auto trace = load_trace_at(o.trace_file, o.batch_size, &batch_note);
  const auto cluster = cluster_for_trace(trace, o.trace_file, cluster_part(load_cluster(o.cluster_file), o.layout),
                                         o.cluster_file, parse_compute_scale(o.compute_scale));
  const auto knobs = resolve_knobs(o.knobs);
  check_knobs_for_trace(o.knobs, knobs, trace);
  if (knobs.strategy == "all")
    throw InputError("", "", "--strategy all: redsim run measures one strategy at a time; expected one of " +
                                 join(strategy_names(), "|"));
  check_cluster_world(o, cluster, world);
  const Plan plan = rx::plan_for_library(make_strategy(knobs.strategy)->plan(trace, cluster, knobs));
  try {
    rx::check_plan_for_realexec(plan, world.size);
  } catch (const std::invalid_argument& e) {
    throw InputError("", "", std::string("cannot run this plan for real: ") + e.what());
  }
  if (world.writes_outputs())
    check_output_targets({{"--out", o.out_file}, {"--timeline", o.timeline_file}, {"--plan", o.plan_file}});
  rx::RunConfig cfg = run_config(o, scale);
  cfg.model_state = rx::model_state_spec(trace, model_state_stage(knobs));
  const auto timeout = std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(o.timeout_s * 1000)));
  auto sink = [&](const rx::RunOutcome& r) { write_outputs(o, trace, cluster, knobs, r); };

  if (!batch_note.empty() && world.writes_outputs()) std::cout << "note: " << batch_note << "\n";
  if ((knobs.algorithm || knobs.protocol || knobs.algorithm_list || knobs.protocol_list) && world.writes_outputs())
    std::cout << "note: --algorithm and --protocol shape the simulated Plan only; " << real_pin_note(o.backend, knobs, cluster)
              << "\n";
  const std::string what = "redsim run: " + plan.strategy + " | " + trace.model + " on " + cluster.name + " | ";
  if (world.local) {
    if (const auto why = rx::backend_unavailable_reason(o.backend); !why.empty()) {
      std::cerr << "redsim: error: --backend " << o.backend << ": " << why << "\n";
      exit_with(1);
    }
    std::cout << what << world.size << " local rank(s), backend " << o.backend << ", " << o.warmup << " warm-up + "
              << o.steps << " measured step(s)\n"
              << std::flush;
    const auto report = rx::launch_local(world.size, [&](int rank, int port) {
      return rx::run_rank(plan, rx::local_rank_job(rank, world.size, port, timeout), cfg, sink);
    });
    if (report.exit_code != 0) {
      std::cerr << "redsim: error: " << report.message << "\n";
      exit_with(report.exit_code);
    }
    return;
  }
  rx::RankJob job = rx::launched_rank_job(*world.env, timeout);
  if (!o.store_addr.empty()) job.store_bind_host = o.store_addr;
  if (world.env->rank == 0)
    std::cout << what << "rank 0 of " << world.size << " (" << world.env->launcher << "), backend " << o.backend
              << "\n"
              << std::flush;
  const int code = rx::run_rank(plan, job, cfg, sink);
  if (code != 0) exit_with(code);
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto opts = std::make_shared<RunOptions>();
  auto* cmd = app.add_subcommand(
      "run", "execute a strategy's Plan on real communicators (Gloo on CPUs, NCCL on GPUs) and measure it");
  cmd->add_option("--backend", opts->backend, "communication backend: gloo (TCP, CPUs) or nccl (CUDA devices)")
      ->capture_default_str();
  opts->ranks_opt = cmd->add_option("--ranks", opts->ranks,
                                    "start this many local rank processes; omit to join a job started by torchrun, "
                                    "mpirun or srun (RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT, OMPI_COMM_WORLD_*, "
                                    "SLURM_*)");
  cmd->add_option("--trace", opts->trace_file, "model trace JSON (traces/README.md)")->required();
  cmd->add_option("--cluster", opts->cluster_file,
                  "cluster JSON (configs/README.md); its world size (of --layout's part) must equal the number of ranks")
      ->required();
  add_knob_options(cmd, opts->knobs, false);
  add_compute_scale_option(cmd, opts->compute_scale);
  add_batch_size_option(cmd, opts->batch_size);
  add_layout_option(cmd, opts->layout);
  cmd->add_option("--steps", opts->steps, "measured steps (the reported timeline is the median step's)")
      ->capture_default_str();
  cmd->add_option("--warmup", opts->warmup, "warm-up steps before measuring (run and verified, not reported)")
      ->capture_default_str();
  cmd->add_option("--out", opts->out_file,
                  "write the measured result JSON here (simulate's format: summary, knobs, per-rank per-op timeline, "
                  "plus per-step times, buffer scale and verification)");
  cmd->add_option("--timeline", opts->timeline_file,
                  "write the median step as a Chrome/Perfetto trace here (a process per rank, a thread per stream)");
  cmd->add_option("--plan", opts->plan_file, "write the Plan as executed (bytes at the buffer scale) as JSON here");
  cmd->add_option("--store-addr", opts->store_addr,
                  "launched jobs: the address rank 0's rendezvous store listens on (default REDSIM_STORE_ADDR, "
                  "else MASTER_ADDR; never every interface)");
  cmd->add_option("--timeout-s", opts->timeout_s,
                  "seconds a collective (or the rendezvous) may wait for its peers before the rank gives up")
      ->capture_default_str();
  cmd->add_option("--buffer-scale", opts->buffer_scale,
                  "auto: traced buffer sizes if they fit this machine's memory, else scaled by the largest 2^-k that "
                  "fits (stated in the output); or a factor in (0, 1]")
      ->capture_default_str();
  cmd->callback([opts] { run_run(*opts); });
}

}  // namespace redsim::cli
