// Model traces synthesised from published model shapes and a device's peak throughput, for the
// bundled traces/*.json (see traces/README.md). No profiling: times are FLOP and byte counts
// divided by an assumed fraction of the device's peak.
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
};

// The models synthesize_trace knows, in a fixed order.
std::vector<std::string> zoo_models();

// Per-model defaults (batch, sequence length, dtype, A100 figures). Throws InputError for an
// unknown model.
SynthOptions default_synth_options(const std::string& model);

// Throws InputError for an unknown model or an option out of range.
ModelTrace synthesize_trace(const SynthOptions& options);

}  // namespace redsim
