// The synthesised traces' activation_bytes against the published count: Korthikanti et al. 2022,
// "Reducing Activation Recomputation in Large Transformer Models", eq. (1): one transformer layer
// keeps s b h (34 + 5 a s / h) bytes with 16-bit activations, 1-byte dropout masks and eager
// attention; without the attention's s x s tensors (their selective recomputation, as fused
// flash kernels also keep none) 34 s b h. Flash kernels keep their output and an fp32
// log-sum-exp per head and row instead: + 2 s b h + 4 a s b.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>

#include "trace_tools/model_zoo.h"

using namespace redsim;

namespace {

using i64 = std::int64_t;

// The bytes every layer named `prefix`... keeps, summed.
i64 block_bytes(const ModelTrace& t, const std::string& prefix) {
  i64 sum = 0;
  for (const auto& l : t.layers)
    if (l.name.rfind(prefix, 0) == 0) sum += l.activation_bytes.value();
  return sum;
}

ModelTrace synth(const std::string& model, bool flash, i64 batch) {
  SynthOptions o = default_synth_options(model);
  o.flash_attention = flash;
  o.batch_size_per_rank = batch;
  return synthesize_trace(o);
}

struct Shape {
  std::string model, block;  // a transformer layer's parameter prefix
  i64 h, a, s;
};

}  // namespace

TEST_CASE("a synthesised transformer layer keeps Korthikanti et al.'s bytes", "[trace_tools][zoo][memory]") {
  // GPT-2 XL: hidden 1600, 25 heads, 1024 tokens; BERT-large: 1024, 16 heads, 512 tokens (its
  // post-norm layer keeps the same tensors). Both have attention and hidden dropout.
  for (const Shape& m : {Shape{"gpt2-xl", "h.0.", 1600, 25, 1024},
                         Shape{"bert-large", "encoder.layer.0.", 1024, 16, 512}}) {
    for (const i64 b : {1, 3}) {
      INFO(m.model << ", batch " << b);
      const i64 sbh = m.s * b * m.h;
      CHECK(block_bytes(synth(m.model, false, b), m.block) == 34 * sbh + 5 * m.a * m.s * m.s * b);
      CHECK(block_bytes(synth(m.model, true, b), m.block) == 34 * sbh + 2 * sbh + 4 * m.a * m.s * b);
    }
  }
}

TEST_CASE("Llama's layer: no dropout, a gated MLP, and Q's input read by K and V", "[trace_tools][zoo][memory]") {
  // Per token: two RMSNorm inputs, the attention input, Q K V (and with flash the output and 32
  // fp32 log-sum-exps; eager the 32 heads' probabilities), o_proj's input: 2 x (2 + 1 + 3 + 1) h
  // bytes (+ 2 h + 4 a, or + 2 a s). The MLP: gate_proj's input 2 h, then SiLU's input, its
  // output and up_proj's output (the product's factors), and down_proj's input: 4 x 2 ff.
  const i64 h = 4096, ff = 11008, a = 32, s = 4096;
  const i64 common = s * (2 * 7 * h + 2 * h + 8 * ff);
  CHECK(block_bytes(synth("llama2-7b", true, 1), "model.layers.0.") == common + s * (2 * h + 4 * a));
  CHECK(block_bytes(synth("llama2-7b", false, 1), "model.layers.0.") == common + 2 * a * s * s);
  // lm_head keeps its 16-bit input, and the loss HF's LlamaForCausalLM computes from labels: the
  // logits shifted by a token (s - 1 of them), whose fp32 log-softmax over the 32,000-word
  // vocabulary cross-entropy keeps, and the int64 labels its NLL keeps.
  const i64 vocab = 32000;
  for (i64 batch : {1, 2})
    CHECK(block_bytes(synth("llama2-7b", true, batch), "lm_head") == batch * (2 * s * h + (4 * vocab + 8) * (s - 1)));
}

TEST_CASE("a synthesised trace's activations grow with the batch and are every layer's", "[trace_tools][zoo][memory]") {
  for (const auto& model : zoo_models()) {
    INFO(model);
    const auto one = synth(model, true, 1), four = synth(model, true, 4);
    REQUIRE(one.activation_bytes().has_value());
    CHECK(*four.activation_bytes() == 4 * *one.activation_bytes());
    for (const auto& l : one.layers) CHECK(l.activation_bytes.has_value());
  }
  // ResNet-50's first and last layers: the 224 x 224 RGB image cast to 16 bits, and the pooled
  // 2048 features fc reads.
  const auto r = synth("resnet50", true, 2);
  CHECK(r.layers.front().activation_bytes == 2 * 3 * 224 * 224 * 2);
  CHECK(r.layers.back().name == "fc");
  CHECK(r.layers.back().activation_bytes == 2 * 2048 * 2);
}

TEST_CASE("a synthesised layer's input bytes: a transformer block takes s b h 16-bit values", "[trace_tools][zoo][memory][checkpointing]") {
  // What a checkpointed block keeps is its first layer's input: 2 s b h bytes (16-bit hidden
  // states) for each transformer, whatever the attention kernel.
  const Shape shapes[] = {{"gpt2-xl", "h.7.ln_1", 1600, 25, 1024},
                          {"bert-large", "encoder.layer.7.attention.self.query", 1024, 16, 512},
                          {"llama2-7b", "model.layers.7.input_layernorm", 4096, 32, 4096}};
  for (const auto& sh : shapes)
    for (i64 batch : {1, 3}) {
      INFO(sh.model << " batch " << batch);
      for (const auto& l : synth(sh.model, true, batch).layers) {
        REQUIRE(l.input_bytes.has_value());
        if (l.name == sh.block) CHECK(*l.input_bytes == 2 * sh.s * batch * sh.h);
      }
    }
  // ResNet-50's first convolution takes the 16-bit image, 3 x 224 x 224; layer2.0's 3x3
  // convolution its 128 channels at 56 x 56 (it strides to 28).
  for (const auto& l : synth("resnet50", true, 2).layers) {
    if (l.name == "conv1") CHECK(*l.input_bytes == 2 * 2 * 3 * 224 * 224);
    if (l.name == "layer2.0.conv2") CHECK(*l.input_bytes == 2 * 2 * 128 * 56 * 56);
  }
}
