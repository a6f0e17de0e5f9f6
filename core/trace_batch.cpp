#include "core/trace_batch.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/error.h"
#include "core/trace_json.h"

namespace redsim {
namespace {

// Adds `batch` to the curve with each layer's time there, the layer's forward_s and backward_s
// (they lie on the curve, so the curve is unchanged).
void add_curve_point(ModelTrace& t, std::int64_t batch) {
  const auto at = std::lower_bound(t.curve_batch_sizes.begin(), t.curve_batch_sizes.end(), batch);
  if (at != t.curve_batch_sizes.end() && *at == batch) return;
  const auto k = at - t.curve_batch_sizes.begin();
  t.curve_batch_sizes.insert(at, batch);
  for (auto& l : t.layers) {
    l.forward_s_by_batch.insert(l.forward_s_by_batch.begin() + k, l.forward_s);
    l.backward_s_by_batch.insert(l.backward_s_by_batch.begin() + k, l.backward_s);
  }
}

// Bytes saved for `own` samples scaled to `batch` samples, kept within the trace's limit.
std::optional<std::int64_t> scale_bytes(std::optional<std::int64_t> bytes, std::int64_t own, std::int64_t batch,
                                        std::int64_t& total, const std::string& file) {
  if (!bytes) return bytes;
  const double scaled = std::round(static_cast<double>(*bytes) * static_cast<double>(batch) / static_cast<double>(own));
  if (scaled > static_cast<double>(kMaxModelBytes) || (total += static_cast<std::int64_t>(scaled)) > kMaxModelBytes)
    throw InputError(file, "$.layers", "--batch-size " + std::to_string(batch) +
                                           ": expected activation and input bytes of at most 2^50 over all layers at that batch");
  return static_cast<std::int64_t>(scaled);
}

}  // namespace

void attach_batch_curve(ModelTrace& trace, const std::vector<ModelTrace>& others) {
  std::vector<const ModelTrace*> points{&trace};
  for (const auto& o : others) {
    if (o.layers.size() != trace.layers.size())
      throw std::invalid_argument("attach_batch_curve: the traces have different layers");
    for (std::size_t i = 0; i < o.layers.size(); ++i)
      if (o.layers[i].name != trace.layers[i].name)
        throw std::invalid_argument("attach_batch_curve: layer " + o.layers[i].name + " is not " + trace.layers[i].name);
    points.push_back(&o);
  }
  std::sort(points.begin(), points.end(),
            [](const ModelTrace* a, const ModelTrace* b) { return a->batch_size_per_rank < b->batch_size_per_rank; });
  std::vector<std::int64_t> sizes;
  for (const auto* p : points) {
    if (!sizes.empty() && sizes.back() == p->batch_size_per_rank)
      throw std::invalid_argument("attach_batch_curve: two traces at batch " + std::to_string(sizes.back()));
    sizes.push_back(p->batch_size_per_rank);
  }
  std::vector<std::vector<double>> fwd(trace.layers.size()), bwd(trace.layers.size());
  for (const auto* p : points)
    for (std::size_t i = 0; i < trace.layers.size(); ++i) {
      fwd[i].push_back(p->layers[i].forward_s);
      bwd[i].push_back(p->layers[i].backward_s);
    }
  trace.curve_batch_sizes = std::move(sizes);
  for (std::size_t i = 0; i < trace.layers.size(); ++i) {
    trace.layers[i].forward_s_by_batch = std::move(fwd[i]);
    trace.layers[i].backward_s_by_batch = std::move(bwd[i]);
  }
}

std::vector<std::int64_t> parse_batch_sizes(const std::string& text, std::int64_t own) {
  std::vector<std::int64_t> sizes{own};
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t end = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, end - at);
    std::size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size())
      throw InputError("", "", "--batch-sizes: expected comma-separated positive integers, got \"" + text + "\"");
    if (v < 1 || v > kMaxBatchSizePerRank)
      throw InputError("", "", "--batch-sizes: expected batch sizes from 1 to 2^24, got " + item);
    sizes.push_back(v);
    at = end + 1;
  }
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  if (sizes.size() < 2)
    throw InputError("", "", "--batch-sizes: expected at least one batch size other than --batch-size (" +
                                 std::to_string(own) + ")");
  if (sizes.size() > kMaxCurveBatchSizes)
    throw InputError("", "", "--batch-sizes: expected at most 16 batch sizes with --batch-size, got " +
                                 std::to_string(sizes.size()));
  return sizes;
}

double curve_time_s(const std::vector<std::int64_t>& batch_sizes, const std::vector<double>& times_s, std::int64_t batch) {
  const std::size_t n = batch_sizes.size();
  if (n == 1) return times_s[0];
  // The segment that holds `batch`, or the nearest one at either end.
  std::size_t k = static_cast<std::size_t>(std::upper_bound(batch_sizes.begin(), batch_sizes.end(), batch) - batch_sizes.begin());
  k = std::clamp<std::size_t>(k, 1, n - 1) - 1;
  const double b0 = static_cast<double>(batch_sizes[k]), b1 = static_cast<double>(batch_sizes[k + 1]);
  const double slope = (times_s[k + 1] - times_s[k]) / (b1 - b0);
  return std::max(0.0, times_s[k] + slope * (static_cast<double>(batch) - b0));
}

ModelTrace trace_at_batch(const ModelTrace& trace, std::int64_t batch, const std::string& file) {
  const std::string opt = "--batch-size " + std::to_string(batch);
  if (batch < 1 || batch > kMaxBatchSizePerRank)
    throw InputError("", "", "--batch-size: expected a batch size per rank from 1 to 2^24, got " + std::to_string(batch));
  if (batch == trace.batch_size_per_rank) return trace;
  if (trace.curve_batch_sizes.empty())
    throw InputError(file, "$.curve_batch_sizes",
                     opt + ": the trace's times are for batch_size_per_rank " + std::to_string(trace.batch_size_per_rank) +
                         " only; expected a batch curve (capture with redsim_capture.py --batch-sizes, or synthesise "
                         "the trace at that batch with redsim trace synth --batch-size)");
  ModelTrace t = trace;
  std::int64_t activation_total = 0, input_total = 0;
  for (std::size_t i = 0; i < t.layers.size(); ++i) {
    auto& l = t.layers[i];
    l.forward_s = curve_time_s(t.curve_batch_sizes, l.forward_s_by_batch, batch);
    l.backward_s = curve_time_s(t.curve_batch_sizes, l.backward_s_by_batch, batch);
    if (l.forward_s > kMaxOpTimeS || l.backward_s > kMaxOpTimeS)
      throw InputError(file, "$.layers[" + std::to_string(i) + "]",
                       opt + ": expected layer times of at most 3600 s at that batch (the curve gives more)");
    l.activation_bytes = scale_bytes(l.activation_bytes, trace.batch_size_per_rank, batch, activation_total, file);
    l.input_bytes = scale_bytes(l.input_bytes, trace.batch_size_per_rank, batch, input_total, file);
  }
  add_curve_point(t, batch);
  const std::string outside = extrapolation_note(trace, batch).empty() ? "" : ", extrapolated beyond them";
  t.source += (t.source.empty() ? "" : "; ") + std::string("layer times evaluated at batch ") + std::to_string(batch) +
              " per rank from the curve measured at " + std::to_string(trace.curve_batch_sizes.size()) + " batch sizes" +
              outside;
  t.batch_size_per_rank = batch;
  return t;
}

std::string extrapolation_note(const ModelTrace& trace, std::int64_t batch) {
  const auto& sizes = trace.curve_batch_sizes;
  if (sizes.empty() || batch == trace.batch_size_per_rank || (batch >= sizes.front() && batch <= sizes.back()))
    return "";
  return "batch " + std::to_string(batch) + " per rank is outside the batch sizes the trace's curve measured (" +
         std::to_string(sizes.front()) + " to " + std::to_string(sizes.back()) +
         "): its layer times are extrapolated along the nearest segment's line; capture that batch size too for a "
         "measured time";
}

ModelTrace load_trace_at(const std::string& file, std::int64_t batch, std::string* note) {
  auto trace = load_trace(file);
  if (batch <= 0) return trace;
  if (note) *note = extrapolation_note(trace, batch);
  return trace_at_batch(trace, batch, file);
}

}  // namespace redsim
