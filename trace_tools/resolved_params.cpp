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
};

// The groups, in gradient-ready order: each bucket's parameters, a group per run of one model
// layer's (a layer split between buckets, or interleaved in one, is named again with #2, #3, ...).
std::vector<Group> make_groups(const ModelTrace& model, const std::vector<GradBucket>& buckets) {
  std::vector<Group> groups;
  std::set<std::string> names;
  for (std::size_t b = 0; b < buckets.size(); ++b)
    for (auto p : buckets[b].params) {
      const std::size_t layer = model.params[p].layer;
      if (groups.empty() || groups.back().bucket != b || model.params[groups.back().params.front()].layer != layer) {
        const std::string base = "b" + std::to_string(b) + "/" + model.layers[layer].name;
        std::string name = base;
        for (int n = 2; names.count(name) > 0; ++n) name = base + "#" + std::to_string(n);
        names.insert(name);
        groups.push_back({name, b, {}});
      }
      groups.back().params.push_back(p);
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

// The length of bucket b's measured backward interval (KinetoImport::interval_start_s).
double interval_s(const KinetoImport& imp, std::size_t b) { return imp.buckets[b].ready_s - imp.interval_start_s(b); }

// Group g's share of its bucket's interval at the shape `at`, with `at0` the profiled batch's: its
// model span over the bucket's at the profiled batch (the model's ready times mapped linearly onto
// the interval), or, where the model gives the bucket no time, all of it to the bucket's first group.
double group_share(const Shape& at, const Shape& at0, const std::vector<Group>& groups, std::size_t g) {
  const std::size_t b = groups[g].bucket;
  if (at0.bucket_span_s[b] > 0) return at.group_span_s[g] / at0.bucket_span_s[b];
  return g == 0 || groups[g - 1].bucket != b ? 1.0 : 0.0;
}

// Group g's backward as it would run alone, at the shape `at`: its share of the bucket's interval
// less the interference taken out of it.
double group_alone_s(const KinetoImport& imp, const Shape& at, const Shape& at0, const std::vector<Group>& groups,
                     std::size_t g) {
  const std::size_t b = groups[g].bucket;
  return std::max(0.0, interval_s(imp, b) - imp.taken_out.interval_s[b]) * group_share(at, at0, groups, g);
}

// The model's batch curve carried onto the resolved trace (resolved_params.h); t's layers are
// forward_pass, backward_tail, then the groups in reverse.
void attach_resolved_curve(ModelTrace& t, KinetoImport& imp, const ResolveOptions& o,
                           const std::vector<GradBucket>& buckets, const std::vector<Group>& groups,
                           const Shape& at0) {
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
  const std::size_t G = groups.size();
  for (auto B : sizes) {
    // At the profiled batch every layer keeps its own times.
    const Shape at = B == b0 ? at0 : model_shape(*o.model, B, buckets, groups, o.model_file);
    for (std::size_t l = 0; l < t.layers.size(); ++l) {
      TraceLayer& layer = t.layers[l];
      double fwd = layer.forward_s, bwd = layer.backward_s;
      if (B != b0 && l == 0) fwd *= ratio(at.forward_s, at0.forward_s);
      if (B != b0 && l == 1) bwd *= ratio(at.tail_s, at0.tail_s);
      if (B != b0 && l >= 2) bwd = group_alone_s(imp, at, at0, groups, G - 1 - (l - 2));
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
  const ModelTrace& model = *o.model;
  const bool has_curve = !model.curve_batch_sizes.empty();
  const bool curve = has_curve && o.batch_known;
  const auto buckets = matching_buckets(imp, o);
  const auto groups = make_groups(model, buckets);
  // The model's shape inside each bucket, at the profiled batch where a curve says what it is.
  const std::int64_t batch = curve ? imp.trace.batch_size_per_rank : model.batch_size_per_rank;
  const Shape at0 = model_shape(model, batch, buckets, groups, o.model_file);
  // The synthetic trace's forward_pass, backward_tail, optimizer, buffers and device stay.
  ModelTrace t = imp.trace;
  t.layers.resize(2);
  t.params.clear();
  const auto none = t.layers[1].activation_bytes;
  // Each group's measured span: its share of the bucket's interval, the bucket's last group ending
  // exactly when the bucket was measured ready.
  imp.resolved_spans.clear();
  double start = imp.backward_start_s;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const std::size_t b = groups[g].bucket;
    if (g == 0 || groups[g - 1].bucket != b) start = imp.interval_start_s(b);
    const bool last = g + 1 == groups.size() || groups[g + 1].bucket != b;
    const double end = last ? imp.buckets[b].ready_s : start + interval_s(imp, b) * group_share(at0, at0, groups, g);
    imp.resolved_spans.push_back({groups[g].name, start, end});
    start = end;
  }
  // Forward order: the groups in reverse (backward runs them first to last).
  std::vector<std::size_t> layer_of(model.params.size(), 0);
  for (std::size_t g = groups.size(); g-- > 0;) {
    t.layers.push_back({groups[g].name, 0.0, group_alone_s(imp, at0, at0, groups, g), none, std::nullopt, {}, {}});
    for (auto p : groups[g].params) layer_of[p] = t.layers.size() - 1;
  }
  for (std::size_t i = 0; i < model.params.size(); ++i) {
    TraceParam p = model.params[i];
    p.layer = layer_of[i];  // parameters DDP does not reduce stay with forward_pass
    t.params.push_back(std::move(p));
  }
  t.grad_ready_order = model.grad_ready_order;
  t.curve_batch_sizes.clear();
  if (curve)
    attach_resolved_curve(t, imp, o, buckets, groups, at0);
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
