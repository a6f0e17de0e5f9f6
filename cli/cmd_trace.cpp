// redsim trace synth|import|show: synthesise a model trace from published shapes, reconstruct one
// from a PyTorch profiler trace, or summarise one.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "core/atomic_file.h"
#include "core/cluster.h"
#include "core/error.h"
#include "core/result_json.h"
#include "core/step_summary.h"
#include "core/trace_json.h"
#include "core/units.h"
#include "strategies/ddp_bucketing.h"
#include "strategies/strategy.h"
#include "trace_tools/grad_ready.h"
#include "trace_tools/kineto_import.h"
#include "trace_tools/model_zoo.h"

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

struct ShowArgs {
  std::string file;
  double bucket_mb = 25;
  double first_bucket_mb = 1;
  std::string bucket_order = "execution";
  std::size_t top = 10;
  std::size_t bins = 20;
  std::string json_file;
};

std::int64_t mib_option_to_bytes(double mib, const char* flag) {
  if (!(mib > 0) || !std::isfinite(mib) || mib > 1024.0 * 1024.0)
    throw InputError("", "", std::string(flag) + ": expected a positive size in MiB (at most 1 TiB), got " + num(mib));
  return std::max<std::int64_t>(1, std::llround(mib * static_cast<double>(kMiB)));
}

std::string pct(double part, double whole) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", whole > 0 ? 100.0 * part / whole : 0.0);
  return buf;
}

std::string pad(std::string s, std::size_t width, bool right = false) {
  if (s.size() >= width) return s;
  return right ? std::string(width - s.size(), ' ') + s : s + std::string(width - s.size(), ' ');
}

void run_show(const ShowArgs& a) {
  ModelTrace t = load_trace(a.file);
  Knobs knobs;
  knobs.bucket_cap_bytes = mib_option_to_bytes(a.bucket_mb, "--bucket-mb");
  knobs.first_bucket_cap_bytes = mib_option_to_bytes(a.first_bucket_mb, "--first-bucket-mb");
  if (a.bucket_order == "execution")
    knobs.bucket_order = BucketOrder::execution;
  else if (a.bucket_order == "definition")
    knobs.bucket_order = BucketOrder::definition;
  else
    throw InputError("", "", "--bucket-order: expected execution|definition, got \"" + a.bucket_order + "\"");
  if (a.bins < 1 || a.bins > 200) throw InputError("", "", "--bins: expected 1 to 200, got " + std::to_string(a.bins));

  struct Tally {
    std::size_t tensors = 0;
    std::int64_t numel = 0, bytes = 0;
  };
  auto line = [](const std::string& label, const Tally& n) {
    std::cout << "  " << pad(label, 10) << n.tensors << " tensors, " << with_commas(n.numel) << " elements, "
              << with_commas(n.bytes) << " bytes (" << mib(n.bytes) << ")\n";
  };
  auto tally_json = [](const Tally& n) {
    return nlohmann::json{{"tensors", n.tensors}, {"numel", n.numel}, {"bytes", n.bytes}};
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
  const double step_s = fwd_s + bwd_s + t.optimizer_s;

  std::cout << "trace:      " << a.file << "\n"
            << "model:      " << t.model << "\n"
            << "reference:  " << t.reference_device << ", batch " << t.batch_size_per_rank << " per rank\n"
            << "source:     " << (t.source.empty() ? "(not stated)" : t.source) << "\n"
            << "params:\n";
  line("all", all);
  for (const auto& [name, n] : by_dtype) line(name, n);
  line("reduced", reduced);
  if (frozen.tensors > 0) line("frozen", frozen);
  if (excluded.tensors > 0) line("excluded", excluded);
  std::cout << "buffers:\n";
  line("all", buffers);
  line("broadcast", broadcast);

  // Compute split.
  std::cout << "compute per step (no communication): " << ms(step_s) << "\n"
            << "  forward    " << pad(ms(fwd_s), 12, true) << "  " << pct(fwd_s, step_s) << "\n"
            << "  backward   " << pad(ms(bwd_s), 12, true) << "  " << pct(bwd_s, step_s) << "\n"
            << "  optimizer  " << pad(ms(t.optimizer_s), 12, true) << "  " << pct(t.optimizer_s, step_s) << "\n"
            << "  layers     " << t.layers.size() << " (" << bare_layers << " without parameters)\n";
  std::vector<std::size_t> by_time(t.layers.size());
  for (std::size_t i = 0; i < by_time.size(); ++i) by_time[i] = i;
  std::stable_sort(by_time.begin(), by_time.end(), [&](std::size_t x, std::size_t y) {
    return t.layers[x].forward_s + t.layers[x].backward_s > t.layers[y].forward_s + t.layers[y].backward_s;
  });
  const std::size_t top = std::min(a.top, by_time.size());
  nlohmann::json top_json = nlohmann::json::array();
  if (top > 0) {
    std::size_t width = 5;
    for (std::size_t r = 0; r < top; ++r) width = std::max(width, t.layers[by_time[r]].name.size());
    std::cout << "  top " << top << " layers by forward + backward:\n"
              << "    " << pad("layer", width) << "  " << pad("forward", 12, true) << "  " << pad("backward", 12, true)
              << "  of fwd+bwd\n";
    for (std::size_t r = 0; r < top; ++r) {
      const auto& l = t.layers[by_time[r]];
      std::cout << "    " << pad(l.name, width) << "  " << pad(ms(l.forward_s), 12, true) << "  "
                << pad(ms(l.backward_s), 12, true) << "  "
                << pad(pct(l.forward_s + l.backward_s, fwd_s + bwd_s), 9, true) << "\n";
      top_json.push_back({{"layer", l.name}, {"forward_s", l.forward_s}, {"backward_s", l.backward_s}});
    }
  }

  // DDP's buckets at this cap.
  const auto buckets = ddp_buckets(t, knobs);
  std::int64_t bucket_bytes = 0;
  for (const auto& b : buckets) bucket_bytes += b.bytes;
  std::cout << "DDP buckets (bucket_cap_mb " << num(a.bucket_mb) << ", first bucket " << num(a.first_bucket_mb)
            << " MiB, " << bucket_order_name(knobs.bucket_order) << " order, in launch order): " << buckets.size()
            << " buckets, " << with_commas(bucket_bytes) << " bytes (" << mib(bucket_bytes) << ")\n";
  nlohmann::json buckets_json = nlohmann::json::array();
  if (!buckets.empty()) {
    std::cout << "  " << pad("#", 5, true) << "  " << pad("dtype", 5) << "  " << pad("tensors", 7, true) << "  "
              << pad("bytes", 15, true) << "  " << pad("MiB", 9, true) << "  first param -> last param\n";
    constexpr std::size_t kHead = 10, kTail = 5;
    const bool abbreviate = buckets.size() > kHead + kTail + 1;
    for (std::size_t b = 0; b < buckets.size(); ++b) {
      const auto& bk = buckets[b];
      nlohmann::json params = nlohmann::json::array();
      for (auto p : bk.params) params.push_back(p);
      buckets_json.push_back({{"dtype", dtype_name(bk.dtype)},
                              {"bytes", bk.bytes},
                              {"numel", bk.numel},
                              {"size_limit_bytes", bk.size_limit_bytes},
                              {"first", t.params[bk.params.front()].name},
                              {"last", t.params[bk.params.back()].name},
                              {"params", std::move(params)}});
      if (abbreviate && b == kHead)
        std::cout << "  " << pad("...", 5, true) << "  (" << buckets.size() - kHead - kTail << " more buckets)\n";
      if (abbreviate && b >= kHead && b < buckets.size() - kTail) continue;
      char mibs[32];
      std::snprintf(mibs, sizeof mibs, "%.2f", static_cast<double>(bk.bytes) / static_cast<double>(kMiB));
      std::cout << "  " << pad(std::to_string(b), 5, true) << "  " << pad(std::string(dtype_name(bk.dtype)), 5) << "  "
                << pad(std::to_string(bk.params.size()), 7, true) << "  " << pad(with_commas(bk.bytes), 15, true)
                << "  " << pad(mibs, 9, true) << "  " << t.params[bk.params.front()].name;
      if (bk.params.size() > 1) std::cout << " -> " << t.params[bk.params.back()].name;
      std::cout << "\n";
    }
  }

  // When gradients become ready.
  const double total_bwd = backward_total_s(t);
  const auto hist = grad_ready_histogram(t, a.bins);
  std::size_t most = 0;
  for (const auto& h : hist) most = std::max(most, h.tensors);
  std::cout << "gradient-ready times (the end of the owning layer's backward, from the start of backward; "
            << t.grad_ready_order.size() << " trainable tensors over " << ms(total_bwd) << "):\n";
  nlohmann::json hist_json = nlohmann::json::array();
  constexpr std::size_t kBar = 40;
  const double grad_bytes = static_cast<double>(std::max<std::int64_t>(1, all.bytes - frozen.bytes));
  std::int64_t cumulative = 0;
  {
    char header[128];
    std::snprintf(header, sizeof header, "  %9s - %9s  %7s  %9s  %7s  %s\n", "from ms", "to ms", "tensors", "MiB",
                  "by then", "(bar: tensors)");
    std::cout << header;
  }
  for (const auto& h : hist) {
    cumulative += h.bytes;
    char row[128];
    std::snprintf(row, sizeof row, "  %9.3f - %9.3f  %7zu  %9.1f  %6.1f%%", h.start_s * 1e3, h.end_s * 1e3, h.tensors,
                  static_cast<double>(h.bytes) / static_cast<double>(kMiB),
                  100.0 * static_cast<double>(cumulative) / grad_bytes);
    const std::size_t bar = most > 0 ? (h.tensors * kBar + most - 1) / most : 0;
    std::cout << row << (bar > 0 ? "  " + std::string(bar, '#') : std::string()) << "\n";
    hist_json.push_back({{"start_s", h.start_s}, {"end_s", h.end_s}, {"tensors", h.tensors}, {"bytes", h.bytes}});
  }

  if (!a.json_file.empty()) {
    nlohmann::json dtypes = nlohmann::json::object();
    for (const auto& [name, n] : by_dtype) dtypes[name] = tally_json(n);
    nlohmann::json j = {{"format", "redsim-trace-summary"},
                        {"version", 1},
                        {"trace", a.file},
                        {"model", t.model},
                        {"params",
                         {{"all", tally_json(all)},
                          {"by_dtype", dtypes},
                          {"reduced", tally_json(reduced)},
                          {"frozen", tally_json(frozen)},
                          {"excluded", tally_json(excluded)}}},
                        {"buffers", {{"all", tally_json(buffers)}, {"broadcast", tally_json(broadcast)}}},
                        {"compute",
                         {{"forward_s", fwd_s},
                          {"backward_s", bwd_s},
                          {"optimizer_s", t.optimizer_s},
                          {"layers", t.layers.size()},
                          {"top_layers", top_json}}},
                        {"ddp_buckets",
                         {{"bucket_cap_bytes", knobs.bucket_cap_bytes},
                          {"first_bucket_cap_bytes", knobs.first_bucket_cap_bytes},
                          {"bucket_order", bucket_order_name(knobs.bucket_order)},
                          {"buckets", buckets_json}}},
                        {"grad_ready_histogram", {{"backward_s", total_bwd}, {"bins", hist_json}}}};
    write_file_atomically(a.json_file, j.dump(1) + "\n");
    std::cout << "summary JSON: " << a.json_file << "\n";
  }
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
  CLI::Option* step_opt = nullptr;
};

std::string ms3(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", s * 1e3);
  return buf;
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
  // Everything is read and checked before anything is written.
  KinetoImport imp = import_kineto_file(a.kineto_file, o);
  const ModelTrace& t = imp.trace;
  Knobs knobs = imported_bucket_knobs(imp);
  ClusterSpec cluster;
  cluster.name = "measured";
  cluster.nodes = 1;
  cluster.devices_per_node = std::max(1, imp.world_size);
  cluster.device.name = imp.device;
  Plan plan = make_strategy(knobs.strategy)->plan(t, cluster, knobs);
  // The plan must form exactly the measured buckets.
  std::size_t plan_buckets = 0;
  for (const auto& op : plan.ops) plan_buckets += op.kind == OpKind::allreduce ? 1 : 0;
  if (plan_buckets != imp.buckets.size())
    throw std::logic_error("trace import: the bucketed plan has " + std::to_string(plan_buckets) + " allreduces for " +
                           std::to_string(imp.buckets.size()) + " imported buckets");
  Timeline tl = imported_timeline(plan, imp);
  StepSummary summary = summarize(plan, tl);

  for (const auto& w : imp.warnings) std::cerr << "redsim: warning: " << w << "\n";

  std::cout << "kineto:     " << a.kineto_file << " (" << imp.step_text << "), rank " << imp.rank << " of "
            << (imp.world_size > 0 ? std::to_string(imp.world_size) : std::string("?")) << ", " << imp.device << "\n"
            << "forward:    " << ms(imp.forward_end_s - imp.forward_start_s) << "\n"
            << "backward:   " << ms(imp.backward_end_s - imp.backward_start_s) << " (kernels busy "
            << ms(imp.backward_busy_s) << ")\n"
            << "optimizer:  " << ms(imp.optimizer_end_s - imp.optimizer_start_s) << "\n"
            << "step:       " << ms(summary.step_time_s) << " (first kernel to last), exposed communication "
            << ms(summary.exposed_comm_s) << "\n";
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
    const CollectiveStat* stat = nullptr;
    for (const auto& c : summary.collectives)
      if (c.bucket == static_cast<int>(k)) stat = &c;
    std::string busbw = "-";
    if (stat != nullptr && imp.sizes_known && imp.world_size > 1) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.2f", stat->busbw_GBps);
      busbw = buf;
    }
    std::cout << "  " << pad(std::to_string(k), 6, true) << "  "
              << pad(b.dtype_known ? std::string(dtype_name(b.dtype)) : std::string("?"), 5) << "  "
              << pad(b.numel > 0 ? with_commas(b.numel) : std::string("?"), 13, true) << "  "
              << pad(ms3(b.ready_s), 9, true) << "  " << pad(ms3(b.start_s), 9, true) << "  "
              << pad(ms3(b.end_s), 9, true) << "  " << pad(ms3(b.end_s - b.start_s), 9, true) << "  "
              << pad(busbw, 10, true) << "\n";
  }

  // Both outputs are composed before either is written.
  const std::string trace_text = trace_to_json(t).dump(1) + "\n";
  std::string measured_text;
  if (!a.measured_file.empty()) {
    nlohmann::json steps = nlohmann::json::array();
    for (auto s : imp.steps) steps.push_back(s);
    const ResultInputs inputs{a.out_file, &t, "", &cluster,
                              {{"name", "kineto-import"},
                               {"file", a.kineto_file},
                               {"steps", steps},
                               {"step", imp.step_text},
                               {"rank", imp.rank}}};
    // The timeline is the profiled rank's, of the mean step; each step's own time is measured.
    Measurement measurement{imp.step_times_s, -1, {{"timeline_step", imp.step_text}}};
    const RedsimResult result{inputs, &knobs, &plan, &summary, &tl, {imp.rank}, std::move(measurement)};
    measured_text = result_to_json(result).dump(1) + "\n";
    write_file_atomically(a.measured_file, measured_text);
  }
  write_file_atomically(a.out_file, trace_text);
  std::cout << "trace:      " << a.out_file << " (" << t.params.size() << " synthetic parameters, one per bucket; "
            << t.layers.size() << " layers)\n";
  if (!a.measured_file.empty()) {
    std::cout << "measured:   " << a.measured_file << " (redsim-result, engine kineto-import: the measured Timeline)\n"
              << "predict it: redsim simulate --trace " << a.out_file << " --cluster CLUSTER.json --config "
              << a.measured_file << "\n";
  } else {
    char cap[64];
    std::snprintf(cap, sizeof cap, "%.17g", static_cast<double>(knobs.bucket_cap_bytes) / static_cast<double>(kMiB));
    std::cout << "predict it: redsim simulate --trace " << a.out_file << " --cluster CLUSTER.json --strategy bucketed"
              << " --bucket-order execution --bucket-mb " << cap << " --first-bucket-mb " << cap
              << "  (caps at the smallest bucket: one bucket per synthetic parameter)\n";
  }
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
  a->seq_opt = cmd->add_option("--seq-len", a->seq_len,
                               "tokens per sequence, transformers only (" + default_text([](const SynthOptions& o) {
                                 return o.seq_len > 0 ? std::to_string(o.seq_len) : std::string("none");
                               }) + ")");
  a->dtype_opt = cmd->add_option(
      "--param-dtype", a->param_dtype,
      "dtype of parameters and gradients: fp32, bf16 or fp16 (" +
          default_text([](const SynthOptions& o) { return std::string(dtype_name(o.param_dtype)); }) + ")");
  cmd->callback([a] { run_synth(*a); });
}

void add_show(CLI::App& trace) {
  auto a = std::make_shared<ShowArgs>();
  auto* cmd = trace.add_subcommand(
      "show", "summarise a model trace: parameters by dtype, compute split, DDP buckets, gradient-ready histogram");
  cmd->add_option("file", a->file, "model trace JSON (traces/README.md)")->required();
  cmd->add_option("--bucket-mb", a->bucket_mb, "bucket cap of the DDP bucket preview, MiB (as bucket_cap_mb)")
      ->capture_default_str();
  cmd->add_option("--first-bucket-mb", a->first_bucket_mb, "cap of DDP's first bucket, MiB")->capture_default_str();
  cmd->add_option("--bucket-order", a->bucket_order,
                  "execution (gradient-ready order, DDP after its first iteration) or definition (reverse "
                  "registration order, DDP's first iteration)")
      ->capture_default_str();
  cmd->add_option("--top", a->top, "layers listed by forward + backward time")->capture_default_str();
  cmd->add_option("--bins", a->bins, "rows of the gradient-ready histogram (1 to 200)")->capture_default_str();
  cmd->add_option("--json", a->json_file,
                  "also write the summary as JSON here (every bucket's parameters, histogram counts)");
  cmd->callback([a] { run_show(*a); });
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
  cmd->add_option("--batch-size", a->batch_size,
                  "samples per rank per step the profiled job ran (not in a profiler trace)")
      ->capture_default_str();
  cmd->callback([a] { run_import(*a); });
}

}  // namespace

void add_trace_commands(CLI::App& app) {
  auto* trace = app.add_subcommand("trace", "synthesise, import and inspect model traces (traces/README.md)");
  trace->require_subcommand(1);
  add_synth(*trace);
  add_import(*trace);
  add_show(*trace);
}

}  // namespace redsim::cli
