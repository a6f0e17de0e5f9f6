#include "trace_tools/trace_summary.h"

#include <algorithm>
#include <numeric>

namespace redsim {

using nlohmann::json;

namespace {

// `tensors`: 1, or what a synthetic parameter stands for (TraceParam::tensors).
void add(Tally& n, std::int64_t numel, std::int64_t bytes, std::int64_t tensors = 1) {
  n.tensors += static_cast<std::size_t>(tensors);
  n.numel += numel;
  n.bytes += bytes;
}

json tally_json(const Tally& n) { return {{"tensors", n.tensors}, {"numel", n.numel}, {"bytes", n.bytes}}; }

void tally_tensors(const ModelTrace& t, TraceSummary& s) {
  for (const auto& p : t.params) {
    add(s.params, p.numel, p.bytes(), p.tensors);
    add(s.by_dtype[std::string(dtype_name(p.dtype))], p.numel, p.bytes(), p.tensors);
    if (p.reduced()) add(s.reduced, p.numel, p.bytes(), p.tensors);
    if (!p.trainable) add(s.frozen, p.numel, p.bytes(), p.tensors);
    if (p.trainable && p.excluded) add(s.excluded, p.numel, p.bytes(), p.tensors);
  }
  for (const auto& b : t.buffers) {
    add(s.buffers, b.numel, b.bytes());
    if (b.broadcast) add(s.broadcast, b.numel, b.bytes());
  }
}

void tally_compute(const ModelTrace& t, std::size_t top, TraceSummary& s) {
  std::vector<bool> has_params(t.layers.size(), false);
  for (const auto& p : t.params) has_params[p.layer] = true;
  for (std::size_t i = 0; i < t.layers.size(); ++i) {
    s.forward_s += t.layers[i].forward_s;
    s.backward_s += t.layers[i].backward_s;
    if (!has_params[i]) ++s.bare_layers;
  }
  std::vector<std::size_t> by_time(t.layers.size());
  std::iota(by_time.begin(), by_time.end(), std::size_t{0});
  std::stable_sort(by_time.begin(), by_time.end(), [&](std::size_t x, std::size_t y) {
    return t.layers[x].forward_s + t.layers[x].backward_s > t.layers[y].forward_s + t.layers[y].backward_s;
  });
  by_time.resize(std::min(top, by_time.size()));
  s.top_layers = std::move(by_time);
}

json buckets_json(const ModelTrace& t, const std::vector<GradBucket>& buckets) {
  json out = json::array();
  for (const auto& bk : buckets)
    out.push_back({{"dtype", dtype_name(bk.dtype)},
                   {"bytes", bk.bytes},
                   {"numel", bk.numel},
                   {"size_limit_bytes", bk.size_limit_bytes},
                   {"first", t.params[bk.params.front()].name},
                   {"last", t.params[bk.params.back()].name},
                   {"params", bk.params}});
  return out;
}

}  // namespace

TraceSummary summarize_trace(const ModelTrace& t, const TraceShowOptions& o) {
  TraceSummary s;
  tally_tensors(t, s);
  tally_compute(t, o.top, s);
  s.buckets = ddp_buckets(t, o.knobs);
  for (const auto& b : s.buckets) s.bucket_bytes += b.bytes;
  s.backward_total_s = backward_total_s(t);
  s.histogram = grad_ready_histogram(t, o.bins);
  if (can_checkpoint(t)) {
    s.checkpointing = checkpoint_blocks(t, ActivationCheckpointing::blocks);
    s.checkpointed_peak_bytes = activation_peak_bytes(t, s.checkpointing);
  }
  return s;
}

namespace {

// What --activation-checkpointing blocks would do with this trace; null when it cannot.
json checkpointing_json(const TraceSummary& s) {
  if (!s.checkpointing.on()) return nullptr;
  return {{"blocks", s.checkpointing.blocks.size()},
          {"first_block", s.checkpointing.blocks.front().name},
          {"activation_bytes", s.checkpointed_peak_bytes}};
}

}  // namespace

json trace_summary_to_json(const std::string& file, const ModelTrace& t, const TraceShowOptions& o,
                           const TraceSummary& s) {
  json dtypes = json::object();
  for (const auto& [name, n] : s.by_dtype) dtypes[name] = tally_json(n);
  json top = json::array();
  for (auto i : s.top_layers)
    top.push_back(
        {{"layer", t.layers[i].name}, {"forward_s", t.layers[i].forward_s}, {"backward_s", t.layers[i].backward_s}});
  json bins = json::array();
  for (const auto& h : s.histogram)
    bins.push_back({{"start_s", h.start_s}, {"end_s", h.end_s}, {"tensors", h.tensors}, {"bytes", h.bytes}});
  return {{"format", "redsim-trace-summary"},
          {"version", 1},
          {"trace", file},
          {"model", t.model},
          {"params",
           {{"all", tally_json(s.params)},
            {"by_dtype", dtypes},
            {"reduced", tally_json(s.reduced)},
            {"frozen", tally_json(s.frozen)},
            {"excluded", tally_json(s.excluded)}}},
          {"buffers", {{"all", tally_json(s.buffers)}, {"broadcast", tally_json(s.broadcast)}}},
          {"activation_bytes", t.activation_bytes() ? json(*t.activation_bytes()) : json(nullptr)},
          {"checkpointing", checkpointing_json(s)},
          {"compute",
           {{"forward_s", s.forward_s},
            {"backward_s", s.backward_s},
            {"optimizer_s", t.optimizer_s},
            {"layers", t.layers.size()},
            {"top_layers", top}}},
          {"ddp_buckets",
           {{"bucket_cap_bytes", o.knobs.bucket_cap_bytes},
            {"first_bucket_cap_bytes", o.knobs.first_bucket_cap_bytes},
            {"bucket_order", bucket_order_name(o.knobs.bucket_order)},
            {"buckets", buckets_json(t, s.buckets)}}},
          {"grad_ready_histogram", {{"backward_s", s.backward_total_s}, {"bins", bins}}}};
}

}  // namespace redsim
