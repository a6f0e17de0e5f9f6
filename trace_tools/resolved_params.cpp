#include "trace_tools/resolved_params.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>

#include "core/error.h"
#include "core/trace_batch.h"
#include "core/trace_json.h"
#include "core/units.h"
#include "strategies/ddp_bucketing.h"
#include "trace_tools/grad_ready.h"

namespace redsim {

namespace {

// At most the first 12 (a message stays one readable line for any model).
std::string bucket_list(const std::vector<std::int64_t>& numels) {
  constexpr std::size_t kShown = 12;
  std::string s;
  for (std::size_t i = 0; i < numels.size() && i < kShown; ++i) s += (i ? ", " : "") + std::to_string(numels[i]);
  if (numels.size() > kShown) s += ", ... (" + std::to_string(numels.size() - kShown) + " more)";
  return "[" + s + "]";
}

std::string mib(std::int64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g MiB", static_cast<double>(bytes) / static_cast<double>(kMiB));
  return buf;
}

// DDP's buckets of the model at the job's caps, checked against the profile's (launch order).
std::vector<GradBucket> matching_buckets(const KinetoImport& imp, const ResolveOptions& o) {
  const std::string& file = o.model_file;
  if (!imp.sizes_known)
    throw InputError(file, "",
                     "--params-from needs the profile's bucket sizes, and its allreduces carry none (record the "
                     "profile with record_shapes=True, or with PyTorch 2.1 or later)");
  Knobs k;
  k.strategy = "bucketed";
  k.bucket_order = BucketOrder::execution;
  k.bucket_cap_bytes = o.bucket_cap_bytes;
  k.first_bucket_cap_bytes = o.first_bucket_cap_bytes;
  auto buckets = ddp_buckets(*o.model, k);
  std::vector<std::int64_t> want, got;
  bool same = buckets.size() == imp.buckets.size();
  for (std::size_t b = 0; b < imp.buckets.size(); ++b) {
    want.push_back(imp.buckets[b].numel);
    same = same && buckets[b].numel == imp.buckets[b].numel &&
           (!imp.buckets[b].dtype_known || buckets[b].dtype == imp.buckets[b].dtype);
  }
  for (const auto& b : buckets) got.push_back(b.numel);
  if (!same)
    throw InputError(file, "$.params",
                     "expected parameters that DDP, with buckets of " + mib(o.bucket_cap_bytes) + " (the first " +
                         mib(o.first_bucket_cap_bytes) + ") in gradient-ready order, puts into the profile's " +
                         std::to_string(want.size()) + " buckets of " + bucket_list(want) + " elements; they make " +
                         std::to_string(got.size()) + " of " + bucket_list(got) +
                         " (give the trace of the model that was profiled, and --bucket-mb / --first-bucket-mb as "
                         "its job set them; DDP's first step buckets in definition order: import a later --step)");
  return buckets;
}

// One resolved backward layer: the model layer's parameters in one bucket, ready together.
struct Group {
  std::string name;
  std::size_t bucket = 0;
  std::vector<std::size_t> params;
  double end_s = 0;  // measured: when its gradients were ready, from the step's origin
};

// The model's gradient-ready times, mapped linearly onto each bucket's measured interval.
std::vector<Group> groups_in_time(const KinetoImport& imp, const ModelTrace& model,
                                  const std::vector<GradBucket>& buckets) {
  std::vector<double> model_ready(model.params.size(), 0.0);
  for (const auto& g : grad_ready_times(model)) model_ready[g.param] = g.ready_s;
  std::vector<Group> groups;
  std::set<std::string> names;
  double model_prev = 0, measured_prev = imp.backward_start_s;
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    double model_end = model_prev;
    for (auto p : buckets[b].params) model_end = std::max(model_end, model_ready[p]);
    const double measured_end = imp.buckets[b].ready_s;
    for (auto p : buckets[b].params) {
      const double r = std::clamp(model_ready[p], model_prev, model_end);
      const double f = model_end > model_prev ? (r - model_prev) / (model_end - model_prev) : 1.0;
      const double w = measured_prev + f * (measured_end - measured_prev);
      const std::size_t layer = model.params[p].layer;
      if (groups.empty() || groups.back().bucket != b || model.params[groups.back().params.front()].layer != layer) {
        const std::string base = "b" + std::to_string(b) + "/" + model.layers[layer].name;
        std::string name = base;
        for (int n = 2; names.count(name) > 0; ++n) name = base + "#" + std::to_string(n);
        names.insert(name);
        groups.push_back({name, b, {}, groups.empty() ? measured_prev : groups.back().end_s});
      }
      groups.back().params.push_back(p);
      groups.back().end_s = std::max(groups.back().end_s, w);
    }
    groups.back().end_s = measured_end;  // the bucket is ready when it was measured
    model_prev = model_end;
    measured_prev = measured_end;
  }
  return groups;
}

// The model's shape at one batch size, over the resolved grouping: its forward, its backward after
// the last bucket, each bucket's span of backward and each group's (the same clamping as the
// grouping itself, so the spans add up to the bucket's).
struct Shape {
  double forward_s = 0, tail_s = 0;
  std::vector<double> bucket_span_s, group_span_s;
};

Shape model_shape(const ModelTrace& model, std::int64_t batch, const std::vector<GradBucket>& buckets,
                  const std::vector<Group>& groups, const std::string& file) {
  const ModelTrace m = trace_at_batch(model, batch, file);
  std::vector<double> ready(m.params.size(), 0.0);
  for (const auto& g : grad_ready_times(m)) ready[g.param] = g.ready_s;
  Shape s;
  double backward = 0;
  for (const auto& l : m.layers) s.forward_s += l.forward_s, backward += l.backward_s;
  std::vector<double> bucket_end;
  double prev = 0;
  for (const auto& b : buckets) {
    double end = prev;
    for (auto p : b.params) end = std::max(end, ready[p]);
    s.bucket_span_s.push_back(end - prev);
    bucket_end.push_back(end);
    prev = end;
  }
  s.tail_s = std::max(0.0, backward - prev);
  double group_prev = 0;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const std::size_t b = groups[g].bucket;
    double end = group_prev;
    for (auto p : groups[g].params) end = std::max(end, std::min(ready[p], bucket_end[b]));
    if (g + 1 == groups.size() || groups[g + 1].bucket != b) end = bucket_end[b];
    s.group_span_s.push_back(end - group_prev);
    group_prev = end;
  }
  return s;
}

double ratio(double a, double b) { return b > 0 ? a / b : 1.0; }

// The model's batch curve carried onto the resolved trace (resolved_params.h); t's layers are
// forward_pass, backward_tail, then the groups in reverse.
void attach_resolved_curve(ModelTrace& t, KinetoImport& imp, const ResolveOptions& o,
                           const std::vector<GradBucket>& buckets, const std::vector<Group>& groups) {
  const std::int64_t b0 = t.batch_size_per_rank;
  std::vector<std::int64_t> sizes = o.model->curve_batch_sizes;
  sizes.push_back(b0);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  if (sizes.size() > kMaxCurveBatchSizes) {
    imp.warnings.push_back("no batch curve: the model trace's batch sizes and the profiled batch make " +
                           std::to_string(sizes.size()) + ", more than a trace holds (" +
                           std::to_string(kMaxCurveBatchSizes) + ")");
    return;
  }
  if (const std::string note = extrapolation_note(*o.model, b0); !note.empty())
    imp.warnings.push_back("the profiled batch and the model trace's curve: " + note);
  const Shape at0 = model_shape(*o.model, b0, buckets, groups, o.model_file);
  const std::size_t G = groups.size();
  for (auto B : sizes) {
    const Shape at = model_shape(*o.model, B, buckets, groups, o.model_file);
    for (std::size_t l = 0; l < t.layers.size(); ++l) {
      TraceLayer& layer = t.layers[l];
      double fwd = layer.forward_s, bwd = layer.backward_s;
      if (B != b0 && l == 0) fwd *= ratio(at.forward_s, at0.forward_s);
      if (B != b0 && l == 1) bwd *= ratio(at.tail_s, at0.tail_s);
      if (B != b0 && l >= 2) {
        const std::size_t g = G - 1 - (l - 2), b = groups[g].bucket;
        const double interval = imp.buckets[b].ready_s - (b == 0 ? imp.backward_start_s : imp.buckets[b - 1].ready_s);
        if (at0.bucket_span_s[b] > 0)
          bwd = std::max(0.0, interval - imp.taken_out.interval_s[b]) * at.group_span_s[g] / at0.bucket_span_s[b];
      }
      layer.forward_s_by_batch.push_back(fwd);
      layer.backward_s_by_batch.push_back(bwd);
    }
  }
  t.curve_batch_sizes = sizes;
}

std::string resolved_source(const KinetoImport& imp, const ResolveOptions& o, std::size_t groups) {
  return imp.trace.source + " Parameters resolved (--params-from " +
         std::filesystem::path(o.model_file).filename().string() + ", model " + o.model->model + "): its " +
         std::to_string(o.model->params.size()) + " parameters, which DDP with buckets of " + mib(o.bucket_cap_bytes) +
         " (first " + mib(o.first_bucket_cap_bytes) +
         ") in gradient-ready order puts into exactly the profile's buckets, replace the synthetic ones; each bucket's "
         "measured backward interval is spread over the " + std::to_string(groups) +
         " layers b<bucket>/<model layer> by the model trace's own gradient-ready times, mapped linearly onto "
         "the interval, so every bucket is ready when it was measured.";
}

}  // namespace

void resolve_params(KinetoImport& imp, const ResolveOptions& o) {
  // With a curve and a known batch, the model's shape inside each bucket is read at the profiled batch.
  const bool has_curve = !o.model->curve_batch_sizes.empty();
  const bool curve = has_curve && o.batch_known;
  const ModelTrace model = curve ? trace_at_batch(*o.model, imp.trace.batch_size_per_rank, o.model_file) : *o.model;
  const auto buckets = matching_buckets(imp, o);
  const auto groups = groups_in_time(imp, model, buckets);
  // The synthetic trace's forward_pass, backward_tail, optimizer, buffers and device stay.
  ModelTrace t = imp.trace;
  t.layers.resize(2);
  t.params.clear();
  const auto none = t.layers[1].activation_bytes;
  // Forward order: the groups in reverse (backward runs them first to last). The interference
  // taken out of bucket k's interval is shared by its layers in proportion to their time.
  imp.resolved_spans.clear();
  std::vector<std::size_t> layer_of(model.params.size(), 0);
  for (std::size_t g = groups.size(); g-- > 0;) {
    const double start = g == 0 ? imp.backward_start_s : groups[g - 1].end_s;
    const std::size_t b = groups[g].bucket;
    const double interval = imp.buckets[b].ready_s - (b == 0 ? imp.backward_start_s : imp.buckets[b - 1].ready_s);
    const double share = interval > 0 ? (groups[g].end_s - start) / interval : 0;
    const double alone = std::max(0.0, groups[g].end_s - start - share * imp.taken_out.interval_s[b]);
    t.layers.push_back({groups[g].name, 0.0, alone, none, std::nullopt, {}, {}});
    for (auto p : groups[g].params) layer_of[p] = t.layers.size() - 1;
    imp.resolved_spans.push_back({groups[g].name, start, groups[g].end_s});
  }
  std::reverse(imp.resolved_spans.begin(), imp.resolved_spans.end());  // backward order
  for (std::size_t i = 0; i < model.params.size(); ++i) {
    TraceParam p = model.params[i];
    p.layer = layer_of[i];  // parameters DDP does not reduce stay with forward_pass
    t.params.push_back(std::move(p));
  }
  t.grad_ready_order = model.grad_ready_order;
  t.curve_batch_sizes.clear();
  if (curve)
    attach_resolved_curve(t, imp, o, buckets, groups);
  else if (has_curve)
    imp.warnings.push_back("no batch curve: the model trace has one, but the profiled batch per rank is not known "
                           "(give --batch-size)");
  t.source = resolved_source(imp, o, groups.size());
  imp.params_from = o.model_file;
  imp.bucket_cap_bytes = o.bucket_cap_bytes;
  imp.first_bucket_cap_bytes = o.first_bucket_cap_bytes;
  // What we write must read back (the same checks as any trace file).
  imp.trace = trace_from_json(trace_to_json(t), o.model_file);
}

}  // namespace redsim
