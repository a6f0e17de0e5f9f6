// redsim trace synth|show: synthesise a model trace from published shapes, or summarise one.
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/model_zoo.h"
#include "core/trace_json.h"

namespace redsim::cli {
namespace {

std::string with_commas(std::int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

std::string ms(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f ms", seconds * 1e3);
  return buf;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string mib(std::int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

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
  int seq_len = 0;
  std::string param_dtype;
  // Set after parsing: which options were given (the rest take the model's defaults).
  CLI::Option *batch_opt = nullptr, *name_opt = nullptr, *peak_opt = nullptr, *mem_opt = nullptr,
              *eff_opt = nullptr, *seq_opt = nullptr, *dtype_opt = nullptr;
};

void run_synth(const SynthArgs& a) {
  SynthOptions o = default_synth_options(a.model);
  if (a.batch_opt->count()) o.batch_size_per_rank = a.batch_size;
  if (a.name_opt->count()) o.device_name = a.device_name;
  if (a.peak_opt->count()) o.device_peak_tflops = a.device_peak_tflops;
  if (a.mem_opt->count()) o.device_memory_GBps = a.device_memory_GBps;
  if (a.eff_opt->count()) o.efficiency = a.efficiency;
  if (a.seq_opt->count()) o.seq_len = a.seq_len;
  if (a.dtype_opt->count()) {
    auto t = parse_dtype(a.param_dtype);
    if (!t) throw InputError("", "", "--param-dtype: expected fp32, bf16 or fp16, got \"" + a.param_dtype + "\"");
    o.param_dtype = *t;
  }
  ModelTrace t = synthesize_trace(o);
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

void run_show(const std::string& file) {
  ModelTrace t = load_trace(file);
  struct Tally {
    std::size_t tensors = 0;
    std::int64_t numel = 0, bytes = 0;
  };
  auto line = [](const std::string& label, const Tally& n) {
    std::cout << "  " << label << std::string(label.size() < 10 ? 10 - label.size() : 0, ' ') << n.tensors
              << " tensors, " << with_commas(n.numel) << " elements, " << with_commas(n.bytes) << " bytes ("
              << mib(n.bytes) << ")\n";
  };
  Tally all, reduced, frozen, excluded;
  std::map<std::string, Tally> by_dtype;
  auto add = [](Tally& n, std::int64_t numel, std::int64_t bytes) {
    ++n.tensors;
    n.numel += numel;
    n.bytes += bytes;
  };
  for (const auto& p : t.params) {
    add(all, p.numel, p.bytes());
    add(by_dtype[std::string(dtype_name(p.dtype))], p.numel, p.bytes());
    if (p.reduced()) add(reduced, p.numel, p.bytes());
    if (!p.trainable) add(frozen, p.numel, p.bytes());
    if (p.trainable && p.excluded) add(excluded, p.numel, p.bytes());
  }
  Tally buffers, broadcast;
  for (const auto& b : t.buffers) {
    add(buffers, b.numel, b.bytes());
    if (b.broadcast) add(broadcast, b.numel, b.bytes());
  }
  std::vector<bool> has_params(t.layers.size(), false);
  for (const auto& p : t.params) has_params[p.layer] = true;
  std::size_t bare_layers = 0;
  double fwd_s = 0, bwd_s = 0;
  for (std::size_t i = 0; i < t.layers.size(); ++i) {
    fwd_s += t.layers[i].forward_s;
    bwd_s += t.layers[i].backward_s;
    if (!has_params[i]) ++bare_layers;
  }

  std::cout << "trace:      " << file << "\n"
            << "model:      " << t.model << "\n"
            << "reference:  " << t.reference_device << ", batch " << t.batch_size_per_rank << " per rank\n"
            << "params:\n";
  line("all", all);
  for (const auto& [name, n] : by_dtype) line(name, n);
  line("reduced", reduced);
  if (frozen.tensors > 0) line("frozen", frozen);
  if (excluded.tensors > 0) line("excluded", excluded);
  std::cout << "buffers:\n";
  line("all", buffers);
  line("broadcast", broadcast);
  std::cout << "layers:     " << t.layers.size() << " (" << bare_layers << " without parameters)\n"
            << "forward:    " << ms(fwd_s) << "\n"
            << "backward:   " << ms(bwd_s) << "\n"
            << "optimizer:  " << ms(t.optimizer_s) << "\n"
            << "compute:    " << ms(fwd_s + bwd_s + t.optimizer_s)
            << " per step (forward + backward + optimizer, no communication)\n"
            << "source:     " << (t.source.empty() ? "(not stated)" : t.source) << "\n";
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
  a->name_opt = cmd->add_option("--device-name", a->device_name,
                                "reference device the times refer to, written as reference_device (" +
                                    default_text([](const SynthOptions& o) { return "\"" + o.device_name + "\""; }) +
                                    ")");
  a->peak_opt = cmd->add_option(
      "--device-peak-tflops", a->device_peak_tflops,
      "dense 16-bit tensor-core peak of the device, TFLOP/s (" +
          default_text([](const SynthOptions& o) { return num(o.device_peak_tflops); }) + ")");
  a->mem_opt = cmd->add_option(
      "--device-mem-GBps", a->device_memory_GBps,
      "peak memory bandwidth of the device, GB/s (decimal), for normalisation, embedding and Adam (" +
          default_text([](const SynthOptions& o) { return num(o.device_memory_GBps); }) + ")");
  a->eff_opt = cmd->add_option(
      "--efficiency", a->efficiency,
      "fraction of peak compute and of peak memory bandwidth achieved, in (0, 1] (" +
          default_text([](const SynthOptions& o) { return num(o.efficiency); }) + ")");
  a->seq_opt = cmd->add_option(
      "--seq-len", a->seq_len,
      "tokens per sequence, transformers only (" +
          default_text([](const SynthOptions& o) {
            return o.seq_len > 0 ? std::to_string(o.seq_len) : std::string("none");
          }) + ")");
  a->dtype_opt = cmd->add_option(
      "--param-dtype", a->param_dtype,
      "dtype of parameters and gradients: fp32, bf16 or fp16 (" +
          default_text([](const SynthOptions& o) { return std::string(dtype_name(o.param_dtype)); }) + ")");
  cmd->callback([a] { run_synth(*a); });
}

void add_show(CLI::App& trace) {
  auto file = std::make_shared<std::string>();
  auto* cmd = trace.add_subcommand("show", "summarise a model trace: parameters by dtype, layers, compute times");
  cmd->add_option("file", *file, "model trace JSON (traces/README.md)")->required();
  cmd->callback([file] { run_show(*file); });
}

}  // namespace

void add_trace_commands(CLI::App& app) {
  auto* trace = app.add_subcommand("trace", "synthesise and inspect model traces (traces/README.md)");
  trace->require_subcommand(1);
  add_synth(*trace);
  add_show(*trace);
}

}  // namespace redsim::cli
