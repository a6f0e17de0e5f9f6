#include "trace_tools/model_zoo.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <utility>

#include "core/error.h"
#include "trace_tools/synth_checks.h"

namespace redsim {
namespace {

// The traces model mixed-precision training (autocast): convolutions and matmuls run on
// 16-bit tensor cores and activations are 16-bit; parameters and gradients are param_dtype.
constexpr double kActivationBytes = 2;
// BatchNorm, LayerNorm and RMSNorm read their input twice (statistics, then normalisation)
// and write their output once.
constexpr double kNormPasses = 3;
// An embedding lookup reads the selected rows and writes them out.
constexpr double kEmbeddingPasses = 2;
// What backward needs kept (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
// Transformer Models", section 4.1): 16-bit tensors, a dropout mask of 1 byte an element, an
// int64 index per token or pooled element, fp32 softmax statistics.
constexpr double kMaskBytes = 1, kIndexBytes = 8, kStatBytes = 4;
// Backward computes gradients with respect to inputs and to weights: two forward-sized passes.
constexpr double kBackwardPerForward = 2;

// Adam touches fp32 m, v and master weights, each read and written (24 bytes); it reads the
// gradient; a 16-bit parameter is also written back from its fp32 master (an fp32 parameter is
// its own master). 28 bytes per parameter for fp32 and for 16-bit parameters alike.
double adam_bytes_per_param(DType param) {
  double size_bytes = static_cast<double>(dtype_size_bytes(param));
  return 6 * 4 + size_bytes + (param == DType::fp32 ? 0 : size_bytes);
}

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string num(double v) { return fmt("%g", v); }

// Appends layers (forward order) and parameters (registration order) of one trace and turns
// FLOP and byte counts into times.
class TraceBuilder {
 public:
  explicit TraceBuilder(const SynthOptions& o) : o_(o) {}

  // A compute-bound layer (convolution, matmul, attention core): forward FLOPs per sample.
  void compute_layer(const std::string& name, double flops_per_sample) {
    flops_per_sample_ += flops_per_sample;
    add_layer(name, {flops_per_sample, 0});
  }

  // A memory-bound layer (normalisation, embedding lookup): bytes moved per sample.
  void memory_layer(const std::string& name, double bytes_per_sample) { add_layer(name, {0, bytes_per_sample}); }

  // Bytes per sample the last layer added keeps for backward (its activation_bytes, per sample).
  void saves(double bytes_per_sample) { work_.back().saved_bytes_per_sample += bytes_per_sample; }
  // Bytes per sample of the tensors the last layer added is given (its input_bytes, per sample).
  void takes(double bytes_per_sample) { work_.back().input_bytes_per_sample = bytes_per_sample; }
  bool flash() const { return o_.flash_attention; }

  // Parameter `module.leaf` of the given shape (as PyTorch registers it); its module must
  // already be a layer.
  void param(const std::string& module, const std::string& leaf, std::vector<std::int64_t> shape) {
    auto it = layer_index_.find(module);
    if (it == layer_index_.end()) throw std::logic_error("model_zoo: parameter of unknown layer " + module);
    TraceParam p;
    p.name = module + "." + leaf;
    p.numel = 1;
    for (auto d : shape) p.numel *= d;
    p.shape = std::move(shape);
    p.dtype = o_.param_dtype;
    p.layer = it->second;
    work_[it->second].weight_bytes += static_cast<double>(p.bytes());
    t_.params.push_back(std::move(p));
  }

  void buffer(const std::string& name, std::int64_t numel, DType dtype) {
    TraceBuffer b;
    b.name = name;
    b.numel = numel;
    b.dtype = dtype;
    t_.buffers.push_back(std::move(b));
  }

  double flops_per_sample() const { return flops_per_sample_; }

  // Optimizer time, derived gradient order and the source text that says how it was made.
  ModelTrace finish(const std::string& shapes, const std::string& not_modelled) {
    for (std::size_t l = 0; l < t_.layers.size(); ++l) {
      t_.layers[l].forward_s = forward_s(work_[l]);
      t_.layers[l].backward_s = kBackwardPerForward * t_.layers[l].forward_s;
      t_.layers[l].activation_bytes =
          std::llround(work_[l].saved_bytes_per_sample * static_cast<double>(o_.batch_size_per_rank));
      if (work_[l].input_bytes_per_sample < 0) throw std::logic_error("model_zoo: no input for " + t_.layers[l].name);
      t_.layers[l].input_bytes =
          std::llround(work_[l].input_bytes_per_sample * static_cast<double>(o_.batch_size_per_rank));
    }
    double adam_bytes = 0;
    for (const auto& p : t_.params)
      if (p.trainable) adam_bytes += static_cast<double>(p.numel) * adam_bytes_per_param(p.dtype);
    t_.model = o_.model;
    t_.reference_device = o_.device_name;
    t_.batch_size_per_rank = o_.batch_size_per_rank;
    t_.optimizer_s = adam_bytes / (o_.device_memory_GBps * 1e9 * o_.efficiency);
    t_.grad_ready_order = derive_grad_ready_order(t_);
    t_.source =
        "synthesised by `redsim trace synth` (trace_tools/model_zoo.cpp) from published shapes, not measured. "
        "Model: " + shapes + ". Compute-bound layers (conv: 2*Cin*Cout*k*k*Hout*Wout per sample; linear: "
        "2*in*out per token; attention core *.core: 2*2*seq^2*hidden per sequence, full score matrix even "
        "when causal) take the larger of FLOPs * batch / (peak_tflops*1e12 * efficiency) and their "
        "parameters' bytes (read once per pass whatever the batch) / (memory_GBps*1e9 * efficiency), "
        "plus kernel_overhead_us " + num(o_.kernel_overhead_us) + " per kernel (1 forward, 2 backward): "
        "a roofline, so small batches are not proportionally cheaper; " +
        fmt("%.5g", flops_per_sample_ / 1e9) +
        " GFLOP forward per sample. Memory-bound layers (Batch/Layer/RMSNorm: 3 passes, embedding "
        "lookup: 2 passes over 16-bit activations): forward_s = (bytes * batch + parameter bytes) / "
        "(memory_GBps*1e9 * efficiency) + the kernel overhead. backward_s = 2 * forward_s (twice the "
        "FLOPs, bytes and kernels). Not costed: " + not_modelled +
        ". optimizer_s: Adam over all trainable parameters, memory-bound, 28 bytes touched per "
        "parameter / (memory_GBps*1e9 * efficiency). Device " + o_.device_name + ": peak " +
        num(o_.device_peak_tflops) + " TFLOP/s (dense 16-bit tensor core), memory " +
        num(o_.device_memory_GBps) + " GB/s, efficiency " + num(o_.efficiency) + ". Batch " +
        std::to_string(o_.batch_size_per_rank) + " samples per rank" +
        (o_.seq_len > 0 ? " x " + std::to_string(o_.seq_len) + " tokens" : std::string()) +
        ". Parameters and gradients " + std::string(dtype_name(o_.param_dtype)) +
        " (mixed precision: 16-bit activations, fp32 optimizer state). activation_bytes: what autograd keeps "
        "for backward, each tensor once (Korthikanti et al. 2022, 4.1: a linear or convolution keeps its input, "
        "a norm its input, GELU/SiLU their input, the gating product both factors, dropout a 1-byte mask, "
        "ReLU its output, max pooling int64 indices; attention " +
        (o_.flash_attention ? std::string("as fused (flash) kernels run it: Q, K, V, the output and fp32 "
                                          "log-sum-exp per row")
                            : std::string("eager: Q, K, V, the 16-bit softmax probabilities and, with attention "
                                          "dropout, its mask and the dropped probabilities")) +
        "); input_bytes: the 16-bit tensors a layer is given (an embedding its int64 ids, the attention core Q, K "
        "and V); the loss only where the model above says so.";
    return std::move(t_);
  }

 private:
  // What a layer's forward does per sample, and the parameter bytes it reads once per pass.
  struct LayerWork {
    double flops_per_sample = 0;
    double bytes_per_sample = 0;
    double weight_bytes = 0;
    double saved_bytes_per_sample = 0;
    double input_bytes_per_sample = -1;  // set by takes() for every layer
  };

  void add_layer(const std::string& name, LayerWork work) {
    if (!layer_index_.emplace(name, t_.layers.size()).second)
      throw std::logic_error("model_zoo: duplicate layer " + name);
    t_.layers.push_back({name, 0, 0, std::nullopt, std::nullopt, {}, {}});
    work_.push_back(work);
  }

  // Roofline: the larger of compute time and memory time, plus one kernel's fixed cost.
  double forward_s(const LayerWork& w) const {
    const double batch = static_cast<double>(o_.batch_size_per_rank);
    const double compute_s = w.flops_per_sample * batch / (o_.device_peak_tflops * 1e12 * o_.efficiency);
    const double memory_s = (w.bytes_per_sample * batch + w.weight_bytes) / (o_.device_memory_GBps * 1e9 * o_.efficiency);
    return std::max(compute_s, memory_s) + o_.kernel_overhead_us * 1e-6;
  }

  const SynthOptions& o_;
  ModelTrace t_;
  std::map<std::string, std::size_t> layer_index_;
  std::vector<LayerWork> work_;
  double flops_per_sample_ = 0;
};

double norm_bytes(double elements) { return kNormPasses * elements * kActivationBytes; }
double embedding_bytes(double elements) { return kEmbeddingPasses * elements * kActivationBytes; }

// --- torchvision resnet50 (ResNet-50 v1.5: stride on the 3x3 conv), 224x224 input ------------

// Conv2d without bias; hw_in and hw_out are the input's and output's height (= width).
void conv(TraceBuilder& b, const std::string& name, std::int64_t c_in, std::int64_t c_out, std::int64_t k,
          std::int64_t hw_in, std::int64_t hw_out) {
  b.compute_layer(name, 2.0 * static_cast<double>(c_in * c_out * k * k * hw_out * hw_out));
  b.takes(kActivationBytes * static_cast<double>(c_in * hw_in * hw_in));
  b.param(name, "weight", {c_out, c_in, k, k});
}

// BatchNorm2d: affine weight and bias, running statistics as buffers (DDP broadcasts them). It
// keeps its input; the ReLU after it (`relu`) its output, which the next convolution reads.
void batch_norm(TraceBuilder& b, const std::string& name, std::int64_t c, std::int64_t hw, bool relu = true) {
  b.memory_layer(name, norm_bytes(static_cast<double>(c * hw * hw)));
  b.takes(kActivationBytes * static_cast<double>(c * hw * hw));
  b.saves((relu ? 2 : 1) * kActivationBytes * static_cast<double>(c * hw * hw));
  b.param(name, "weight", {c});
  b.param(name, "bias", {c});
  b.buffer(name + ".running_mean", c, DType::fp32);
  b.buffer(name + ".running_var", c, DType::fp32);
  b.buffer(name + ".num_batches_tracked", 1, DType::int64);
}

ModelTrace resnet50(const SynthOptions& o) {
  TraceBuilder b(o);
  conv(b, "conv1", 3, 64, 7, 224, 112);  // 7x7 stride 2: 224 -> 112
  b.saves(kActivationBytes * 3 * 224 * 224);  // the image, cast to 16 bits
  batch_norm(b, "bn1", 64, 112);
  b.saves(kIndexBytes * 64 * 56 * 56);  // the max pool's indices
  std::int64_t c_in = 64, hw = 56;  // after the 3x3 stride-2 max pool
  const std::int64_t blocks[] = {3, 4, 6, 3};
  for (int stage = 0; stage < 4; ++stage) {
    const std::int64_t width = std::int64_t{64} << stage, c_out = 4 * width;
    for (std::int64_t i = 0; i < blocks[stage]; ++i) {
      const std::string p = "layer" + std::to_string(stage + 1) + "." + std::to_string(i) + ".";
      const std::int64_t hw_out = (i == 0 && stage > 0) ? hw / 2 : hw;
      // Bottleneck.forward: conv1 bn1 conv2 bn2 conv3 bn3, then downsample(x) for the identity.
      conv(b, p + "conv1", c_in, width, 1, hw, hw);
      batch_norm(b, p + "bn1", width, hw);
      conv(b, p + "conv2", width, width, 3, hw, hw_out);
      batch_norm(b, p + "bn2", width, hw_out);
      conv(b, p + "conv3", width, c_out, 1, hw_out, hw_out);
      batch_norm(b, p + "bn3", c_out, hw_out);  // its ReLU runs after the residual add: as many elements
      if (i == 0) {
        conv(b, p + "downsample.0", c_in, c_out, 1, hw, hw_out);
        batch_norm(b, p + "downsample.1", c_out, hw_out, false);  // added to the block's output
      }
      c_in = c_out;
      hw = hw_out;
    }
  }
  b.compute_layer("fc", 2.0 * 2048 * 1000);  // after global average pooling
  b.takes(kActivationBytes * 2048);
  b.saves(kActivationBytes * 2048);
  b.param("fc", "weight", {1000, 2048});
  b.param("fc", "bias", {1000});
  return b.finish(
      "torchvision resnet50 (ResNet-50 v1.5), 224x224 images, 1000 classes. Buffers: every "
      "BatchNorm's running_mean and running_var (fp32) and num_batches_tracked (int64)",
      "ReLU, max/average pooling, residual adds");
}

// --- transformers -------------------------------------------------------------------------

struct Linear {
  std::int64_t in, out;
  bool bias;
  bool conv1d = false;  // GPT-2's Conv1D stores its weight as (in, out); nn.Linear as (out, in)
};

// nn.Linear (or GPT-2's Conv1D, same parameter count) applied to `tokens` positions. It keeps its
// input, unless a layer before it kept the same tensor (K and V read Q's input).
void linear_layer(TraceBuilder& b, const std::string& name, Linear l, double tokens, bool keeps_input = true) {
  b.compute_layer(name, 2.0 * static_cast<double>(l.in * l.out) * tokens);
  b.takes(kActivationBytes * static_cast<double>(l.in) * tokens);
  if (keeps_input) b.saves(kActivationBytes * static_cast<double>(l.in) * tokens);
}
void linear_params(TraceBuilder& b, const std::string& name, Linear l) {
  b.param(name, "weight", l.conv1d ? std::vector<std::int64_t>{l.in, l.out} : std::vector<std::int64_t>{l.out, l.in});
  if (l.bias) b.param(name, "bias", {l.out});
}
void linear(TraceBuilder& b, const std::string& name, Linear l, double tokens, bool keeps_input = true) {
  linear_layer(b, name, l, tokens, keeps_input);
  linear_params(b, name, l);
}

// What a transformer's MLP output projection keeps beyond its input: the activation function's
// input (GELU; SiLU and the gating product's other factor with `gated`), and the dropout mask after it.
void mlp_out_saves(TraceBuilder& b, std::int64_t ff, std::int64_t hidden, double tokens, bool gated, bool dropout) {
  b.saves(kActivationBytes * static_cast<double>(ff) * tokens * (gated ? 3 : 1) +
          (dropout ? kMaskBytes * static_cast<double>(hidden) * tokens : 0));
}

// A norm over `elements` 16-bit values per sample, which it is given and keeps for backward.
void norm_layer(TraceBuilder& b, const std::string& name, double elements) {
  b.memory_layer(name, norm_bytes(elements));
  b.takes(kActivationBytes * elements);
  b.saves(kActivationBytes * elements);
}

// LayerNorm with weight and bias over `hidden`, applied to `tokens` positions; keeps its input.
void layer_norm(TraceBuilder& b, const std::string& name, std::int64_t hidden, double tokens) {
  norm_layer(b, name, static_cast<double>(hidden) * tokens);
  b.param(name, "weight", {hidden});
  b.param(name, "bias", {hidden});
}

// Scores Q K^T and context softmax(.) V for one sequence: two matmuls of 2*seq^2*hidden FLOPs.
// Kept for backward: Q, K and V; fused (flash) kernels add the output and an fp32 log-sum-exp per
// head and row, eager attention the heads' seq x seq probabilities (and, with attention dropout,
// its mask and the dropped probabilities: Korthikanti et al.'s 5 a s^2 bytes).
void attention_core(TraceBuilder& b, const std::string& name, std::int64_t hidden, std::int64_t heads, double seq,
                    bool dropout) {
  b.compute_layer(name, 2.0 * 2.0 * seq * seq * static_cast<double>(hidden));
  const double qkv = 3 * kActivationBytes * static_cast<double>(hidden) * seq, h = static_cast<double>(heads);
  b.takes(qkv);
  if (b.flash())
    b.saves(qkv + kActivationBytes * static_cast<double>(hidden) * seq + kStatBytes * h * seq);
  else
    b.saves(qkv + h * seq * seq * (kActivationBytes + (dropout ? kMaskBytes + kActivationBytes : 0)));
}

// HuggingFace BertModel (bert-large-uncased config) with its pooler.
ModelTrace bert_large(const SynthOptions& o) {
  const std::int64_t d = 1024, ff = 4096, layers = 24, vocab = 30522, positions = 512, types = 2;
  const double s = o.seq_len;
  TraceBuilder b(o);
  // BertEmbeddings.forward looks up word, then token type, then position embeddings; they are
  // registered word, position, token type.
  for (const char* e : {"word", "token_type", "position"}) {  // each keeps its ids
    b.memory_layer(std::string("embeddings.") + e + "_embeddings", embedding_bytes(d * s));
    b.takes(kIndexBytes * s);
    b.saves(kIndexBytes * s);
  }
  b.param("embeddings.word_embeddings", "weight", {vocab, d});
  b.param("embeddings.position_embeddings", "weight", {positions, d});
  b.param("embeddings.token_type_embeddings", "weight", {types, d});
  layer_norm(b, "embeddings.LayerNorm", d, s);
  b.saves(kMaskBytes * d * s);  // the dropout after it
  b.buffer("embeddings.position_ids", positions, DType::int64);
  b.buffer("embeddings.token_type_ids", positions, DType::int64);
  for (std::int64_t i = 0; i < layers; ++i) {
    const std::string p = "encoder.layer." + std::to_string(i) + ".";
    linear(b, p + "attention.self.query", {d, d, true}, s);
    linear(b, p + "attention.self.key", {d, d, true}, s, false);
    linear(b, p + "attention.self.value", {d, d, true}, s, false);
    attention_core(b, p + "attention.self.core", d, 16, s, true);
    linear(b, p + "attention.output.dense", {d, d, true}, s);
    b.saves(kMaskBytes * d * s);
    layer_norm(b, p + "attention.output.LayerNorm", d, s);
    linear(b, p + "intermediate.dense", {d, ff, true}, s);
    linear(b, p + "output.dense", {ff, d, true}, s);
    mlp_out_saves(b, ff, d, s, false, true);
    layer_norm(b, p + "output.LayerNorm", d, s);
  }
  linear(b, "pooler.dense", {d, d, true}, 1);  // first token only
  b.saves(kActivationBytes * d);                 // tanh keeps its output
  return b.finish(
      "HuggingFace BertModel, bert-large-uncased config (24 layers, hidden 1024, 16 heads, FFN 4096, "
      "vocab 30522, 512 positions, 2 token types), with pooler, without pre-training heads. Buffers: "
      "embeddings.position_ids and embeddings.token_type_ids (int64, 512 each, non-persistent)",
      "GELU, softmax, dropout, residual adds, pooler tanh");
}

// HuggingFace GPT2Model (gpt2-xl config); no LM head, so no tied weight.
ModelTrace gpt2_xl(const SynthOptions& o) {
  const std::int64_t d = 1600, ff = 4 * d, layers = 48, vocab = 50257, positions = 1024;
  const double s = o.seq_len;
  TraceBuilder b(o);
  b.memory_layer("wte", embedding_bytes(d * s));
  b.takes(kIndexBytes * s);
  b.saves(kIndexBytes * s);
  b.param("wte", "weight", {vocab, d});
  b.memory_layer("wpe", embedding_bytes(d * s));
  b.takes(kIndexBytes * s);  // the position ids
  b.saves(kIndexBytes * s + kMaskBytes * d * s);  // and the dropout after the sum
  b.param("wpe", "weight", {positions, d});
  for (std::int64_t i = 0; i < layers; ++i) {
    const std::string p = "h." + std::to_string(i) + ".";
    layer_norm(b, p + "ln_1", d, s);
    linear(b, p + "attn.c_attn", {d, 3 * d, true, true}, s);
    attention_core(b, p + "attn.core", d, 25, s, true);
    linear(b, p + "attn.c_proj", {d, d, true, true}, s);
    b.saves(kMaskBytes * d * s);
    layer_norm(b, p + "ln_2", d, s);
    linear(b, p + "mlp.c_fc", {d, ff, true, true}, s);
    linear(b, p + "mlp.c_proj", {ff, d, true, true}, s);
    mlp_out_saves(b, ff, d, s, false, true);
  }
  layer_norm(b, "ln_f", d, s);
  return b.finish(
      "HuggingFace GPT2Model, gpt2-xl config (48 layers, hidden 1600, 25 heads, FFN 6400, vocab 50257, "
      "1024 positions), no LM head. Buffers: none; the causal-mask buffers h.N.attn.bias and "
      "h.N.attn.masked_bias of older transformers versions are omitted",
      "GELU, softmax, dropout, residual adds");
}

// HuggingFace LlamaForCausalLM (Llama-2-7b config), lm_head not tied to the embedding.
ModelTrace llama2_7b(const SynthOptions& o) {
  const std::int64_t d = 4096, ff = 11008, layers = 32, vocab = 32000;
  const double s = o.seq_len;
  const Linear proj{d, d, false}, up{d, ff, false}, down{ff, d, false};
  TraceBuilder b(o);
  b.memory_layer("model.embed_tokens", embedding_bytes(d * s));
  b.takes(kIndexBytes * s);
  b.saves(kIndexBytes * s);
  b.param("model.embed_tokens", "weight", {vocab, d});
  for (std::int64_t i = 0; i < layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    // LlamaDecoderLayer.forward order...
    norm_layer(b, p + "input_layernorm", d * s);  // given the block's input: all a checkpointed block keeps
    linear_layer(b, p + "self_attn.q_proj", proj, s);
    linear_layer(b, p + "self_attn.k_proj", proj, s, false);
    linear_layer(b, p + "self_attn.v_proj", proj, s, false);
    attention_core(b, p + "self_attn.core", d, 32, s, false);
    linear_layer(b, p + "self_attn.o_proj", proj, s);
    norm_layer(b, p + "post_attention_layernorm", d * s);
    linear_layer(b, p + "mlp.gate_proj", up, s);
    linear_layer(b, p + "mlp.up_proj", up, s, false);
    linear_layer(b, p + "mlp.down_proj", down, s);
    mlp_out_saves(b, ff, d, s, true, false);
    // ... differs from its registration order: self_attn, mlp, input_layernorm, post_attention_layernorm.
    for (const char* name : {"q_proj", "k_proj", "v_proj", "o_proj"}) linear_params(b, p + "self_attn." + name, proj);
    linear_params(b, p + "mlp.gate_proj", up);
    linear_params(b, p + "mlp.up_proj", up);
    linear_params(b, p + "mlp.down_proj", down);
    b.param(p + "input_layernorm", "weight", {d});
    b.param(p + "post_attention_layernorm", "weight", {d});
  }
  norm_layer(b, "model.norm", d * s);
  b.param("model.norm", "weight", {d});
  linear(b, "lm_head", {d, vocab, false}, s);
  // HF's loss on the fp32 logits shifted a token: log-softmax keeps its fp32 output, NLL the int64 labels.
  b.saves((kStatBytes * static_cast<double>(vocab) + kIndexBytes) * (s - 1));
  return b.finish(
      "HuggingFace LlamaForCausalLM, Llama-2-7b config (32 layers, hidden 4096, 32 heads, 32 KV heads, "
      "FFN 11008, vocab 32000, 4096 positions, RMSNorm without bias), lm_head untied, its loss with labels "
      "on lm_head (fp32 log-softmax over the vocabulary, int64 labels, shifted a token). Buffers: none; "
      "the rotary inv_freq buffer (fp32, 64 elements, non-persistent) is omitted",
      "rotary embedding, SiLU and gating product, softmax, residual adds");
}

struct ZooEntry {
  const char* name;
  ModelTrace (*build)(const SynthOptions&);
  std::int64_t batch_size_per_rank;
  int seq_len, max_seq_len;  // the default and the model's position limit; 0 for CNNs
  DType param_dtype;
};

// Batches: ResNet-50 64 images (the common per-GPU batch of ImageNet recipes), BERT-large 8 x 512
// (phase-2 pre-training length), GPT-2 XL 4 x 1024, Llama-2-7B 1 x 4096 (its full context).
// Llama-2-7B parameters are bf16: in fp32 with Adam (16 bytes/parameter, 108 GB) it does not fit
// an 80 GB device, so it is trained sharded in bf16 with fp32 master weights in the optimizer.
constexpr ZooEntry kZoo[] = {
    {"resnet50", resnet50, 64, 0, 0, DType::fp32},
    {"bert-large", bert_large, 8, 512, 512, DType::fp32},
    {"gpt2-xl", gpt2_xl, 4, 1024, 1024, DType::fp32},
    {"llama2-7b", llama2_7b, 1, 4096, 4096, DType::bf16},
};

const ZooEntry& find_model(const std::string& model) {
  std::string list;
  for (const auto& e : kZoo) {
    if (model == e.name) return e;
    list += (list.empty() ? "" : ", ") + std::string(e.name);
  }
  throw InputError("", "", "unknown model \"" + model + "\"; expected one of " + list);
}

}  // namespace

std::vector<std::string> zoo_models() {
  std::vector<std::string> names;
  for (const auto& e : kZoo) names.emplace_back(e.name);
  return names;
}

SynthOptions default_synth_options(const std::string& model) {
  const auto& e = find_model(model);
  SynthOptions o;
  o.model = e.name;
  o.batch_size_per_rank = e.batch_size_per_rank;
  o.device_name = "NVIDIA A100-SXM4-80GB";
  o.device_peak_tflops = 312;  // dense fp16/bf16 tensor-core peak
  o.device_memory_GBps = 2039;
  o.efficiency = 0.45;
  o.kernel_overhead_us = 4;
  o.seq_len = e.seq_len;
  o.param_dtype = e.param_dtype;
  return o;
}

ModelTrace synthesize_trace(const SynthOptions& o) {
  const auto& e = find_model(o.model);
  check_synth_options(o, e.max_seq_len);
  ModelTrace trace = e.build(o);
  check_synthesised_trace(trace);
  return trace;
}

}  // namespace redsim
