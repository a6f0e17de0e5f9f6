// redsim trace show: a model trace summarised (trace_tools/trace_summary.h): parameters by dtype,
// the compute split, DDP's buckets at a cap, the gradient-ready histogram. This file parses the
// options and prints.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/text_format.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/trace_json.h"
#include "core/units.h"
#include "trace_tools/trace_summary.h"

namespace redsim::cli {
namespace {

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
    throw InputError("", "", std::string(flag) + ": expected a positive size in MiB (at most 1 TiB), got " +
                                 fmt("%g", mib));
  return std::max<std::int64_t>(1, std::llround(mib * static_cast<double>(kMiB)));
}

TraceShowOptions show_options(const ShowArgs& a) {
  TraceShowOptions o;
  o.knobs.bucket_cap_bytes = mib_option_to_bytes(a.bucket_mb, "--bucket-mb");
  o.knobs.first_bucket_cap_bytes = mib_option_to_bytes(a.first_bucket_mb, "--first-bucket-mb");
  if (a.bucket_order == "execution")
    o.knobs.bucket_order = BucketOrder::execution;
  else if (a.bucket_order == "definition")
    o.knobs.bucket_order = BucketOrder::definition;
  else
    throw InputError("", "", "--bucket-order: expected execution|definition, got \"" + a.bucket_order + "\"");
  if (a.bins < 1 || a.bins > 200) throw InputError("", "", "--bins: expected 1 to 200, got " + std::to_string(a.bins));
  o.top = a.top;
  o.bins = a.bins;
  return o;
}

void print_tally(const std::string& label, const Tally& n) {
  std::cout << "  " << pad(label, 10) << n.tensors << " tensors, " << with_commas(n.numel) << " elements, "
            << with_commas(n.bytes) << " bytes (" << mib(n.bytes) << ")\n";
}

// The batch curve (curve_batch_sizes), as --batch-size reads it: forward + backward at each point.
void print_batch_curve(const ModelTrace& t) {
  if (t.curve_batch_sizes.empty()) return;
  std::cout << "batch curve: forward + backward at";
  for (std::size_t k = 0; k < t.curve_batch_sizes.size(); ++k) {
    double s = 0;
    for (const auto& l : t.layers) s += l.forward_s_by_batch[k] + l.backward_s_by_batch[k];
    std::cout << (k ? "," : "") << " batch " << t.curve_batch_sizes[k] << " " << ms(s);
  }
  std::cout << " (--batch-size evaluates the layers between and beyond these)\n";
}

void print_tensors(const std::string& file, const ModelTrace& t, const TraceSummary& s) {
  std::cout << "trace:      " << file << "\n"
            << "model:      " << t.model << "\n"
            << "reference:  " << t.reference_device << ", batch " << t.batch_size_per_rank << " per rank\n"
            << "source:     " << (t.source.empty() ? "(not stated)" : t.source) << "\n";
  print_batch_curve(t);
  std::cout << "params:\n";
  print_tally("all", s.params);
  for (const auto& [name, n] : s.by_dtype) print_tally(name, n);
  print_tally("reduced", s.reduced);
  if (s.frozen.tensors > 0) print_tally("frozen", s.frozen);
  if (s.excluded.tensors > 0) print_tally("excluded", s.excluded);
  std::cout << "buffers:\n";
  print_tally("all", s.buffers);
  print_tally("broadcast", s.broadcast);
  const auto a = t.activation_bytes();
  std::cout << "activations saved in forward: "
            << (a ? with_commas(*a) + " bytes (" + mib(*a) + ") for the batch" : std::string("not in the trace")) << "\n";
  if (const auto& c = s.checkpointing; c.on())
    std::cout << "with --activation-checkpointing blocks: " << c.blocks.size() << " repeated blocks ("
              << c.blocks.front().name << " to " << c.blocks.back().name << "), " << with_commas(s.checkpointed_peak_bytes)
              << " bytes (" << mib(s.checkpointed_peak_bytes) << ") held at most\n";
}

void print_compute(const ModelTrace& t, const TraceSummary& s) {
  const double step_s = s.step_s(t);
  std::cout << "compute per step (no communication): " << ms(step_s) << "\n"
            << "  forward    " << pad(ms(s.forward_s), 12, true) << "  " << pct(s.forward_s, step_s) << "\n"
            << "  backward   " << pad(ms(s.backward_s), 12, true) << "  " << pct(s.backward_s, step_s) << "\n"
            << "  optimizer  " << pad(ms(t.optimizer_s), 12, true) << "  " << pct(t.optimizer_s, step_s) << "\n"
            << "  layers     " << t.layers.size() << " (" << s.bare_layers << " without parameters)\n";
  if (s.top_layers.empty()) return;
  std::size_t width = 5;
  for (auto i : s.top_layers) width = std::max(width, t.layers[i].name.size());
  std::cout << "  top " << s.top_layers.size() << " layers by forward + backward:\n"
            << "    " << pad("layer", width) << "  " << pad("forward", 12, true) << "  " << pad("backward", 12, true)
            << "  of fwd+bwd\n";
  for (auto i : s.top_layers) {
    const auto& l = t.layers[i];
    std::cout << "    " << pad(l.name, width) << "  " << pad(ms(l.forward_s), 12, true) << "  "
              << pad(ms(l.backward_s), 12, true) << "  "
              << pad(pct(l.forward_s + l.backward_s, s.forward_s + s.backward_s), 9, true) << "\n";
  }
}

void print_bucket(const ModelTrace& t, std::size_t b, const GradBucket& bk) {
  std::cout << "  " << pad(std::to_string(b), 5, true) << "  " << pad(std::string(dtype_name(bk.dtype)), 5) << "  "
            << pad(std::to_string(bk.params.size()), 7, true) << "  " << pad(with_commas(bk.bytes), 15, true) << "  "
            << pad(fmt("%.2f", static_cast<double>(bk.bytes) / static_cast<double>(kMiB)), 9, true) << "  "
            << t.params[bk.params.front()].name;
  if (bk.params.size() > 1) std::cout << " -> " << t.params[bk.params.back()].name;
  std::cout << "\n";
}

void print_buckets(const ShowArgs& a, const TraceShowOptions& o, const ModelTrace& t, const TraceSummary& s) {
  const auto& buckets = s.buckets;
  std::cout << "DDP buckets (bucket_cap_mb " << fmt("%g", a.bucket_mb) << ", first bucket "
            << fmt("%g", a.first_bucket_mb) << " MiB, " << bucket_order_name(o.knobs.bucket_order)
            << " order, in launch order): " << buckets.size() << " buckets, " << with_commas(s.bucket_bytes)
            << " bytes (" << mib(s.bucket_bytes) << ")\n";
  if (buckets.empty()) return;
  std::cout << "  " << pad("#", 5, true) << "  " << pad("dtype", 5) << "  " << pad("tensors", 7, true) << "  "
            << pad("bytes", 15, true) << "  " << pad("MiB", 9, true) << "  first param -> last param\n";
  constexpr std::size_t kHead = 10, kTail = 5;
  const bool abbreviate = buckets.size() > kHead + kTail + 1;
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    if (abbreviate && b == kHead)
      std::cout << "  " << pad("...", 5, true) << "  (" << buckets.size() - kHead - kTail << " more buckets)\n";
    if (abbreviate && b >= kHead && b < buckets.size() - kTail) continue;
    print_bucket(t, b, buckets[b]);
  }
}

void print_histogram(const ModelTrace& t, const TraceSummary& s) {
  std::size_t most = 0;
  for (const auto& h : s.histogram) most = std::max(most, h.tensors);
  std::cout << "gradient-ready times (the end of the owning layer's backward, from the start of backward; "
            << t.grad_ready_order.size() << " trainable tensors over " << ms(s.backward_total_s) << "):\n";
  constexpr std::size_t kBar = 40;
  const double grad_bytes = static_cast<double>(std::max<std::int64_t>(1, s.params.bytes - s.frozen.bytes));
  std::int64_t cumulative = 0;
  char header[128];
  std::snprintf(header, sizeof header, "  %9s - %9s  %7s  %9s  %7s  %s\n", "from ms", "to ms", "tensors", "MiB",
                "by then", "(bar: tensors)");
  std::cout << header;
  for (const auto& h : s.histogram) {
    cumulative += h.bytes;
    char row[128];
    std::snprintf(row, sizeof row, "  %9.3f - %9.3f  %7zu  %9.1f  %6.1f%%", h.start_s * 1e3, h.end_s * 1e3, h.tensors,
                  static_cast<double>(h.bytes) / static_cast<double>(kMiB),
                  100.0 * static_cast<double>(cumulative) / grad_bytes);
    const std::size_t bar = most > 0 ? (h.tensors * kBar + most - 1) / most : 0;
    std::cout << row << (bar > 0 ? "  " + std::string(bar, '#') : std::string()) << "\n";
  }
}

void run_show(const ShowArgs& a) {
  const std::vector<NamedPath> outputs{{"--json", a.json_file}};
  check_outputs_distinct({{"file", a.file}}, outputs);
  check_output_targets(outputs);  // before the summary is printed, not after
  const ModelTrace t = load_trace(a.file);
  const TraceShowOptions o = show_options(a);
  const TraceSummary s = summarize_trace(t, o);
  print_tensors(a.file, t, s);
  print_compute(t, s);
  print_buckets(a, o, t, s);
  print_histogram(t, s);
  if (!a.json_file.empty()) {
    write_file_atomically(a.json_file, trace_summary_to_json(a.file, t, o, s).dump(1) + "\n");
    std::cout << "summary JSON: " << a.json_file << "\n";
  }
}

}  // namespace

void add_trace_show_command(CLI::App& trace) {
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

}  // namespace redsim::cli
