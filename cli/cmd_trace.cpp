// redsim trace synth|import|show: synthesise a model trace from published shapes, reconstruct one
// from a PyTorch profiler trace, or summarise one (show: cmd_trace_show.cpp). The work is
// trace_tools/'s; this file parses options and prints.
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/knob_options.h"
#include "cli/text_format.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/trace_batch.h"
#include "core/trace_json.h"
#include "core/units.h"
#include "trace_tools/imported_run.h"
#include "trace_tools/kineto_import.h"
#include "trace_tools/model_zoo.h"
#include "trace_tools/resolved_params.h"
#include "trace_tools/synth_curve.h"

namespace redsim::cli {
namespace {

std::string num(double v) { return fmt("%g", v); }

// "default X", or "default per model: resnet50 X, ..." where the models differ; for --help.
std::string default_text(const std::function<std::string(const SynthOptions&)>& field) {
  std::string per_model, first;
  bool all_same = true;
  for (const auto& m : zoo_models()) {
    auto v = field(default_synth_options(m));
    if (first.empty()) first = v;
    all_same = all_same && v == first;
    per_model += (per_model.empty() ? "" : ", ") + m + " " + v;
  }
  return all_same ? "default " + first : "default per model: " + per_model;
}

struct SynthArgs {
  std::string model;
  std::string out_file;
  std::int64_t batch_size = 0;
  std::string device_name;
  double device_peak_tflops = 0;
  double device_memory_GBps = 0;
  double efficiency = 0;
  double kernel_overhead_us = 0;
  int seq_len = 0;
  std::string param_dtype;
  std::string attention = "flash";
  std::string batch_sizes = "auto";  // --batch-sizes: also synthesise at these, as the trace's batch curve
  // Set after parsing: which options were given (the rest take the model's defaults).
  CLI::Option *batch_opt = nullptr, *name_opt = nullptr, *peak_opt = nullptr, *mem_opt = nullptr,
              *eff_opt = nullptr, *seq_opt = nullptr, *dtype_opt = nullptr, *kernel_opt = nullptr;
};

void run_synth(const SynthArgs& a) {
  SynthOptions o = default_synth_options(a.model);
  if (a.batch_opt->count()) o.batch_size_per_rank = a.batch_size;
  if (a.name_opt->count()) o.device_name = a.device_name;
  if (a.peak_opt->count()) o.device_peak_tflops = a.device_peak_tflops;
  if (a.mem_opt->count()) o.device_memory_GBps = a.device_memory_GBps;
  if (a.eff_opt->count()) o.efficiency = a.efficiency;
  if (a.kernel_opt->count()) o.kernel_overhead_us = a.kernel_overhead_us;
  if (a.seq_opt->count()) o.seq_len = a.seq_len;
  if (a.dtype_opt->count()) {
    auto t = parse_dtype(a.param_dtype);
    if (!t) throw InputError("", "", "--param-dtype: expected fp32, bf16 or fp16, got \"" + a.param_dtype + "\"");
    o.param_dtype = *t;
  }
  o.flash_attention = a.attention == "flash";
  // auto: synth's own curve; none: the trace's batch alone; a list: those sizes, each required.
  const bool automatic = a.batch_sizes == "auto";
  const std::vector<std::int64_t> sizes =
      automatic ? default_curve_batch_sizes(o.batch_size_per_rank)
      : a.batch_sizes == "none" ? std::vector<std::int64_t>{o.batch_size_per_rank}
                                : parse_batch_sizes(a.batch_sizes, o.batch_size_per_rank);
  const ModelTrace t = synthesize_with_curve(o, sizes, automatic);
  write_file_atomically(a.out_file, trace_to_json(t).dump(1) + "\n");
  double fwd_s = 0, bwd_s = 0;
  for (const auto& l : t.layers) {
    fwd_s += l.forward_s;
    bwd_s += l.backward_s;
  }
  std::cout << a.out_file << ": " << t.model << ", " << t.params.size() << " tensors, "
            << with_commas(t.param_count()) << " params, " << with_commas(t.reduced_bytes()) << " bytes "
            << dtype_name(o.param_dtype) << ", " << t.layers.size() << " layers; per step (batch "
            << t.batch_size_per_rank << ", " << t.reference_device << "): forward " << ms(fwd_s) << ", backward "
            << ms(bwd_s) << ", optimizer " << ms(t.optimizer_s) << "\n";
}

// ---- redsim trace import ----

struct ImportArgs {
  std::string kineto_file;
  std::string out_file;
  std::string measured_file;
  std::int64_t step = -1;
  bool average = false;
  std::string model;
  std::int64_t batch_size = 1;
  std::string compute_slowdown = "1";  // a factor, or "sm_share"
  int sm_count = 0;
  std::string params_from;
  double bucket_mb = 25, first_bucket_mb = 1;
  CLI::Option* step_opt = nullptr;
  CLI::Option* batch_opt = nullptr;
};

std::string ms3(double s) { return fmt("%.3f", s * 1e3); }

void print_import(const ImportArgs& a, const KinetoImport& imp, const StepSummary& summary) {
  for (const auto& w : imp.warnings) std::cerr << "redsim: warning: " << w << "\n";
  std::cout << "kineto:     " << a.kineto_file << " (" << imp.step_text << "), rank " << imp.rank << " of "
            << (imp.world_size > 0 ? std::to_string(imp.world_size) : std::string("?")) << ", " << imp.device << "\n"
            << "forward:    " << ms(imp.forward_end_s - imp.forward_start_s) << "\n"
            << "backward:   " << ms(imp.backward_end_s - imp.backward_start_s) << " (kernels busy "
            << ms(imp.backward_busy_s) << ")\n"
            << "optimizer:  " << ms(imp.optimizer_end_s - imp.optimizer_start_s) << "\n"
            << "activations:"
            << (imp.activation_bytes ? " " + with_commas(*imp.activation_bytes) + " bytes (" + mib(*imp.activation_bytes) +
                                           ") left allocated by forward on the GPU"
                                     : std::string(" not in the profile (record it with profile_memory=True)"))
            << "\n"
            << "step:       " << ms(summary.step_time_s) << " (first kernel to last), exposed communication "
            << ms(summary.exposed_comm_s) << "\n"
            << "gradients:  "
            << (imp.grad_tensors > 0 ? with_commas(imp.grad_tensors) + " tensors (AccumulateGrad ops a step)"
                                     : std::string("tensors not in the profile (no AccumulateGrad ops)"))
            << "\n";
  if (imp.taken_out.any())
    std::cout << "alone:      " << ms(imp.taken_out.total_s()) << " per step taken out of compute that ran beside "
              << "NCCL kernels ("
              << (imp.taken_out.sm_share ? "the SM-share rule on " + std::to_string(imp.taken_out.sm_count) + " SMs"
                                         : "compute slowdown " + fmt("%.4g", imp.taken_out.slowdown))
              << ")\n";
  std::int64_t total = 0;
  for (const auto& b : imp.buckets) total += b.numel * dtype_size_bytes(b.dtype);
  std::cout << "buckets:    " << imp.buckets.size() << " gradient allreduces"
            << (imp.sizes_known ? ", " + with_commas(total) + " bytes (" + mib(total) + ")"
                                : std::string(", sizes unknown"))
            << "; times in ms from the start of the step\n";
  std::cout << "  " << pad("bucket", 6, true) << "  " << pad("dtype", 5) << "  " << pad("elements", 13, true) << "  "
            << pad("ready", 9, true) << "  " << pad("start", 9, true) << "  " << pad("end", 9, true) << "  "
            << pad("duration", 9, true) << "  " << pad("busbw GB/s", 10, true) << "\n";
  for (std::size_t k = 0; k < imp.buckets.size(); ++k) {
    const auto& b = imp.buckets[k];
    std::string busbw = "-";
    for (const auto& c : summary.collectives)
      if (c.bucket == static_cast<int>(k) && imp.sizes_known && imp.world_size > 1) busbw = fmt("%.2f", c.busbw_GBps);
    std::cout << "  " << pad(std::to_string(k), 6, true) << "  "
              << pad(b.dtype_known ? std::string(dtype_name(b.dtype)) : std::string("?"), 5) << "  "
              << pad(b.numel > 0 ? with_commas(b.numel) : std::string("?"), 13, true) << "  "
              << pad(ms3(b.ready_s), 9, true) << "  " << pad(ms3(b.start_s), 9, true) << "  "
              << pad(ms3(b.end_s), 9, true) << "  " << pad(ms3(b.end_s - b.start_s), 9, true) << "  "
              << pad(busbw, 10, true) << "\n";
  }
}

void print_next_step(const ImportArgs& a, const ModelTrace& t, const Knobs& knobs) {
  if (!a.params_from.empty())
    std::cout << "trace:      " << a.out_file << " (" << t.params.size() << " parameters of " << a.params_from
              << ", in the profile's buckets at " << fmt("%g", a.bucket_mb) << " MiB, first "
              << fmt("%g", a.first_bucket_mb) << " MiB; " << t.layers.size()
              << " layers: simulate it at any bucket size)\n";
  else
    std::cout << "trace:      " << a.out_file << " (" << t.params.size() << " synthetic parameters, one per bucket; "
              << t.layers.size() << " layers)\n";
  if (t.compute_beside_collectives)
    std::cout << "compute:    as measured, slowed beside NCCL kernels (compute_timed beside_collectives): simulate "
                 "it on a cluster whose interference.compute_slowdown is 1, or re-import with --compute-slowdown "
                 "F|sm_share for a cluster that slows compute itself (the GPU presets do)\n";
  if (!a.measured_file.empty()) {
    std::cout << "measured:   " << a.measured_file << " (redsim-result, engine kineto-import: the measured Timeline)\n"
              << "predict it: redsim simulate --trace " << shell_word(a.out_file)
              << " --cluster CLUSTER.json --config " << shell_word(a.measured_file) << "\n";
    return;
  }
  const auto mb = [](std::int64_t b) { return fmt("%.17g", static_cast<double>(b) / static_cast<double>(kMiB)); };
  std::cout << "predict it: redsim simulate --trace " << shell_word(a.out_file) << " --cluster CLUSTER.json --strategy bucketed"
            << " --bucket-order execution --bucket-mb " << mb(knobs.bucket_cap_bytes) << " --first-bucket-mb "
            << mb(knobs.first_bucket_cap_bytes)
            << (a.params_from.empty() ? "  (caps at the smallest bucket: one bucket per synthetic parameter)"
                                      : "  (the profiled job's caps)")
            << "\n";
}

void run_import(const ImportArgs& a) {
  KinetoImportOptions o;
  if (a.step_opt->count()) {
    if (a.step < 0)
      throw InputError("", "", "--step: expected a ProfilerStep number >= 0, got " + std::to_string(a.step));
    o.step = a.step;
  }
  if (a.batch_size < 1)
    throw InputError("", "", "--batch-size: expected a positive integer, got " + std::to_string(a.batch_size));
  o.model = a.model;
  o.batch_size_per_rank = a.batch_size;
  if (a.compute_slowdown == "sm_share") {
    o.compute_slowdown_sm_share = true;
    o.sm_count = a.sm_count;
  } else {
    o.compute_slowdown = std::stod(a.compute_slowdown);  // checked by its validator
    if (a.sm_count > 0) throw InputError("", "", "--sm-count: expected only with --compute-slowdown sm_share");
  }
  // Everything is read and checked before anything is written.
  const std::vector<NamedPath> outputs{{"--out", a.out_file}, {"--measured", a.measured_file}};
  check_outputs_distinct({{"--kineto", a.kineto_file}, {"--params-from", a.params_from}}, outputs);
  check_output_targets(outputs);
  ModelTrace model;
  ResolveOptions resolve;
  if (!a.params_from.empty()) {
    resolve.bucket_cap_bytes = mib_to_bytes(a.bucket_mb, "--bucket-mb");
    resolve.first_bucket_cap_bytes = mib_to_bytes(a.first_bucket_mb, "--first-bucket-mb");
    model = load_trace(a.params_from);
    resolve.model = &model;
    resolve.model_file = a.params_from;
    resolve.batch_known = a.batch_opt->count() > 0;
  }
  KinetoImport imp = import_kineto_file(a.kineto_file, o);
  if (resolve.model != nullptr) resolve_params(imp, resolve);
  const ImportedRun run = imported_run(imp);
  print_import(a, imp, run.summary);
  // Both outputs are composed before either is written.
  const std::string trace_text = trace_to_json(imp.trace).dump(1) + "\n";
  if (!a.measured_file.empty())
    write_file_atomically(a.measured_file,
                          imported_result_json(imp, run, a.out_file, a.kineto_file).dump(1) + "\n");
  write_file_atomically(a.out_file, trace_text);
  print_next_step(a, imp.trace, run.knobs);
}

void add_synth(CLI::App& trace) {
  auto a = std::make_shared<SynthArgs>();
  std::string models;
  for (const auto& m : zoo_models()) models += (models.empty() ? "" : ", ") + m;
  auto* cmd = trace.add_subcommand(
      "synth", "synthesise a model trace from the model's published shapes and a device's peak throughput");
  cmd->add_option("--model", a->model, "model to synthesise: " + models)->required();
  cmd->add_option("--out", a->out_file, "write the trace JSON here")->required();
  a->batch_opt = cmd->add_option(
      "--batch-size", a->batch_size,
      "samples per rank per step: images or sequences (" +
          default_text([](const SynthOptions& o) { return std::to_string(o.batch_size_per_rank); }) + ")");
  a->name_opt =
      cmd->add_option("--device-name", a->device_name,
                      "reference device the times refer to, written as reference_device (" +
                          default_text([](const SynthOptions& o) { return "\"" + o.device_name + "\""; }) + ")");
  a->peak_opt =
      cmd->add_option("--device-peak-tflops", a->device_peak_tflops,
                      "dense 16-bit tensor-core peak of the device, TFLOP/s (" +
                          default_text([](const SynthOptions& o) { return num(o.device_peak_tflops); }) + ")");
  a->mem_opt =
      cmd->add_option("--device-mem-GBps", a->device_memory_GBps,
                      "peak memory bandwidth of the device, GB/s (decimal), for normalisation, embedding and Adam (" +
                          default_text([](const SynthOptions& o) { return num(o.device_memory_GBps); }) + ")");
  a->eff_opt = cmd->add_option("--efficiency", a->efficiency,
                               "fraction of peak compute and of peak memory bandwidth achieved, in (0, 1] (" +
                                   default_text([](const SynthOptions& o) { return num(o.efficiency); }) + ")");
  a->kernel_opt = cmd->add_option(
      "--kernel-overhead-us", a->kernel_overhead_us,
      "fixed cost of one kernel, us: 1 per layer forward, 2 backward; what does not shrink with the batch (" +
          default_text([](const SynthOptions& o) { return num(o.kernel_overhead_us); }) + ")");
  a->seq_opt = cmd->add_option("--seq-len", a->seq_len,
                               "tokens per sequence, transformers only (" + default_text([](const SynthOptions& o) {
                                 return o.seq_len > 0 ? std::to_string(o.seq_len) : std::string("none");
                               }) + ")");
  a->dtype_opt = cmd->add_option(
      "--param-dtype", a->param_dtype,
      "dtype of parameters and gradients: fp32, bf16 or fp16 (" +
          default_text([](const SynthOptions& o) { return std::string(dtype_name(o.param_dtype)); }) + ")");
  cmd->add_option("--attention", a->attention,
                  "what attention keeps for backward, for activation_bytes: flash (fused kernels, as PyTorch's SDPA "
                  "runs it on GPUs: no seq x seq matrix) or eager (the softmax probabilities; with dropout, its mask "
                  "and the dropped ones)")
      ->check(CLI::IsMember({"flash", "eager"}))
      ->default_str("flash");
  cmd->add_option("--batch-sizes", a->batch_sizes,
                  "also synthesise the layers at these batch sizes (comma-separated) and write them as the trace's "
                  "batch curve, for --batch-size and tune --samples-per-rank; auto: every power of two from the "
                  "batch / 256 (at least 1) to 4 x the batch, as far as a trace file holds them; none: no curve")
      ->default_str("auto");
  cmd->callback([a] { run_synth(*a); });
}

void add_import(CLI::App& trace) {
  auto a = std::make_shared<ImportArgs>();
  auto* cmd = trace.add_subcommand(
      "import",
      "reconstruct a model trace (one synthetic parameter per DDP bucket) and the measured allreduce timeline "
      "from a PyTorch profiler (Kineto) trace of a data-parallel NCCL job");
  cmd->add_option("--kineto", a->kineto_file, "PyTorch profiler Chrome trace of one rank, .json or .json.gz")
      ->required();
  cmd->add_option("--out", a->out_file, "write the reconstructed model trace JSON here")->required();
  cmd->add_option("--measured", a->measured_file,
                  "write the measured Timeline here, as a redsim-result with engine kineto-import (for redsim "
                  "validate --measured)");
  a->step_opt = cmd->add_option("--step", a->step, "import only ProfilerStep#N (default: the mean over every step)");
  auto* avg = cmd->add_flag("--average", a->average, "the mean over every profiler step (the default)");
  a->step_opt->excludes(avg);
  cmd->add_option("--model", a->model, "model name written into the trace (default: from the file name)");
  a->batch_opt = cmd->add_option("--batch-size", a->batch_size,
                                 "samples per rank per step the profiled job ran (not in a profiler trace; with "
                                 "--params-from, it carries the model trace's batch curve over)")
                     ->capture_default_str();
  cmd->add_option("--compute-slowdown", a->compute_slowdown,
                  "take this interference out of the compute: kernels that ran beside NCCL kernels are timed as if "
                  "alone (the cluster's interference.compute_slowdown: a factor, as calibrate --from-profile fits "
                  "it, or sm_share, the presets' rule, with each NCCL kernel's grid from the profile; 1 = as "
                  "measured)")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            if (v == "sm_share") return {};
            try {
              std::size_t used = 0;
              const double x = std::stod(v, &used);
              if (used == v.size() && x >= 1 && x <= 10) return {};
            } catch (const std::exception&) {
            }
            return "expected a factor from 1 to 10 or sm_share, got " + v;
          },
          "FACTOR|sm_share"))
      ->capture_default_str();
  cmd->add_option("--sm-count", a->sm_count,
                  "with --compute-slowdown sm_share: the device's SMs (default: the profile's deviceProperties "
                  "numSms)")
      ->check(CLI::Range(1, 4096));
  auto* from = cmd->add_option("--params-from", a->params_from,
                               "a model trace of the profiled model (redsim_capture.py, trace synth): its parameters "
                               "replace the synthetic per-bucket ones, so the trace can be simulated at any bucket "
                               "size (DDP at --bucket-mb must make the profile's buckets from them)");
  cmd->add_option("--bucket-mb", a->bucket_mb, "with --params-from: the profiled job's bucket_cap_mb")
      ->capture_default_str()
      ->needs(from);
  cmd->add_option("--first-bucket-mb", a->first_bucket_mb,
                  "with --params-from: the profiled job's first bucket in MiB (DDP's _DEFAULT_FIRST_BUCKET_BYTES)")
      ->capture_default_str()
      ->needs(from);
  cmd->callback([a] { run_import(*a); });
}

}  // namespace

void add_trace_commands(CLI::App& app) {
  auto* trace = app.add_subcommand("trace", "synthesise, import and inspect model traces (traces/README.md)");
  trace->require_subcommand(1);
  add_synth(*trace);
  add_import(*trace);
  add_trace_show_command(*trace);
}

}  // namespace redsim::cli
