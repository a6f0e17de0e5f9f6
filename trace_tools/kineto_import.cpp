#include "trace_tools/kineto_import.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>

#include "core/error.h"
#include "core/json_in.h"
#include "core/trace_json.h"
#include "trace_tools/kernel_overlap.h"
#include "trace_tools/kineto_events.h"
#include "trace_tools/kineto_memory.h"
#include "trace_tools/kineto_steps.h"

namespace redsim {

using nlohmann::json;
using namespace kineto;

double InterferenceTakenOut::total_s() const {
  double s = forward_s + backward_tail_s + optimizer_s;
  for (double x : interval_s) s += x;
  return s;
}

std::string read_text_file_maybe_gzip(const std::string& file, std::size_t max_bytes) {
  // gzread passes a file that is not gzip-compressed through unchanged.
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec)) throw InputError(file, "", "expected a trace file, got a directory");
  gzFile f = gzopen(file.c_str(), "rb");
  if (f == nullptr) throw InputError(file, "", "cannot open file for reading");
  std::string text;
  std::vector<char> buf(1 << 20);
  for (;;) {
    // A 600 KB gzip bomb inflates to gigabytes: stop at the cap, before allocating more.
    if (text.size() > max_bytes) {
      gzclose(f);
      throw InputError(file, "", "expected a trace of at most " + std::to_string(max_bytes >> 20) +
                                     " MiB (decompressed), got more: profile fewer steps (README: Limits)");
    }
    int n = gzread(f, buf.data(), static_cast<unsigned>(buf.size()));
    if (n < 0) {
      int err = 0;
      std::string msg = gzerror(f, &err);
      gzclose(f);
      throw InputError(file, "", "cannot read: " + msg + " (corrupt gzip data?)");
    }
    if (n == 0) break;
    text.append(buf.data(), static_cast<std::size_t>(n));
  }
  int err = 0;
  const char* msg = gzerror(f, &err);
  std::string what = msg != nullptr ? msg : "";
  gzclose(f);
  if (err != Z_OK && err != Z_STREAM_END)
    throw InputError(file, "", "cannot read: " + what + " (truncated or corrupt gzip data)");
  return text;
}

KinetoImport import_kineto_file(const std::string& file, const KinetoImportOptions& options) {
  return import_kineto(JsonIn::parse_text(read_text_file_maybe_gzip(file), file), file, options);
}

namespace {

// 7. Means over the steps, relative to each step's origin, in seconds.
template <typename Field>
double mean_s(const std::vector<StepResult>& steps, Field field) {
  double s = 0;
  for (const auto& r : steps) s += field(r) - r.origin;
  return s / static_cast<double>(steps.size()) * kSPerUs;
}

void average_phases(const std::vector<StepResult>& steps, KinetoImport& imp) {
  imp.forward_start_s = mean_s(steps, [](const StepResult& r) { return r.fwd_start; });
  imp.forward_end_s = mean_s(steps, [](const StepResult& r) { return r.fwd_end; });
  imp.backward_start_s = mean_s(steps, [](const StepResult& r) { return r.bwd_start; });
  imp.backward_end_s = mean_s(steps, [](const StepResult& r) { return r.bwd_end; });
  imp.optimizer_start_s = mean_s(steps, [](const StepResult& r) { return r.opt_start; });
  imp.optimizer_end_s = mean_s(steps, [](const StepResult& r) { return r.opt_end; });
  double busy = 0;
  for (const auto& r : steps) busy += r.bwd_busy;
  imp.backward_busy_s = busy / static_cast<double>(steps.size()) * kSPerUs;
  imp.grad_tensors = steps.front().grad_tensors;
}

// 10b. `tensors` gradient tensors over parameters of these bytes: one each, the rest in proportion
// to the bytes by largest remainder (ties to the earlier), so that they add up exactly.
std::vector<std::int64_t> spread_tensors(std::int64_t tensors, const std::vector<std::int64_t>& bytes) {
  std::vector<std::int64_t> out(bytes.size(), 1);
  const auto n = static_cast<std::int64_t>(bytes.size());
  double total = 0;
  for (auto b : bytes) total += static_cast<double>(b);
  if (tensors <= n || !(total > 0)) return out;
  const auto rest = static_cast<double>(tensors - n);
  std::vector<std::pair<double, std::size_t>> remainder;
  std::int64_t given = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const double share = rest * static_cast<double>(bytes[i]) / total;
    const auto whole = static_cast<std::int64_t>(std::floor(share));
    out[i] += whole, given += whole;
    remainder.push_back({-(share - static_cast<double>(whole)), i});
  }
  std::sort(remainder.begin(), remainder.end());
  for (std::int64_t k = 0; k < tensors - n - given; ++k) out[remainder[static_cast<std::size_t>(k)].second] += 1;
  return out;
}

// The SMs the SM-share rule divides among NCCL's blocks: given, or the profile's; every NCCL kernel
// that ran beside compute must say its grid.
int interference_sm_count(const json& root, const KinetoEvents& ev, const KinetoImportOptions& o) {
  if (!o.compute_slowdown_sm_share) return 0;
  const int sms = o.sm_count > 0 ? o.sm_count : profile_sm_count(root);
  if (sms <= 0)
    throw InputError(ev.file, "$.deviceProperties",
                     "each device's numSms, alike on every device, for the SM-share rule (or give --sm-count)");
  const auto compute = busy_by_device(ev, false);
  for (const auto& k : ev.kernels)
    if (k.nccl && grid_blocks(k) == 0 && overlap_fraction(k, compute) > 0)
      throw InputError(ev.file, ev.events_path + "[" + std::to_string(k.span->event) + "].args.grid",
                       "the NCCL kernel's grid (one block per channel) for the SM-share rule; without grids give "
                       "--compute-slowdown as a number");
  return sms;
}

// 7b. The compute slowdown taken out of each layer (KinetoImportOptions::compute_slowdown, or
// the SM-share rule with the profile's own NCCL grids).
void take_out_interference(const KinetoEvents& ev, const std::vector<StepResult>& steps,
                           const KinetoImportOptions& o, int sm_count, KinetoImport& imp) {
  InterferenceTakenOut& out = imp.taken_out;
  out.interval_s.assign(steps.front().buckets.size(), 0.0);
  out.slowdown = o.compute_slowdown_sm_share ? 1.0 : o.compute_slowdown;
  out.sm_share = o.compute_slowdown_sm_share;
  out.sm_count = o.compute_slowdown_sm_share ? sm_count : 0;
  if (!out.any()) return;
  // The rule needs each NCCL kernel's blocks; a fixed slowdown only when NCCL ran.
  const auto nccl = out.sm_share ? std::map<std::string, Busy>{} : busy_by_device(ev, true);
  const auto held = out.sm_share ? nccl_blocks_by_device(ev) : HeldByDevice{};
  const double slowdown = out.slowdown;
  const double per_step_s = kSPerUs / static_cast<double>(steps.size());
  for (const auto& r : steps) {
    std::vector<std::pair<double, double>> lost;  // (end, us given up) of each compute kernel beside NCCL
    for (const auto& k : ev.kernels) {
      if (k.nccl || k.end() <= r.origin || k.end() > r.last_end) continue;
      const double l = out.sm_share ? sm_share_lost_us(k, held, sm_count)
                                    : k.span->dur * overlap_fraction(k, nccl) * (1 - 1 / slowdown);
      if (l > 0) lost.push_back({k.end(), l});
    }
    // A kernel's loss is taken from the layer it ended in: (a, b].
    const auto within = [&](double a, double b) {
      double us = 0;
      for (const auto& [end, l] : lost) us += end > a && end <= b ? l : 0;
      return us * per_step_s;
    };
    out.forward_s += within(r.fwd_start, r.fwd_end);
    double prev = r.bwd_start;
    for (std::size_t b = 0; b < r.buckets.size(); ++b) {
      out.interval_s[b] += within(prev, r.buckets[b].ready);
      prev = r.buckets[b].ready;
    }
    out.backward_tail_s += within(prev, r.bwd_end);
    out.optimizer_s += within(r.opt_start, r.opt_end);
  }
}

// Whether any compute kernel of the imported steps overlapped an NCCL kernel on its device: the
// trace's compute then holds that slowdown unless take_out_interference took it out.
bool compute_overlapped_nccl(const KinetoEvents& ev, const std::vector<StepResult>& steps) {
  const auto nccl = busy_by_device(ev, true);
  for (const auto& r : steps)
    for (const auto& k : ev.kernels)
      if (!k.nccl && k.end() > r.origin && k.end() <= r.last_end && overlap_fraction(k, nccl) > 0) return true;
  return false;
}

// The buckets, as the first step names them and every step times them; returns how many show no dtype.
std::size_t average_buckets(const std::vector<StepResult>& steps, KinetoImport& imp) {
  imp.sizes_known = true;
  std::size_t unknown_dtype = 0;
  for (std::size_t b = 0; b < steps.front().buckets.size(); ++b) {
    const Kernel* k = steps.front().buckets[b].kernel;
    ImportedBucket ib;
    ib.kernel = k->span->name;
    ib.dtype_known = k->dtype.dtype.has_value();
    ib.dtype = k->dtype.dtype.value_or(DType::fp32);
    if (!ib.dtype_known) ++unknown_dtype;
    ib.numel = k->numel.value_or(0);
    ib.size_from = k->numel ? k->size_from : "";
    if (!k->numel) imp.sizes_known = false;
    ib.launch_s = mean_s(steps, [&](const StepResult& r) { return r.buckets[b].launch; });
    ib.ready_s = mean_s(steps, [&](const StepResult& r) { return r.buckets[b].ready; });
    ib.start_s = mean_s(steps, [&](const StepResult& r) { return r.buckets[b].kernel->ts(); });
    ib.end_s = mean_s(steps, [&](const StepResult& r) { return r.buckets[b].kernel->end(); });
    ib.channels = grid_blocks(*k);
    imp.buckets.push_back(std::move(ib));
  }
  return unknown_dtype;
}

// Other collectives: averaged when every step has the same ones, else from the first step.
void average_other_collectives(const std::vector<StepResult>& steps, KinetoImport& imp) {
  const auto& first = steps.front();
  bool agree = true;
  for (const auto& r : steps) {
    agree = agree && r.others.size() == first.others.size();
    for (std::size_t i = 0; agree && i < r.others.size(); ++i)
      agree = r.others[i]->span->name == first.others[i]->span->name && r.others[i]->numel == first.others[i]->numel;
  }
  if (!agree)
    imp.warnings.push_back("the steps differ in their other collectives: those of the first imported step are kept");
  for (std::size_t i = 0; i < first.others.size(); ++i) {
    const Kernel* k = first.others[i];
    ImportedCollective c{k->span->name, k->collective, phase_name(first.other_phases[i]), k->numel.value_or(0),
                         k->dtype.dtype.value_or(DType::fp32), k->dtype.dtype.has_value(), 0, 0};
    if (agree) {
      c.start_s = mean_s(steps, [&](const StepResult& r) { return r.others[i]->ts(); });
      c.end_s = mean_s(steps, [&](const StepResult& r) { return r.others[i]->end(); });
    } else {
      c.start_s = (k->ts() - first.origin) * kSPerUs;
      c.end_s = (k->end() - first.origin) * kSPerUs;
    }
    imp.other_collectives.push_back(std::move(c));
  }
}

void step_numbers_and_times(const std::vector<StepResult>& steps, KinetoImport& imp) {
  for (const auto& r : steps) {
    if (r.window.number >= 0) imp.steps.push_back(r.window.number);
    imp.step_times_s.push_back((r.last_end - r.origin) * kSPerUs);
  }
  if (imp.steps.empty())
    imp.step_text = "the whole trace";
  else if (imp.steps.size() == 1)
    imp.step_text = "step " + std::to_string(imp.steps.front());
  else
    imp.step_text = "mean of steps " + join_numbers(imp.steps);
}

// The device of the first compute kernel (its args' device, else its pid).
std::string compute_device_id(const KinetoEvents& ev, const std::vector<StepResult>& steps) {
  std::string device_id = steps.front().buckets.front().kernel->span->pid;
  for (const auto& k : ev.kernels)
    if (!k.nccl) {
      device_id = k.span->pid;
      if (k.span->args != nullptr)
        if (auto d = ev.args_of(*k.span).find("device")) device_id = id_text(*d);
      break;
    }
  return device_id;
}

// 8. Where it ran: the device of the first compute kernel, the rank and the world size.
void where_it_ran(const json& root, const KinetoEvents& ev, const std::vector<StepResult>& steps,
                  const std::string& device_id, KinetoImport& imp) {
  imp.device = "GPU " + device_id + " (name not in the trace)";
  if (root.is_object()) {
    const JsonIn top(root, "$", ev.file);
    if (auto props = top.find("deviceProperties")) {
      for (const auto& p : props->items()) {
        p.expect_object();
        auto id = p.find("id");
        auto name = p.find("name");
        if (id && name && id_text(*id) == device_id) imp.device = name->nonempty_string();
      }
    }
    if (auto info = top.find("distributedInfo")) {
      info->expect_object();
      if (auto rk = info->find("rank")) imp.rank = static_cast<int>(rk->nonnegative_integer());
      if (auto ws = info->find("world_size")) imp.world_size = static_cast<int>(ws->positive_integer());
    }
  }
  for (const auto& r : steps)
    for (const auto& b : r.buckets)
      if (b.kernel->group_size > 0) imp.world_size = b.kernel->group_size;
  if (imp.world_size == 0)
    imp.warnings.push_back(
        "the world size is not in the trace (no \"Group size\" args, no distributedInfo): "
        "taken as 1, so bus bandwidths are not computed");
}

bool is_buffer_broadcast(const ImportedCollective& c) {
  return c.phase == "forward" && c.collective == "broadcast" && c.numel > 0;
}

// 9. What could not be recovered.
void warn_unrecovered(std::size_t unknown_dtype, KinetoImport& imp) {
  if (!imp.sizes_known) {
    std::size_t unknown = 0;
    for (const auto& b : imp.buckets) unknown += b.numel == 0 ? 1 : 0;
    imp.warnings.push_back(
        std::to_string(unknown) + " of " + std::to_string(imp.buckets.size()) +
        " gradient allreduces carry no message size (no \"In msg nelems\" on the kernel or its record_param_comms "
        "op, no Input Dims from record_shapes): their bucket sizes cannot be recovered and their synthetic "
        "parameters have the placeholder numel 1; timing (gradient-ready times, allreduce durations) is exact");
  }
  if (unknown_dtype > 0)
    imp.warnings.push_back(
        std::to_string(unknown_dtype) +
        " gradient allreduces show no dtype (neither in args nor in the kernel name): taken as fp32");
  const auto buffer_broadcasts = static_cast<std::size_t>(
      std::count_if(imp.other_collectives.begin(), imp.other_collectives.end(), is_buffer_broadcast));
  if (imp.other_collectives.size() > buffer_broadcasts)
    imp.warnings.push_back(std::to_string(imp.other_collectives.size() - buffer_broadcasts) +
                           " NCCL collective(s) per step that are not gradient buckets (nor forward broadcasts "
                           "of known size, which become buffers) are left out of the trace");
}

std::string trace_source(const KinetoImport& imp, const std::string& file) {
  char head[512];
  std::snprintf(
      head, sizeof head,
      "imported by redsim trace import from the PyTorch profiler (Kineto) trace %s, %s, rank %d of %d, on %s: ",
      std::filesystem::path(file).filename().string().c_str(), imp.step_text.c_str(), imp.rank,
      std::max(1, imp.world_size), imp.device.c_str());
  std::string source =
      std::string(head) + std::to_string(imp.buckets.size()) +
      " NCCL allreduces launched in backward are DDP's gradient buckets. A profiler trace has no parameters, "
      "so each bucket is one synthetic parameter bucketK (numel: the allreduce's message elements; listed in "
      "reverse launch order, as DDP's buckets hold the last-registered parameters first), owned by a layer "
      "intervalK whose backward_s is the backward compute between the previous bucket's gradient-ready time "
      "and bucket K's (the compute stream finished every kernel launched before the allreduce), on the GPU "
      "clock; backward_tail is the backward after the last bucket; forward_pass is the whole forward; "
      "optimizer_s spans the optimizer step's kernels, from the host entering Optimizer.step where the GPU "
      "had nothing left to run then. Real parameter names, per-layer times and buffers "
      "other than broadcast ones are not in a profiler trace.";
  source += imp.activation_bytes
                ? " forward_pass's activation_bytes: what the GPU's allocator held more when backward began (the "
                  "host's first autograd op) than at its least since the step began, from the profiler's memory "
                  "events; the other layers' 0."
                : " Activations are not in the trace: the profile has no GPU memory events before backward "
                  "(record it with profile_memory=True).";
  if (imp.taken_out.sm_share) {
    char buf[320];
    std::snprintf(buf, sizeof buf,
                  " Compute as it would run alone: kernels that ran beside NCCL kernels were sped up by the SM-share "
                  "rule over their overlap, each NCCL kernel holding its grid's blocks of the device's %d SMs (%.3f ms "
                  "per step taken out).",
                  imp.taken_out.sm_count, imp.taken_out.total_s() * 1e3);
    source += buf;
  } else if (imp.taken_out.slowdown > 1) {
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  " Compute as it would run alone: kernels that ran beside NCCL kernels were sped up by the compute "
                  "slowdown %.4g over their overlap (%.3f ms per step taken out).",
                  imp.taken_out.slowdown, imp.taken_out.total_s() * 1e3);
    source += buf;
  }
  if (!imp.warnings.empty()) {
    source += " Not recovered: ";
    for (std::size_t i = 0; i < imp.warnings.size(); ++i) source += (i ? "; " : "") + imp.warnings[i];
    source += ".";
  }
  return source;
}

// 10. The trace: one synthetic parameter per bucket, one layer per bucket interval.
ModelTrace imported_trace(const KinetoImport& imp, const KinetoImportOptions& options, const std::string& file) {
  ModelTrace t;
  t.model = options.model.empty() ? model_from_file(file) : options.model;
  t.reference_device = imp.device;
  t.batch_size_per_rank = options.batch_size_per_rank;
  const InterferenceTakenOut& out = imp.taken_out;
  t.optimizer_s = std::max(0.0, imp.optimizer_end_s - imp.optimizer_start_s - out.optimizer_s);
  const std::size_t K = imp.buckets.size();
  // The forward holds every activation; the other layers none (given for every layer or none).
  const auto none = imp.activation_bytes ? std::optional<std::int64_t>(0) : std::nullopt;
  t.layers.push_back(
      {"forward_pass", std::max(0.0, imp.forward_end_s - imp.forward_start_s - out.forward_s), 0.0, imp.activation_bytes, std::nullopt, {}, {}});
  t.layers.push_back(
      {"backward_tail", 0.0, std::max(0.0, imp.backward_end_s - imp.buckets.back().ready_s - out.backward_tail_s), none, std::nullopt, {}, {}});
  for (std::size_t k = K; k-- > 0;) {
    const double prev = imp.interval_start_s(k);
    t.layers.push_back(
        {"interval" + std::to_string(k), 0.0, std::max(0.0, imp.buckets[k].ready_s - prev - out.interval_s[k]), none, std::nullopt, {}, {}});
  }
  for (std::size_t k = K; k-- > 0;) {
    TraceParam p;
    p.name = "bucket" + std::to_string(k);
    p.numel = imp.buckets[k].numel > 0 ? imp.buckets[k].numel : 1;
    p.dtype = imp.buckets[k].dtype;
    p.layer = 2 + (K - 1 - k);
    t.params.push_back(std::move(p));
  }
  std::vector<std::int64_t> bytes;
  for (const auto& p : t.params) bytes.push_back(p.bytes());
  const auto tensors = spread_tensors(imp.grad_tensors, bytes);
  for (std::size_t i = 0; i < t.params.size(); ++i) t.params[i].tensors = tensors[i];
  t.grad_ready_order = derive_grad_ready_order(t);
  std::size_t nbuf = 0;
  for (const auto& c : imp.other_collectives)
    if (is_buffer_broadcast(c)) t.buffers.push_back({"broadcast" + std::to_string(nbuf++), c.numel, c.dtype, true});
  t.source = trace_source(imp, file);
  // What we write must read back (the same checks as any trace file).
  return trace_from_json(trace_to_json(t), file);
}

}  // namespace

KinetoImport import_kineto(const json& root, const std::string& file, const KinetoImportOptions& options) {
  KinetoEvents ev;
  read_kineto_events(root, file, ev);  // 1-3
  KinetoImport imp;
  std::vector<StepResult> steps;
  for (const auto& w : choose_steps(ev, options.step, imp.warnings))  // 4
    steps.push_back(reconstruct_step(ev, w, imp.warnings));            // 5
  check_steps_agree(ev, steps);                                        // 6
  average_phases(steps, imp);                                          // 7
  const std::size_t unknown_dtype = average_buckets(steps, imp);
  average_other_collectives(steps, imp);
  take_out_interference(ev, steps, options, interference_sm_count(root, ev, options), imp);
  step_numbers_and_times(steps, imp);
  const std::string device_id = compute_device_id(ev, steps);
  where_it_ran(root, ev, steps, device_id, imp);  // 8
  imp.activation_bytes = forward_allocated_bytes(ev, steps, device_id);
  warn_unrecovered(unknown_dtype, imp);  // 9
  imp.trace = imported_trace(imp, options, file);  // 10
  imp.trace.compute_beside_collectives = !imp.taken_out.any() && compute_overlapped_nccl(ev, steps);
  return imp;
}

Knobs imported_bucket_knobs(const KinetoImport& imp) {
  Knobs k;
  k.strategy = "bucketed";
  k.bucket_order = BucketOrder::execution;
  k.reduce_op = ReduceOp::avg;
  if (!imp.params_from.empty()) {
    k.bucket_cap_bytes = imp.bucket_cap_bytes;
    k.first_bucket_cap_bytes = imp.first_bucket_cap_bytes;
    return k;
  }
  std::int64_t smallest = std::numeric_limits<std::int64_t>::max();
  for (const auto& p : imp.trace.params) smallest = std::min(smallest, p.bytes());
  k.bucket_cap_bytes = smallest;
  k.first_bucket_cap_bytes = smallest;
  return k;
}

}  // namespace redsim
