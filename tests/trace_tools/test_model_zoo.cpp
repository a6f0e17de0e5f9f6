// The synthesised model traces: published parameter totals, registration order, FLOP counts,
// and the bundled traces/*.json being exactly what `redsim trace synth` writes with defaults.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <set>
#include <string>

#include "core/error.h"
#include "core/json_in.h"
#include "core/trace_json.h"
#include "trace_tools/model_zoo.h"
#include "trace_tools/synth_curve.h"

using namespace redsim;

namespace {

using i64 = std::int64_t;

// Published totals (torchvision docs; HuggingFace model cards / num_parameters()).
constexpr i64 kResNet50Params = 25'557'032;
constexpr i64 kBertLargeParams = 335'141'888;
constexpr i64 kGpt2XlParams = 1'557'611'200;
constexpr i64 kLlama2_7bParams = 6'738'415'616;

std::string bundled(const std::string& model) { return std::string(REDSIM_SOURCE_DIR "/traces/") + model + ".json"; }

ModelTrace synth(const std::string& model) { return synthesize_trace(default_synth_options(model)); }

const TraceParam& param(const ModelTrace& t, const std::string& name) {
  for (const auto& p : t.params)
    if (p.name == name) return p;
  FAIL("no parameter " << name);
  throw;
}

const TraceLayer& layer(const ModelTrace& t, const std::string& name) {
  for (const auto& l : t.layers)
    if (l.name == name) return l;
  FAIL("no layer " << name);
  throw;
}

// Seconds a compute-bound layer of `flops_per_sample` takes under the default options.
double compute_s(const SynthOptions& o, double flops_per_sample) {
  return flops_per_sample * static_cast<double>(o.batch_size_per_rank) / (o.device_peak_tflops * 1e12 * o.efficiency);
}

bool is_memory_bound(const std::string& layer) {
  for (const char* marker : {"bn", "downsample.1", "norm", "LayerNorm", "ln_", "embed", "wte", "wpe"})
    if (layer.find(marker) != std::string::npos) return true;
  return false;
}

// Each layer's forward is its roofline time plus one kernel's fixed cost; at the default batches
// every compute-bound layer is on the compute side of the roofline.
double kernel_s(const ModelTrace& t) { return default_synth_options(t.model).kernel_overhead_us * 1e-6; }

double compute_bound_forward_s(const ModelTrace& t) {
  double s = 0;
  for (const auto& l : t.layers)
    if (!is_memory_bound(l.name)) s += l.forward_s - kernel_s(t);
  return s;
}

void require_same(const ModelTrace& a, const ModelTrace& b) {
  REQUIRE(a.model == b.model);
  REQUIRE(a.source == b.source);
  REQUIRE(a.reference_device == b.reference_device);
  REQUIRE(a.batch_size_per_rank == b.batch_size_per_rank);
  REQUIRE(a.optimizer_s == b.optimizer_s);
  REQUIRE(a.grad_ready_order == b.grad_ready_order);
  REQUIRE(a.layers.size() == b.layers.size());
  for (std::size_t i = 0; i < a.layers.size(); ++i) {
    REQUIRE(a.layers[i].name == b.layers[i].name);
    REQUIRE(a.layers[i].forward_s == b.layers[i].forward_s);
    REQUIRE(a.layers[i].backward_s == b.layers[i].backward_s);
  }
  REQUIRE(a.params.size() == b.params.size());
  for (std::size_t i = 0; i < a.params.size(); ++i) {
    REQUIRE(a.params[i].name == b.params[i].name);
    REQUIRE(a.params[i].numel == b.params[i].numel);
    REQUIRE(a.params[i].dtype == b.params[i].dtype);
    REQUIRE(a.params[i].layer == b.params[i].layer);
    REQUIRE(a.params[i].trainable == b.params[i].trainable);
    REQUIRE(a.params[i].excluded == b.params[i].excluded);
  }
  REQUIRE(a.buffers.size() == b.buffers.size());
  for (std::size_t i = 0; i < a.buffers.size(); ++i) {
    REQUIRE(a.buffers[i].name == b.buffers[i].name);
    REQUIRE(a.buffers[i].numel == b.buffers[i].numel);
    REQUIRE(a.buffers[i].dtype == b.buffers[i].dtype);
    REQUIRE(a.buffers[i].broadcast == b.buffers[i].broadcast);
  }
}

}  // namespace

TEST_CASE("zoo lists the four bundled models") {
  REQUIRE(zoo_models() == std::vector<std::string>{"resnet50", "bert-large", "gpt2-xl", "llama2-7b"});
}

TEST_CASE("parameter totals match the published counts, synthesised and bundled") {
  const std::pair<std::string, i64> expected[] = {{"resnet50", kResNet50Params},
                                                  {"bert-large", kBertLargeParams},
                                                  {"gpt2-xl", kGpt2XlParams},
                                                  {"llama2-7b", kLlama2_7bParams}};
  for (const auto& [model, total] : expected) {
    INFO(model);
    auto t = synth(model);
    REQUIRE(t.model == model);
    REQUIRE(t.param_count() == total);
    REQUIRE(load_trace(bundled(model)).param_count() == total);
  }
}

TEST_CASE("bundled traces are exactly what trace synth writes with the defaults") {
  for (const auto& model : zoo_models()) {
    INFO(model);
    const auto o = default_synth_options(model);
    const auto t = synthesize_with_curve(o, default_curve_batch_sizes(o.batch_size_per_rank), true);
    REQUIRE(trace_to_json(t) == JsonIn::parse_file(bundled(model)));
    // The curve adds other batch sizes and changes nothing at the trace's own.
    REQUIRE(t.curve_batch_sizes.size() >= 3);
    auto own = trace_to_json(synth(model));
    auto curved = trace_to_json(t);
    curved.erase("curve_batch_sizes");
    curved.erase("source");
    own.erase("source");
    for (auto& l : curved["layers"]) l.erase("forward_s_by_batch"), l.erase("backward_s_by_batch");
    REQUIRE(curved == own);
  }
}

TEST_CASE("synth's default curve: powers of two from a 256th of the batch to four times it") {
  using V = std::vector<i64>;
  CHECK(default_curve_batch_sizes(64) == V{1, 2, 4, 8, 16, 32, 64, 128, 256});
  CHECK(default_curve_batch_sizes(1) == V{1, 2, 4});
  CHECK(default_curve_batch_sizes(3) == V{1, 2, 3, 4, 8});
  // From 1024 / 256 = 4 up to 4096.
  CHECK(default_curve_batch_sizes(1024) == V{4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096});
  // Never past what a trace may say (2^24), and within the 16 points a curve holds.
  const auto top = default_curve_batch_sizes(kMaxBatchSizePerRank);
  CHECK(top.back() == kMaxBatchSizePerRank);
  CHECK(top.size() <= 16);
}

TEST_CASE("the default curve leaves out sizes above the batch that a trace file cannot hold") {
  // bert-large keeps about 0.45 GB of activations a sequence: 2^21 sequences (0.95 PB) fit under
  // the format's 2^50 bytes (1.13 PB), twice as many do not.
  auto o = default_synth_options("bert-large");
  o.batch_size_per_rank = i64{1} << 21;
  const auto t = synthesize_with_curve(o, default_curve_batch_sizes(o.batch_size_per_rank), true);
  CHECK(t.curve_batch_sizes.back() == (i64{1} << 21));
  CHECK(t.curve_batch_sizes.front() == (i64{1} << 13));
  // Asked for by name, the same size is an error.
  CHECK_THROWS_AS(synthesize_with_curve(o, {o.batch_size_per_rank, i64{1} << 22}, false), InputError);
}

TEST_CASE("names are unique, params name their layer, backward is twice forward") {
  for (const auto& model : zoo_models()) {
    INFO(model);
    auto t = synth(model);
    std::set<std::string> layers, params, buffers;
    for (const auto& l : t.layers) {
      REQUIRE(layers.insert(l.name).second);
      REQUIRE(l.forward_s > 0);
      REQUIRE(l.backward_s == 2 * l.forward_s);
    }
    for (const auto& p : t.params) {
      REQUIRE(params.insert(p.name).second);
      // Every parameter is `<owning module>.weight` or `.bias`, as in named_parameters().
      const auto& owner = t.layers[p.layer].name;
      CHECK((p.name == owner + ".weight" || p.name == owner + ".bias"));
      REQUIRE(p.reduced());
    }
    for (const auto& b : t.buffers) REQUIRE(buffers.insert(b.name).second);
    REQUIRE(t.grad_ready_order == derive_grad_ready_order(t));
  }
}

TEST_CASE("trace_to_json then trace_from_json is lossless") {
  for (const auto& model : zoo_models()) {
    INFO(model);
    auto t = synth(model);
    require_same(trace_from_json(trace_to_json(t), "roundtrip"), t);
    // Through text too, as the bundled files are stored.
    require_same(trace_from_json(JsonIn::parse_text(trace_to_json(t).dump(1), "text"), "text"), t);
  }
}

TEST_CASE("resnet50 structure from first principles") {
  auto t = synth("resnet50");
  // Stem conv1 + bn1; 16 bottlenecks of 3 convs and 3 BNs; 4 downsample (conv, BN); fc.
  const i64 blocks[] = {3, 4, 6, 3};
  const i64 bottlenecks = 3 + 4 + 6 + 3;
  const i64 batch_norms = 1 + 3 * bottlenecks + 4;
  REQUIRE(t.params.size() == static_cast<std::size_t>(3 + 9 * bottlenecks + 3 * 4 + 2));
  REQUIRE(t.params.size() == 161);
  REQUIRE(t.buffers.size() == static_cast<std::size_t>(3 * batch_norms));

  // Closed-form parameter count: convolutions have no bias, BN has weight and bias.
  i64 total = 3 * 64 * 7 * 7 + 2 * 64;
  i64 c_in = 64;
  for (int stage = 0; stage < 4; ++stage) {
    const i64 w = i64{64} << stage;
    for (i64 i = 0; i < blocks[stage]; ++i) {
      total += c_in * w + 9 * w * w + w * 4 * w + 2 * (w + w + 4 * w);
      if (i == 0) total += c_in * 4 * w + 2 * 4 * w;
      c_in = 4 * w;
    }
  }
  total += 2048 * 1000 + 1000;
  REQUIRE(total == kResNet50Params);
  REQUIRE(t.param_count() == total);

  REQUIRE(t.params.front().name == "conv1.weight");
  REQUIRE(t.params[3].name == "layer1.0.conv1.weight");
  REQUIRE(param(t, "layer1.0.downsample.0.weight").numel == 64 * 256);
  REQUIRE(param(t, "layer4.2.conv2.weight").numel == 512 * 512 * 9);
  REQUIRE(param(t, "fc.weight").numel == 2'048'000);
  REQUIRE(t.params.back().name == "fc.bias");
  REQUIRE(t.params[t.grad_ready_order.front()].name == "fc.bias");
  REQUIRE(t.params[t.grad_ready_order.back()].name == "conv1.weight");
  REQUIRE(t.buffers.front().name == "bn1.running_mean");
  REQUIRE(t.buffers[2].name == "bn1.num_batches_tracked");
  REQUIRE(t.buffers[2].dtype == DType::int64);

  // torchvision: 4.09 GMACs per 224x224 image, i.e. about 8.18 GFLOP in convolutions and fc.
  const auto o = default_synth_options("resnet50");
  REQUIRE(compute_bound_forward_s(t) == Approx(compute_s(o, 2 * 4.09e9)).epsilon(0.005));
  // conv1: 7x7x3 -> 64 channels at 112x112.
  REQUIRE(layer(t, "conv1").forward_s == Approx(compute_s(o, 2.0 * 3 * 64 * 49 * 112 * 112) + kernel_s(t)));
}

TEST_CASE("bert-large structure from first principles") {
  auto t = synth("bert-large");
  const i64 d = 1024, ff = 4096, L = 24, V = 30522, P = 512, T = 2;
  // Embeddings: 3 tables + LayerNorm; per layer q, k, v, o, intermediate, output (weight, bias)
  // and two LayerNorms; pooler dense.
  REQUIRE(t.params.size() == static_cast<std::size_t>(5 + 16 * L + 2));
  const i64 per_layer = 4 * (d * d + d) + 2 * d + (d * ff + ff) + (ff * d + d) + 2 * d;
  REQUIRE(V * d + P * d + T * d + 2 * d + L * per_layer + d * d + d == kBertLargeParams);
  // Registered word, position, token type; looked up word, token type, position.
  REQUIRE(t.params[0].name == "embeddings.word_embeddings.weight");
  REQUIRE(t.params[1].name == "embeddings.position_embeddings.weight");
  REQUIRE(t.params[2].name == "embeddings.token_type_embeddings.weight");
  const auto& order = t.grad_ready_order;
  REQUIRE(t.params[order[order.size() - 1]].name == "embeddings.word_embeddings.weight");
  REQUIRE(t.params[order[order.size() - 2]].name == "embeddings.token_type_embeddings.weight");
  REQUIRE(t.params[order[order.size() - 3]].name == "embeddings.position_embeddings.weight");
  REQUIRE(t.params[order.front()].name == "pooler.dense.bias");
  REQUIRE(param(t, "encoder.layer.23.output.dense.weight").numel == ff * d);

  // FLOPs: 2 per weight per token in encoder linears, the pooler on one token, attention cores.
  const auto o = default_synth_options("bert-large");
  const double s = o.seq_len;
  const double flops = 2.0 * L * (4 * d * d + 2 * d * ff) * s + 2.0 * d * d + L * 4.0 * s * s * d;
  // The pooler works on one token per sequence, so reading its d x d fp32 weight (and bias) takes
  // longer than its FLOPs: it sits on the memory side of the roofline.
  const double pooler_flops_s = compute_s(o, 2.0 * d * d);
  const double pooler_memory_s = (d * d + d) * 4.0 / (o.device_memory_GBps * 1e9 * o.efficiency);
  REQUIRE(pooler_memory_s > pooler_flops_s);
  REQUIRE(compute_bound_forward_s(t) ==
          Approx(compute_s(o, flops) - pooler_flops_s + pooler_memory_s).epsilon(1e-12));
}

TEST_CASE("gpt2-xl structure from first principles") {
  auto t = synth("gpt2-xl");
  const i64 d = 1600, L = 48, V = 50257, P = 1024;
  // wte, wpe, ln_f (weight, bias); per block ln_1, c_attn, c_proj, ln_2, c_fc, c_proj (weight, bias).
  REQUIRE(t.params.size() == static_cast<std::size_t>(48 * 12 + 4));
  REQUIRE(V * d + P * d + L * (12 * d * d + 13 * d) + 2 * d == kGpt2XlParams);
  REQUIRE(t.params[0].name == "wte.weight");
  REQUIRE(t.params[1].name == "wpe.weight");
  REQUIRE(t.params[2].name == "h.0.ln_1.weight");
  REQUIRE(param(t, "h.47.attn.c_attn.weight").numel == d * 3 * d);
  REQUIRE(t.params.back().name == "ln_f.bias");
  REQUIRE(t.buffers.empty());

  const auto o = default_synth_options("gpt2-xl");
  const double s = o.seq_len;
  const double flops = 2.0 * L * 12 * d * d * s + L * 4.0 * s * s * d;
  REQUIRE(compute_bound_forward_s(t) == Approx(compute_s(o, flops)).epsilon(1e-12));
}

TEST_CASE("llama2-7b structure from first principles") {
  auto t = synth("llama2-7b");
  const i64 d = 4096, ff = 11008, L = 32, V = 32000;
  REQUIRE(t.params.size() == static_cast<std::size_t>(32 * 9 + 3));
  REQUIRE(2 * V * d + L * (4 * d * d + 3 * d * ff + 2 * d) + d == kLlama2_7bParams);
  // Registration order inside a decoder layer: attention, MLP, then the two norms.
  REQUIRE(t.params[1].name == "model.layers.0.self_attn.q_proj.weight");
  REQUIRE(t.params[8].name == "model.layers.0.input_layernorm.weight");
  REQUIRE(t.params[9].name == "model.layers.0.post_attention_layernorm.weight");
  REQUIRE(t.params.back().name == "lm_head.weight");
  REQUIRE(t.params.back().numel == V * d);  // untied from model.embed_tokens
  REQUIRE(t.params.back().dtype == DType::bf16);
  REQUIRE(t.reduced_bytes() == 2 * kLlama2_7bParams);
  // Forward order puts input_layernorm first, so its gradient is the layer's last.
  const auto& order = t.grad_ready_order;
  REQUIRE(t.params[order.front()].name == "lm_head.weight");
  REQUIRE(t.params[order[order.size() - 2]].name == "model.layers.0.input_layernorm.weight");

  const auto o = default_synth_options("llama2-7b");
  const double s = o.seq_len;
  const double flops = 2.0 * (L * (4 * d * d + 3 * d * ff) + d * V) * s + L * 4.0 * s * s * d;
  REQUIRE(compute_bound_forward_s(t) == Approx(compute_s(o, flops)).epsilon(1e-12));
}

TEST_CASE("optimizer time is Adam's 28 bytes per parameter at the assumed bandwidth") {
  for (const auto& model : zoo_models()) {
    INFO(model);
    const auto o = default_synth_options(model);
    auto t = synthesize_trace(o);
    REQUIRE(t.optimizer_s ==
            Approx(28.0 * static_cast<double>(t.param_count()) / (o.device_memory_GBps * 1e9 * o.efficiency)));
  }
}

TEST_CASE("options scale the times and land in the trace") {
  auto o = default_synth_options("gpt2-xl");
  o.kernel_overhead_us = 0;  // the fixed part does not scale (next test)
  auto base = synthesize_trace(o);
  o.batch_size_per_rank *= 2;
  o.efficiency /= 2;
  o.device_name = "test device";
  o.param_dtype = DType::bf16;
  auto t = synthesize_trace(o);
  REQUIRE(t.reference_device == "test device");
  REQUIRE(t.batch_size_per_rank == 2 * base.batch_size_per_rank);
  REQUIRE(t.layers[5].forward_s == Approx(4 * base.layers[5].forward_s));
  REQUIRE(t.reduced_bytes() == base.reduced_bytes() / 2);
}

TEST_CASE("bad options are input errors") {
  REQUIRE_THROWS_AS(default_synth_options("resnet18"), InputError);
  auto o = default_synth_options("resnet50");
  o.model = "vgg16";
  REQUIRE_THROWS_AS(synthesize_trace(o), InputError);
  o = default_synth_options("resnet50");
  o.seq_len = 128;  // a CNN has no sequence
  REQUIRE_THROWS_AS(synthesize_trace(o), InputError);
  o = default_synth_options("bert-large");
  o.seq_len = 513;  // beyond its 512 learned positions
  REQUIRE_THROWS_AS(synthesize_trace(o), InputError);
  o = default_synth_options("bert-large");
  o.efficiency = 0;
  REQUIRE_THROWS_AS(synthesize_trace(o), InputError);
  o = default_synth_options("bert-large");
  o.batch_size_per_rank = 0;
  REQUIRE_THROWS_AS(synthesize_trace(o), InputError);
  o = default_synth_options("bert-large");
  o.param_dtype = DType::int64;
  REQUIRE_THROWS_AS(synthesize_trace(o), InputError);
  o = default_synth_options("bert-large");
  o.batch_size_per_rank = kMaxBatchSizePerRank + 1;  // what the trace reader takes at most
  REQUIRE_THROWS_AS(synthesize_trace(o), InputError);
  for (double v : {std::numeric_limits<double>::infinity(), 1e300, -1.0}) {
    o = default_synth_options("bert-large");
    o.device_peak_tflops = v;
    REQUIRE_THROWS_AS(synthesize_trace(o), InputError);
    o = default_synth_options("bert-large");
    o.device_memory_GBps = v;
    REQUIRE_THROWS_AS(synthesize_trace(o), InputError);
  }
}

TEST_CASE("synth never writes a trace its reader refuses") {
  // bert-large keeps about 0.45 GB of activations a sequence of 512 tokens (3.47 GiB at batch 8,
  // trace show), so 2^24 sequences need some 7.6 PB: past the reader's 2^50 bytes (1 PiB).
  auto o = default_synth_options("bert-large");
  o.batch_size_per_rank = kMaxBatchSizePerRank;
  try {
    synthesize_trace(o);
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("the synthesised trace: $.layers[") &&
                                          Catch::Contains("a smaller --batch-size or --seq-len"));
  }
  // Within the limits the same options give a trace the reader reads back unchanged.
  o.batch_size_per_rank = 1024;
  const auto t = synthesize_trace(o);
  CHECK(trace_to_json(trace_from_json(trace_to_json(t), "t.json")) == trace_to_json(t));
}

TEST_CASE("compute against batch size is a roofline plus a fixed cost per kernel, not a line") {
  // ResNet-50's layer4.0.conv2: 3x3, 512 -> 512 channels, 7x7 output (stride on the 3x3 conv).
  // Forward FLOPs per image 2*512*512*9*49; its weight is 512*512*9 fp32 values read once per pass.
  const double flops = 2.0 * 512 * 512 * 9 * 49;
  const double weight_bytes = 512.0 * 512 * 9 * 4;
  auto o = default_synth_options("resnet50");
  const double compute_Bps = o.device_peak_tflops * 1e12 * o.efficiency;
  const double memory_Bps = o.device_memory_GBps * 1e9 * o.efficiency;
  const double kernel_s = o.kernel_overhead_us * 1e-6;
  for (std::int64_t batch : {1, 8, 64}) {
    INFO("batch " << batch);
    o.batch_size_per_rank = batch;
    const auto t = synthesize_trace(o);
    const TraceLayer* layer = nullptr;
    for (const auto& l : t.layers)
      if (l.name == "layer4.0.conv2") layer = &l;
    REQUIRE(layer != nullptr);
    const double expected_s = std::max(flops * static_cast<double>(batch) / compute_Bps, weight_bytes / memory_Bps) + kernel_s;
    CHECK(layer->forward_s == Approx(expected_s).epsilon(1e-12));
    CHECK(layer->backward_s == Approx(2 * expected_s).epsilon(1e-12));
  }
  // At batch 1 the weight read bounds it: 64 images cost far less than 64 single ones.
  o.batch_size_per_rank = 1;
  double one = 0;
  for (const auto& l : synthesize_trace(o).layers) one += l.forward_s;
  o.batch_size_per_rank = 64;
  double sixty_four = 0;
  for (const auto& l : synthesize_trace(o).layers) sixty_four += l.forward_s;
  CHECK(sixty_four < 0.5 * 64 * one);
}
