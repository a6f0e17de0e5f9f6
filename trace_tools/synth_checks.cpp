#include "trace_tools/synth_checks.h"

#include <cmath>
#include <cstdio>
#include <string>

#include "core/error.h"
#include "core/trace_json.h"

namespace redsim {

namespace {

void check(bool ok, const std::string& what) {
  if (!ok) throw InputError("", "", what);
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// A device figure: positive and finite, bounded far above any device (1e6 TFLOP/s, 1e6 GB/s).
void check_device_figure(double v, const std::string& what) {
  check(v > 0 && v <= 1e6, what + " must be positive and at most 1e6, got " + num(v));
}

}  // namespace

void check_synth_options(const SynthOptions& o, int max_seq_len) {
  check(o.batch_size_per_rank > 0 && o.batch_size_per_rank <= kMaxBatchSizePerRank,
        "batch size (--batch-size) must be an integer from 1 to 2^24, got " + std::to_string(o.batch_size_per_rank));
  check_device_figure(o.device_peak_tflops, "device peak (--device-peak-tflops)");
  check_device_figure(o.device_memory_GBps, "device memory bandwidth (--device-mem-GBps)");
  check(o.efficiency > 0 && o.efficiency <= 1, "efficiency (--efficiency) must be in (0, 1], got " + num(o.efficiency));
  check(!o.device_name.empty(), "device name (--device-name) must not be empty");
  check(o.kernel_overhead_us >= 0 && o.kernel_overhead_us <= 1000,
        "kernel overhead (--kernel-overhead-us) must be in 0..1000 us, got " + num(o.kernel_overhead_us));
  check(o.param_dtype == DType::fp32 || o.param_dtype == DType::bf16 || o.param_dtype == DType::fp16,
        "parameter dtype (--param-dtype) must be fp32, bf16 or fp16, got " + std::string(dtype_name(o.param_dtype)));
  if (max_seq_len == 0) {
    check(o.seq_len == 0, o.model + " takes no sequence length (--seq-len); it is a CNN");
  } else {
    check(o.seq_len > 0 && o.seq_len <= max_seq_len,
          "sequence length (--seq-len) of " + o.model + " must be in 1.." + std::to_string(max_seq_len) +
              " (its position limit), got " + std::to_string(o.seq_len));
  }
}

void check_synthesised_trace(const ModelTrace& trace) {
  try {
    // The reader's own checks: what it would refuse, synth must not write.
    trace_from_json(trace_to_json(trace), "the synthesised trace");
  } catch (const InputError& e) {
    throw InputError("", "", std::string(e.what()) + " (the options ask for more than a trace file holds: a smaller "
                                                     "--batch-size or --seq-len, or a faster device)");
  }
}

}  // namespace redsim
