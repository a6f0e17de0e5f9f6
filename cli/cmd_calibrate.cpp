// redsim calibrate: nccl-tests-style collective sweeps on the real backend (allreduce, reduce,
// reduce-scatter, allgather, broadcast; algbw and busbw with nccl-tests' bus factors), then a
// weighted least-squares fit of the simulator's alpha-beta formulas (validate/cluster_fit.h) to the
// measured times, giving the cluster file's bottleneck link (inter-node NIC bandwidth and latency
// when there are several nodes, else the intra-node link) and collective_launch_us. Point-to-point
// ping-pong sweeps measure each link class; with several nodes of several ranks the intra-node
// link comes from its own point-to-point fit (the collectives' rings are bound by the NIC). Ranks: --ranks
// N locally, --testbed nodes=K,ranks-per-node=R,rate=400mbit (realexec/testbed runs `redsim
// calibrate` in join mode once per rank), or a job started by torchrun/mpirun/srun. The fit policy
// and the cluster file it gives are validate/calibration_fit.h's; this file runs the sweeps and prints.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>

#include "cli/calibrate_nccl_tests.h"
#include "cli/calibrate_profile.h"
#include "cli/cluster_output.h"
#include "cli/commands.h"
#include "core/atomic_file.h"
#include "core/cluster_json.h"
#include "core/error.h"
#include "core/join.h"
#include "realexec/launch_env.h"
#include "realexec/local_launcher.h"
#include "realexec/microbench.h"
#include "realexec/rank_runner.h"
#include "validate/calibration_fit.h"
#include "validate/child_command.h"

namespace redsim::cli {
namespace {

namespace rx = redsim::realexec;

struct CalibrateOptions {
  std::string backend = "gloo";
  int ranks = 0;
  std::string testbed;
  std::string out_file;
  std::string name;
  double max_bytes = 64.0 * 1048576;
  double min_bytes = 4096;
  // Below this the alpha-beta model has no term for what dominates (TCP slow start, a token
  // bucket's burst — the testbed's tbf passes 128 KiB at memory speed — scheduler stalls): such
  // points are measured and printed but not fitted.
  double fit_min_bytes = 256 * 1024;
  int iters = 5;
  int warmup = 1;
  double timeout_s = 300;
  double interference_ms = 500;
  bool write_interference = true;
  double hook_bucket_mb = 25;  // DDP's default bucket
  std::string rate;  // set by --testbed (--rate-label) for the ranks it starts
  std::string fit = "ring";
  std::vector<std::string> nccl_tests_logs;
  std::string svg_file;  // --from-nccl-tests: the fit's chart
  std::vector<std::string> profiles;
  std::string cluster_file;
};

// Fits one link class's point-to-point sweep and prints it; nullopt when it was not measured.
std::optional<LinkCalibration> fit_link(const std::vector<rx::PointToPointPoint>& all, rx::LinkClass link,
                                        double fit_min_bytes) {
  std::vector<const rx::PointToPointPoint*> pts;
  std::vector<LinkSample> sweep;
  for (const auto& p : all)
    if (p.link == link) {
      pts.push_back(&p);
      sweep.push_back({p.bytes, p.time_s});
    }
  const auto cal = calibrate_link(sweep, fit_min_bytes);
  if (!cal) return cal;
  const ClusterFitResult& fit = cal->fit;
  std::printf("\n%s link, point to point (rank 0 <-> rank %d): latency %.2f us, bandwidth %.4f GB/s (%.1f Mbit/s)\n",
              std::string(rx::link_class_name(link)).c_str(), pts.front()->peer, fit.alpha_s * 1e6,
              fit.bandwidth_Bps() / 1e9, fit.bandwidth_Bps() * 8 / 1e6);
  std::printf("%-15s %12s %12s %12s %9s   (sizes >= --fit-min-bytes)\n", "one-way", "bytes", "measured_us",
              "model_us", "residual");
  for (std::size_t i = 0; i < cal->index.size(); ++i) {
    const auto* p = pts[cal->index[i]];
    std::printf("%-15s %12lld %12.1f %12.1f %+8.1f%%%s\n", "", static_cast<long long>(p->bytes), p->time_s * 1e6,
                fit.predicted_s[i] * 1e6, fit.relative_error[i] * 100,
                fit.used[i] ? "" : "  (outlier, left out of the fit)");
  }
  std::printf("residuals over the %d of %zu points fitted: rms %.1f%%, max %.1f%%\n", fit.points_used,
              cal->index.size(), fit.rms_relative_error * 100, fit.max_abs_relative_error * 100);
  return cal;
}

const char* use_note(PointUse use) {
  switch (use) {
    case PointUse::below_min:
      return "  (below --fit-min-bytes: not fitted)";
    case PointUse::launch_only:
      return "  (launch only: not in the --fit ring fit)";
    case PointUse::outlier:
      return "  (outlier, left out of the fit)";
    default:
      return "";
  }
}

void print_collective_fit(const CollectiveCalibration& c, const std::string& policy) {
  const ClusterFitResult& fit = c.fit;
  std::printf("\nfit (weighted least squares, weights 1/time, --fit %s): alpha %.2f us, bandwidth %.4f GB/s "
              "(%.1f Mbit/s), launch overhead",
              policy.c_str(), fit.alpha_s * 1e6, fit.bandwidth_Bps() / 1e9, fit.bandwidth_Bps() * 8 / 1e6);
  for (const auto& [k, v] : fit.launch_s_by_kind)
    std::printf(" %s %.1f us%s", std::string(op_kind_name(k)).c_str(), v * 1e6,
                std::find(c.held.begin(), c.held.end(), k) != c.held.end() ? " (alpha, bandwidth held)" : "");
  std::printf("\n");
  std::printf("%-15s %12s %12s %12s %9s\n", "collective", "bytes", "measured_us", "model_us", "residual");
  for (const auto& p : c.points)
    std::printf("%-15s %12lld %12.1f %12.1f %+8.1f%%%s\n", std::string(op_kind_name(p.sample.kind)).c_str(),
                static_cast<long long>(p.sample.bytes), p.sample.time_s * 1e6, p.model_s * 1e6,
                (p.model_s - p.sample.time_s) / p.sample.time_s * 100, use_note(p.use));
  std::printf("residuals over the %d of %zu points fitted (launch-only kinds included): rms %.1f%%, max %.1f%%\n",
              c.points_counted, c.points.size(), c.rms_relative_error * 100, c.max_abs_relative_error * 100);
}

// Measured slowdowns (below 1, the other work did not slow it: noise) and the delay are printed,
// recorded in the source and, unless --no-write-interference, written as the cluster's
// interference: with the delay they improved DDP predictions on the testbed
// (bench/validate/README.md).
void apply_interference(const rx::InterferenceMeasurement& m, bool write, ClusterSpec& c) {
  auto factor = [](double x) { return std::isfinite(x) && x > 1 ? std::min(x, 10.0) : 1.0; };
  const double compute = factor(m.compute_slowdown());
  const double collective = m.large.beside > 0 ? factor(m.collective_slowdown()) : 1.0;
  const double latency_us = m.collective_latency_s() * 1e6;
  if (write) {
    c.interference = InterferenceSpec{};
    c.interference.compute_slowdown = compute;
    c.interference.collective_slowdown = collective;
    c.interference.collective_latency_us = latency_us;
  }
  std::printf("\ninterference: compute x%.3f beside an allreduce of %lld B, an allreduce x%.3f + %.1f us beside compute "
              "(%lld and %lld B)%s: %s\n",
              compute, static_cast<long long>(m.large.bytes), collective, latency_us,
              static_cast<long long>(m.small.bytes), static_cast<long long>(m.large.bytes),
              m.large.beside > 0 ? "" : " (none ended while compute ran: not measured)",
              write ? "written to the cluster" : "not written (--no-write-interference)");
  std::printf("a rank computes at %.3f of one process alone on this machine: simulate a trace captured in a plain "
              "process with --compute-scale %.3f\n",
              m.rank_speed(), m.rank_speed());
  char note[512];
  std::snprintf(note, sizeof note,
                "; interference measured on every rank at once: a %.0f ms matrix-multiply load ran %.3fx as long beside "
                "a %lld B allreduce loop, an allreduce %.3fx + %.1f us (%s); a rank computed at %.3f of one process "
                "alone (--compute-scale for traces captured in a plain process)",
                m.compute_alone_s * 1e3, m.compute_slowdown(), static_cast<long long>(m.large.bytes),
                m.large.beside > 0 ? m.collective_slowdown() : 0.0, latency_us,
                write ? "written as interference" : "not written", m.rank_speed());
  c.source += note;
}

// What fp16_compress_hook does to a bucket, measured on every rank at once: the casts price the
// comm hooks' kernels on this CPU (memory_GBps), Gloo's fp16 sum the reductions inside fp16
// collectives (fp32's is already inside the bandwidth fitted to the fp32 sweeps: not written).
void apply_hook_bucket(const rx::MicrobenchResult& r, ClusterSpec& c) {
  auto write = [&](const char* field, double GBps, double time_s, const std::string& label, const std::string& what,
                   const std::function<void(double)>& set) {
    if (!(GBps > 0) || !std::isfinite(GBps)) return;
    set(GBps);
    std::printf("%s in %.1f ms on every rank at once: %s %.3f written\n", label.c_str(), time_s * 1e3, field, GBps);
    char note[96];
    std::snprintf(note, sizeof note, "; %s %.3f: ", field, GBps);
    c.source += note + what + " measured on every rank at once";
  };
  if (const auto& m = r.hook_casts)
    write("memory_GBps", m->bandwidth_GBps(), m->time_s,
          "hook casts: " + std::to_string(m->elements) + " elements to fp16 and back",
          "fp16_compress_hook's casts of a " + std::to_string(m->elements) + "-element bucket (12 bytes per element)",
          [&](double v) { c.device.memory_GBps = v; });
  if (const auto& m = r.fp16_reduce)
    write("reduce_GBps_by_dtype.fp16", m->incoming_GBps(), m->time_s,
          "fp16 reduction: " + std::to_string(m->elements) + " elements",
          "Gloo's fp16 sum (gloo::sum<float16>) of " + std::to_string(m->elements) + " elements",
          [&](double v) { c.device.reduce_GBps_by_dtype[DType::fp16] = v; });
  if (const auto& m = r.fp32_add)
    write("copy_GBps", m->bandwidth_GBps(), m->time_s, "fp32 adds: " + std::to_string(m->elements) + " elements",
          "fp32 adds (a += b) of " + std::to_string(m->elements) + " elements (12 bytes per element)",
          [&](double v) { c.device.copy_GBps = v; });
  if (const auto& m = r.fresh_copy)
    write("fresh_copy_GBps", m->bandwidth_GBps(), m->time_s,
          "fresh copies: " + std::to_string(m->elements) + " elements into newly mapped memory",
          "copies of " + std::to_string(m->elements) + " elements into newly mapped memory (8 bytes per element)",
          [&](double v) { c.device.fresh_copy_GBps = v; });
  // PyTorch DDP's default (gradient_as_bucket_view=False) copies every gradient into its bucket and
  // back each step, plain fp32 copies: priced at copy_GBps once it is measured (bench/validate/README.md).
  if (c.device.copy_GBps > 0) {
    c.framework.bucket_copy = true;
    std::printf("framework.bucket_copy true written: DDP's copies of the gradients into its buckets and back run at "
                "copy_GBps\n");
    c.source += "; framework.bucket_copy: DDP copies gradients into its buckets and back (at copy_GBps)";
  }
}

void write_cluster(const CalibrateOptions& o, int nodes, int per_node, const rx::MicrobenchResult& result) {
  std::vector<CollectiveSample> sweep;
  for (const auto& p : result.collectives) sweep.push_back({p.kind, p.bytes, p.ranks, p.time_s});
  const CalibrationPolicy policy{o.fit, o.fit_min_bytes};
  const CollectiveCalibration fit = calibrate_collectives(sweep, policy);
  print_collective_fit(fit, o.fit);
  const auto intra = fit_link(result.point_to_point, rx::LinkClass::intra_node, o.fit_min_bytes);
  (void)fit_link(result.point_to_point, rx::LinkClass::inter_node, o.fit_min_bytes);  // printed as a check on the NIC fit

  const CalibrationRun run{o.name, o.backend, o.rate, nodes, per_node, o.iters};
  ClusterSpec c = calibrated_cluster(run, policy, fit, intra);
  if (result.interference) apply_interference(*result.interference, o.write_interference, c);
  apply_hook_bucket(result, c);
  std::fflush(stdout);  // the fit's printf lines before write_calibrated_cluster's
  write_calibrated_cluster(c, o.out_file);
}

void check_options(const CalibrateOptions& o) {
  const auto backends = rx::available_backends();
  if (std::find(backends.begin(), backends.end(), o.backend) == backends.end())
    throw InputError("", "", "--backend: expected " + join(backends, "|") + " (what this build has), got \"" +
                                 o.backend + "\"");
  if (o.out_file.empty()) throw InputError("", "", "--out FILE is required");
  if (!(o.max_bytes >= 4096) || o.max_bytes > 256.0 * 1048576)
    throw InputError("", "", "--max-bytes: expected 4096 to 268435456 (256 MiB)");
  if (!(o.min_bytes >= 4) || o.min_bytes > o.max_bytes)
    throw InputError("", "", "--min-bytes: expected 4 to --max-bytes");
  if (!(o.fit_min_bytes >= 0) || o.fit_min_bytes > o.max_bytes / 4)
    throw InputError("", "", "--fit-min-bytes: expected 0 to a quarter of --max-bytes (the fit needs 3 sizes)");
  if (o.fit != "ring" && o.fit != "all") throw InputError("", "", "--fit: expected ring|all, got \"" + o.fit + "\"");
  if (o.iters < 1 || o.warmup < 0) throw InputError("", "", "--iters: expected at least 1; --warmup: 0 or more");
  check_output_targets({{"--out", o.out_file}});
}

// --testbed: this command again, once per rank, inside realexec/testbed.
void run_in_testbed(const CalibrateOptions& o, const rx::MicrobenchConfig& cfg) {
  if (o.ranks > 0) throw InputError("", "", "give --ranks or --testbed, not both");
  const TestbedSpec tb = parse_testbed(o.testbed);
  if (tb.ranks() < 2)
    throw InputError("", "", "--testbed: expected at least 2 ranks (K*R >= 2), got \"" + o.testbed + "\"");
  std::vector<std::string> args = testbed_argv(
      tb, {"calibrate", "--backend", o.backend, "--out", std::filesystem::absolute(o.out_file).string(),
           "--max-bytes", std::to_string(cfg.max_bytes), "--min-bytes", std::to_string(cfg.min_bytes), "--iters",
           std::to_string(o.iters), "--fit-min-bytes", std::to_string(o.fit_min_bytes), "--warmup",
           std::to_string(o.warmup), "--timeout-s", std::to_string(o.timeout_s), "--rate-label", tb.rate, "--fit",
           o.fit, "--interference-ms", std::to_string(o.interference_ms), "--hook-bucket-mb", std::to_string(o.hook_bucket_mb)});
  if (!o.name.empty()) args.insert(args.end(), {"--name", o.name});
  args.emplace_back(o.write_interference ? "--write-interference" : "--no-write-interference");
  const int rc = run_child(args);
  if (rc != 0) {
    std::cerr << "redsim: error: the testbed run failed (exit status " << rc << ")\n";
    std::exit(rc == 2 ? 2 : 1);
  }
}

// --ranks N: N local rank processes on one node.
void run_local(const CalibrateOptions& o, const rx::MicrobenchConfig& cfg, std::chrono::milliseconds timeout) {
  if (o.ranks < 2 || o.ranks > 64) throw InputError("", "", "--ranks: expected 2 to 64 local ranks");
  if (const auto why = rx::backend_unavailable_reason(o.backend); !why.empty()) {
    std::cerr << "redsim: error: --backend " << o.backend << ": " << why << "\n";
    std::exit(1);
  }
  std::cout << "redsim calibrate: " << o.ranks << " local rank(s), backend " << o.backend << ", " << cfg.min_bytes
            << " to " << cfg.max_bytes << " bytes\n"
            << std::flush;
  const auto report = rx::launch_local(o.ranks, [&](int rank, int port) {
    const rx::RankJob job = rx::local_rank_job(rank, o.ranks, port, timeout);
    return rx::run_microbench_rank(job, cfg, [&](const rx::MicrobenchResult& r) { write_cluster(o, 1, o.ranks, r); });
  });
  if (report.exit_code != 0) {
    std::cerr << "redsim: error: " << report.message << "\n";
    std::exit(report.exit_code);
  }
}

// One rank of a job started by torchrun, mpirun or srun.
void run_launched(const CalibrateOptions& o, const rx::MicrobenchConfig& cfg, std::chrono::milliseconds timeout) {
  std::optional<rx::LaunchEnv> env;
  try {
    env = rx::launch_env();
  } catch (const std::invalid_argument& e) {
    throw InputError("", "", std::string("launcher environment: ") + e.what());
  }
  if (!env) throw InputError("", "", "give --ranks N, --testbed nodes=K,..., or start under torchrun/mpirun/srun");
  if (env->world_size < 2) throw InputError("", "", "calibrate needs at least 2 ranks");
  if (env->world_size % env->local_world_size != 0)
    throw InputError("", "", "the world size is not a multiple of the ranks per host");
  const rx::RankJob job = rx::launched_rank_job(*env, timeout);
  const int per_node = env->local_world_size;
  const int code = rx::run_microbench_rank(job, cfg, [&](const rx::MicrobenchResult& r) {
    write_cluster(o, env->world_size / per_node, per_node, r);
  });
  if (code != 0) std::exit(code);
}

void run_calibrate(const CalibrateOptions& o) {
  if (!o.svg_file.empty() && o.nccl_tests_logs.empty())
    throw InputError("", "", "--svg goes with --from-nccl-tests (it draws the logs beside the fit)");
  if (!o.profiles.empty()) {
    if (o.ranks > 0 || !o.testbed.empty() || !o.nccl_tests_logs.empty())
      throw InputError("", "", "--from-profile fits traces from elsewhere: give neither --ranks, --testbed nor --from-nccl-tests");
    return calibrate_from_profiles({o.profiles, o.cluster_file, o.out_file, o.name});
  }
  if (!o.nccl_tests_logs.empty()) {
    if (o.ranks > 0 || !o.testbed.empty())
      throw InputError("", "", "--from-nccl-tests fits logs from elsewhere: give neither --ranks nor --testbed");
    return calibrate_from_nccl_tests({o.nccl_tests_logs, o.cluster_file, o.out_file, o.name, o.svg_file});
  }
  if (!o.cluster_file.empty()) throw InputError("", "", "--cluster goes with --from-nccl-tests or --from-profile");
  check_options(o);
  rx::MicrobenchConfig cfg;
  cfg.backend = o.backend;
  cfg.min_bytes = static_cast<std::int64_t>(o.min_bytes);
  cfg.max_bytes = static_cast<std::int64_t>(o.max_bytes);
  cfg.iters = o.iters;
  cfg.warmup = o.warmup;
  // The load is CPU arithmetic: beside Gloo it is what the ranks' compute meets; beside NCCL it
  // would say nothing of GPU kernels (fit those from a profile, --from-profile).
  cfg.interference_target_s = o.backend == "gloo" ? o.interference_ms / 1e3 : 0;
  // The hooks' casts on a CPU rank are what the cluster's memory_GBps prices; a GPU's comes from
  // its datasheet (strategies/comm_hooks.cpp), not from a host loop.
  cfg.hook_bucket_elements = o.backend == "gloo" ? static_cast<std::int64_t>(std::llround(o.hook_bucket_mb * 1048576 / 4)) : 0;
  const auto timeout = std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(o.timeout_s * 1000)));
  if (!o.testbed.empty())
    run_in_testbed(o, cfg);
  else if (o.ranks > 0)
    run_local(o, cfg, timeout);
  else
    run_launched(o, cfg, timeout);
}

}  // namespace

void add_calibrate_command(CLI::App& app) {
  auto o = std::make_shared<CalibrateOptions>();
  auto* cmd = app.add_subcommand("calibrate",
                                 "microbenchmark collectives on the real backend (nccl-tests style) and fit a cluster "
                                 "file's bandwidth, latency and collective launch overhead");
  cmd->add_option("--backend", o->backend, "communication backend: gloo, or nccl (GPUs, when built with it)")->capture_default_str();
  cmd->add_option("--ranks", o->ranks, "run the sweep on this many local ranks (one node)");
  cmd->add_option("--testbed", o->testbed,
                  "run inside realexec/testbed: nodes=K,ranks-per-node=R,rate=400mbit (root; script found via "
                  "$REDSIM_TESTBED, the source tree, or ../realexec/testbed from the binary)");
  cmd->add_option("--from-nccl-tests", o->nccl_tests_logs,
                  "instead of measuring: fit --cluster's link bandwidths and latencies to these nccl-tests logs "
                  "(all_reduce_perf, reduce_scatter_perf, all_gather_perf, broadcast_perf, reduce_perf output)");
  cmd->add_option("--from-profile", o->profiles,
                  "instead of measuring: fit --cluster's interference (compute and collectives slowing each other) and "
                  "per-bucket framework overhead to PyTorch profiler (Kineto) traces of real DDP steps (.json or .json.gz)");
  cmd->add_option("--cluster", o->cluster_file,
                  "with --from-nccl-tests or --from-profile: the cluster file the logs or traces ran on");
  cmd->add_option("--out", o->out_file, "write the fitted cluster file here (atomically)")->required();
  cmd->add_option("--svg", o->svg_file,
                  "with --from-nccl-tests: also draw each log's busbw against size, measured, on the cluster as given "
                  "and as fitted (SVG)");
  cmd->add_option("--name", o->name, "the cluster's name (default calibrated-KxR)");
  cmd->add_option("--max-bytes", o->max_bytes,
                  "largest buffer swept, up to 256 MiB (default 64 MiB: a 256 MiB point takes ~10 s at 400 Mbit/s)")
      ->capture_default_str();
  cmd->add_option("--min-bytes", o->min_bytes, "smallest buffer swept (doubling from here)")->capture_default_str();
  cmd->add_option("--fit", o->fit,
                  "ring: fit on allreduce, reduce-scatter and allgather (Gloo's ring algorithms, as simulated); "
                  "all: on every swept collective")
      ->capture_default_str();
  cmd->add_option("--fit-min-bytes", o->fit_min_bytes,
                  "smallest size fitted (smaller ones are printed with their residuals only): below it TCP start-up "
                  "and a shaper's burst dominate")
      ->capture_default_str();
  cmd->add_option("--iters", o->iters, "timed iterations per point")->capture_default_str();
  cmd->add_option("--warmup", o->warmup, "untimed iterations per point")->capture_default_str();
  cmd->add_option("--interference-ms", o->interference_ms,
                  "gloo: time a compute load of about this many ms alone and beside an allreduce loop on every rank "
                  "at once, and print the slowdowns (0: skip)")
      ->check(CLI::Range(0.0, 60000.0))
      ->capture_default_str();
  cmd->add_flag("--write-interference,!--no-write-interference", o->write_interference,
                "write the measured slowdowns and delay as the cluster's interference (the default; over 24 DDP runs "
                "on the testbed they brought the median error of every kind of trace down by 0.4-0.8 points: "
                "bench/validate/README.md)");
  cmd->add_option("--hook-bucket-mb", o->hook_bucket_mb,
                  "gloo: time what fp16_compress_hook does to a bucket of this many MiB on every rank at once, and "
                  "write its casts to fp16 and back as the device's memory_GBps (which prices the DDP comm hooks' "
                  "kernels), Gloo's fp16 sum as reduce_GBps_by_dtype.fp16, a plain fp32 += loop as copy_GBps with "
                  "framework.bucket_copy (DDP's bucket copies), and a copy into newly mapped memory as "
                  "fresh_copy_GBps (LocalSGD's torch.cat over 32 MiB) (0: skip all four, and they cost nothing)")
      ->check(CLI::Range(0.0, 1024.0))
      ->capture_default_str();
  cmd->add_option("--timeout-s", o->timeout_s, "seconds a collective may wait for its peers")->capture_default_str();
  cmd->add_option("--rate-label", o->rate, "(set by --testbed) the shaped rate, recorded in the cluster's source")
      ->group("");
  cmd->callback([o] { run_calibrate(*o); });
}

}  // namespace redsim::cli
