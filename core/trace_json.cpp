#include "core/trace_json.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.h"
#include "core/json_in.h"

namespace redsim {
namespace {

DType read_dtype(const JsonIn& v) {
  auto name = v.string();
  auto t = parse_dtype(name);
  if (!t) v.fail("a dtype (" + std::string(dtype_choices()) + ")");
  return *t;
}

double op_time_s(const JsonIn& v) {
  const double s = v.nonnegative_number();
  if (s > kMaxOpTimeS) v.fail("a time in seconds from 0 to " + std::to_string(static_cast<int>(kMaxOpTimeS)));
  return s;
}

std::int64_t tensor_numel(const JsonIn& v) {
  const std::int64_t n = v.positive_integer();
  if (n > kMaxTensorElements) v.fail("a positive element count at most 2^44");
  return n;
}

// A parameter's shape: at most kMaxTensorDims positive dimensions whose product is its numel.
std::vector<std::int64_t> tensor_shape(const JsonIn& v, std::int64_t numel) {
  const auto dims = v.items();
  if (dims.size() > kMaxTensorDims) v.fail("at most " + std::to_string(kMaxTensorDims) + " dimensions");
  std::vector<std::int64_t> shape;
  std::int64_t product = 1;
  for (const auto& d : dims) {
    const std::int64_t n = d.positive_integer();
    if (n > numel || product > numel / n) v.fail("dimensions whose product is numel (" + std::to_string(numel) + ")");
    product *= n;
    shape.push_back(n);
  }
  if (product != numel) v.fail("dimensions whose product is numel (" + std::to_string(numel) + ")");
  return shape;
}

// Adds a tensor's bytes to the model's running total, refusing a model over kMaxModelBytes (the
// sums and products made from it later could no longer overflow).
void add_model_bytes(std::int64_t& total, std::int64_t bytes, const JsonIn& where) {
  total += bytes;  // both terms are at most 2^50 here: no overflow
  if (total > kMaxModelBytes) where.fail("a model of at most 2^50 bytes (1 PiB) of parameters and buffers in all");
}

// A layer's optional byte count (activation_bytes, input_bytes): given for every layer or for
// none (a sum over some layers would pass for the whole model's), and at most kMaxModelBytes in all.
struct LayerBytesField {
  const char* key;
  bool given = false;
  std::int64_t total = 0;
  void read(const JsonIn& l, std::optional<std::int64_t>& out, bool first) {
    const auto a = l.find(key);
    if (first) given = a.has_value();
    if (a.has_value() != given)
      (a ? *a : l).fail(std::string(given ? std::string(key) + " here too" : std::string("no ") + key) +
                        " (a trace gives them for every layer or for none, as its first layer does)");
    if (!a) return;
    out = a->nonnegative_integer();
    if (*out > kMaxModelBytes) a->fail(std::string(key) + " of at most 2^50 (1 PiB)");
    if ((total += *out) > kMaxModelBytes)
      a->fail(std::string(key) + " of at most 2^50 (1 PiB) over all layers (this layer's brings them to " +
              std::to_string(total) + ")");
  }
};

// The batch sizes a trace's layer times were also measured at: at least two, increasing, each
// 1 to 2^24, the trace's own batch_size_per_rank among them.
std::vector<std::int64_t> read_curve_batch_sizes(const JsonIn& v, std::int64_t own_batch) {
  std::vector<std::int64_t> sizes;
  for (const auto& e : v.items()) {
    const std::int64_t b = e.positive_integer();
    if (b > kMaxBatchSizePerRank) e.fail("a positive integer at most 2^24");
    if (!sizes.empty() && b <= sizes.back()) e.fail("batch sizes in increasing order, each once");
    sizes.push_back(b);
  }
  if (sizes.size() < 2) v.fail("at least two batch sizes (a curve), batch_size_per_rank among them");
  if (sizes.size() > kMaxCurveBatchSizes) v.fail("at most 16 batch sizes");
  if (std::find(sizes.begin(), sizes.end(), own_batch) == sizes.end())
    v.fail("batch_size_per_rank (" + std::to_string(own_batch) + ") among the batch sizes");
  return sizes;
}

// A layer's times at the trace's curve_batch_sizes (`key` is forward_s_by_batch or
// backward_s_by_batch): given exactly when the trace has a curve, one per batch size, and at
// batch_size_per_rank the layer's own time (the curve passes through the trace's numbers).
std::vector<double> read_layer_curve(const JsonIn& l, const char* key, double own_s, const ModelTrace& t) {
  const auto v = l.find(key);
  if (t.curve_batch_sizes.empty()) {
    if (v) v->fail(std::string("no ") + key + " (the trace gives no curve_batch_sizes)");
    return {};
  }
  if (!v) l.fail(std::string("a member ") + key + " (the trace gives curve_batch_sizes)");
  const auto items = v->items();
  if (items.size() != t.curve_batch_sizes.size())
    v->fail(std::to_string(t.curve_batch_sizes.size()) + " times, one per entry of $.curve_batch_sizes");
  std::vector<double> times;
  for (std::size_t i = 0; i < items.size(); ++i) {
    times.push_back(op_time_s(items[i]));
    if (t.curve_batch_sizes[i] == t.batch_size_per_rank && std::abs(times.back() - own_s) > 1e-9 * std::max(1.0, own_s))
      items[i].fail("the layer's own time at batch_size_per_rank (" + std::to_string(own_s) + " s)");
  }
  return times;
}

// An explicit gradient-ready order: every trainable parameter once, by name.
void read_grad_ready_order(const JsonIn& order, const std::map<std::string, std::size_t>& param_index, ModelTrace& t) {
  std::vector<bool> seen(t.params.size(), false);
  for (const auto& e : order.items()) {
    auto it = param_index.find(e.string());
    if (it == param_index.end()) e.fail("the name of a parameter listed in $.params");
    if (!t.params[it->second].trainable) e.fail("a trainable parameter (frozen ones get no gradient)");
    if (seen[it->second]) e.fail("each parameter once");
    seen[it->second] = true;
    t.grad_ready_order.push_back(it->second);
  }
  for (std::size_t i = 0; i < t.params.size(); ++i)
    if (t.params[i].trainable && !seen[i])
      order.fail("every trainable parameter once (missing \"" + t.params[i].name + "\")");
}

}  // namespace

ModelTrace trace_from_json(const json& root, const std::string& file) {
  JsonIn j(root, "$", file);
  j.allow_only({"$schema", "format", "version", "model", "source", "reference_device", "batch_size_per_rank",
                "layers", "params", "grad_ready_order", "optimizer_s", "buffers", "curve_batch_sizes",
                "compute_timed"});
  if (j.at("format").string() != "redsim-trace") j.at("format").fail("\"redsim-trace\"");
  if (j.at("version").integer() != 1) j.at("version").fail("1");

  ModelTrace t;
  t.model = j.at("model").nonempty_string();
  t.source = j.string_or("source", "");
  t.reference_device = j.at("reference_device").nonempty_string();
  t.batch_size_per_rank = j.at("batch_size_per_rank").positive_integer();
  if (t.batch_size_per_rank > kMaxBatchSizePerRank) j.at("batch_size_per_rank").fail("a positive integer at most 2^24");
  if (auto o = j.find("optimizer_s")) t.optimizer_s = op_time_s(*o);
  if (auto c = j.find("curve_batch_sizes")) t.curve_batch_sizes = read_curve_batch_sizes(*c, t.batch_size_per_rank);
  if (auto c = j.find("compute_timed")) t.compute_beside_collectives = c->one_of({"alone", "beside_collectives"}) != "alone";
  std::int64_t model_bytes = 0;

  std::map<std::string, std::size_t> layer_index;
  LayerBytesField activations{"activation_bytes"}, inputs{"input_bytes"};
  for (const auto& l : j.at("layers").nonempty_items()) {
    l.allow_only({"name", "forward_s", "backward_s", "activation_bytes", "input_bytes", "forward_s_by_batch",
                  "backward_s_by_batch"});
    TraceLayer layer;
    layer.name = l.at("name").nonempty_string();
    layer.forward_s = op_time_s(l.at("forward_s"));
    layer.backward_s = op_time_s(l.at("backward_s"));
    layer.forward_s_by_batch = read_layer_curve(l, "forward_s_by_batch", layer.forward_s, t);
    layer.backward_s_by_batch = read_layer_curve(l, "backward_s_by_batch", layer.backward_s, t);
    activations.read(l, layer.activation_bytes, t.layers.empty());
    inputs.read(l, layer.input_bytes, t.layers.empty());
    if (!layer_index.emplace(layer.name, t.layers.size()).second) l.at("name").fail("a unique layer name");
    t.layers.push_back(std::move(layer));
  }

  std::map<std::string, std::size_t> param_index;
  for (const auto& p : j.at("params").nonempty_items()) {
    p.allow_only({"name", "numel", "shape", "dtype", "layer", "trainable", "excluded", "tensors"});
    TraceParam param;
    param.name = p.at("name").nonempty_string();
    param.numel = tensor_numel(p.at("numel"));
    if (auto shape = p.find("shape")) param.shape = tensor_shape(*shape, param.numel);
    param.dtype = read_dtype(p.at("dtype"));
    add_model_bytes(model_bytes, param.bytes(), p.at("numel"));
    auto layer = p.at("layer");
    auto it = layer_index.find(layer.string());
    if (it == layer_index.end()) layer.fail("the name of a layer listed in $.layers");
    param.layer = it->second;
    param.trainable = p.boolean_or("trainable", true);
    param.excluded = p.boolean_or("excluded", false);
    param.tensors = p.positive_integer_or("tensors", 1);
    if (param.tensors > 1'000'000) p.at("tensors").fail("at most 1,000,000 gradient tensors for one parameter");
    if (param.reduced() && !dtype_is_float(param.dtype))
      p.at("dtype").fail("a floating-point dtype for a reduced parameter (mark integer tensors as buffers)");
    if (!param_index.emplace(param.name, t.params.size()).second) p.at("name").fail("a unique parameter name");
    t.params.push_back(std::move(param));
  }

  if (auto order = j.find("grad_ready_order"))
    read_grad_ready_order(*order, param_index, t);
  else
    t.grad_ready_order = derive_grad_ready_order(t);

  if (auto bufs = j.find("buffers")) {
    for (const auto& b : bufs->items()) {
      b.allow_only({"name", "numel", "dtype", "broadcast"});
      TraceBuffer buf;
      buf.name = b.at("name").nonempty_string();
      buf.numel = tensor_numel(b.at("numel"));
      buf.dtype = read_dtype(b.at("dtype"));
      add_model_bytes(model_bytes, buf.bytes(), b.at("numel"));
      buf.broadcast = b.boolean_or("broadcast", true);
      t.buffers.push_back(std::move(buf));
    }
  }
  return t;
}

ModelTrace load_trace(const std::string& file) { return trace_from_json(JsonIn::parse_file(file), file); }

json trace_to_json(const ModelTrace& t) {
  json j;
  j["format"] = "redsim-trace";
  j["version"] = 1;
  j["model"] = t.model;
  j["source"] = t.source;
  j["reference_device"] = t.reference_device;
  j["batch_size_per_rank"] = t.batch_size_per_rank;
  j["optimizer_s"] = t.optimizer_s;
  if (!t.curve_batch_sizes.empty()) j["curve_batch_sizes"] = t.curve_batch_sizes;
  if (t.compute_beside_collectives) j["compute_timed"] = "beside_collectives";  // absent: alone
  json layers = json::array();
  for (const auto& l : t.layers) {
    json e = {{"name", l.name}, {"forward_s", l.forward_s}, {"backward_s", l.backward_s}};
    if (l.activation_bytes) e["activation_bytes"] = *l.activation_bytes;
    if (l.input_bytes) e["input_bytes"] = *l.input_bytes;
    if (!t.curve_batch_sizes.empty()) {
      e["forward_s_by_batch"] = l.forward_s_by_batch;
      e["backward_s_by_batch"] = l.backward_s_by_batch;
    }
    layers.push_back(std::move(e));
  }
  j["layers"] = std::move(layers);
  json params = json::array();
  for (const auto& p : t.params) {
    json e = {{"name", p.name}, {"numel", p.numel}, {"dtype", dtype_name(p.dtype)}, {"layer", t.layers[p.layer].name}};
    if (p.shape) e["shape"] = *p.shape;
    if (!p.trainable) e["trainable"] = false;
    if (p.excluded) e["excluded"] = true;
    if (p.tensors != 1) e["tensors"] = p.tensors;
    params.push_back(std::move(e));
  }
  j["params"] = std::move(params);
  // Written only when it differs from what a reader would derive, to keep files small.
  if (t.grad_ready_order != derive_grad_ready_order(t)) {
    json order = json::array();
    for (auto i : t.grad_ready_order) order.push_back(t.params[i].name);
    j["grad_ready_order"] = std::move(order);
  }
  json bufs = json::array();
  for (const auto& b : t.buffers) {
    json e = {{"name", b.name}, {"numel", b.numel}, {"dtype", dtype_name(b.dtype)}};
    if (!b.broadcast) e["broadcast"] = false;
    bufs.push_back(std::move(e));
  }
  j["buffers"] = std::move(bufs);
  return j;
}

}  // namespace redsim
