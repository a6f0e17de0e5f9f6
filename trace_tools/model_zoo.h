// Model traces synthesised from published model shapes and a device's peak throughput, for the
// bundled traces/*.json (see traces/README.md). No profiling: times are a roofline of each layer's
// FLOPs and bytes (activations per sample, parameters once per pass) at an assumed fraction of the
// device's peaks, plus a fixed cost per kernel.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/trace.h"

namespace redsim {

struct SynthOptions {
  std::string model;                      // one of zoo_models()
  std::int64_t batch_size_per_rank = 1;   // images (CNNs) or sequences (transformers)
  double device_peak_tflops = 312;        // dense tensor-core peak for the compute dtype
  double efficiency = 0.45;               // fraction of peak compute and of memory bandwidth achieved
  std::string device_name;                // written as the trace's reference_device
  int seq_len = 0;                        // tokens per sequence; 0 for CNNs
  DType param_dtype = DType::fp32;        // dtype of parameters and of their gradients
  double device_memory_GBps = 2039;       // peak memory bandwidth, for memory-bound layers and Adam
  // Fixed cost of one kernel on the device, whatever its size: the part of a layer's time that
  // does not shrink with the batch (CUDA's documentation puts a launch at a few microseconds).
  double kernel_overhead_us = 4;
  // Attention as fused (flash / SDPA) kernels run it, keeping no seq x seq matrix for backward;
  // false: eager attention, which keeps the softmax probabilities (activation_bytes only).
  bool flash_attention = true;
};

// The models synthesize_trace knows, in a fixed order.
std::vector<std::string> zoo_models();

// Per-model defaults (batch, sequence length, dtype, A100 figures). Throws InputError for an
// unknown model.
SynthOptions default_synth_options(const std::string& model);

// Throws InputError for an unknown model or an option out of range.
ModelTrace synthesize_trace(const SynthOptions& options);

}  // namespace redsim
