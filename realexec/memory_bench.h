// The bandwidth of the DDP comm hooks' elementwise work on this machine's ranks, for redsim
// calibrate (the cluster's device memory_GBps, which strategies/comm_hooks.cpp charges the hooks'
// kernels at on a CPU rank): every rank at once does what fp16_compress_hook does to one DDP
// bucket (cast to a freshly allocated fp16 buffer, divided by the world size, then copied back),
// counted as redsim counts it: 4 + 2 bytes each way per element.
#pragma once
#include <cstdint>

#include "realexec/backend.h"

namespace redsim::realexec {

struct HookCastMeasurement {
  std::int64_t elements = 0;  // per cast: one 25 MiB fp32 bucket, DDP's default
  double time_s = 0;          // rank 0's median over the repetitions, every rank at once
  double bandwidth_GBps() const { return time_s > 0 ? 12.0 * static_cast<double>(elements) / time_s / 1e9 : 0; }
};

// Collective over every rank (barriers); rank 0's own time is returned (every rank measures alike).
HookCastMeasurement measure_hook_casts(Backend& backend, std::int64_t elements, int repetitions);

// The framework's plain fp32 adds on this machine's ranks (the cluster's device copy_GBps: autograd's
// .grad += g in an accumulation's later micro-batches, and the copies of LocalSGD's averaging), which
// a CPU runs several times faster than the casts above: every rank at once adds one buffer into
// another, counted as 12 bytes per element (two read, one written).
struct CopyMeasurement {
  std::int64_t elements = 0;
  double time_s = 0;  // rank 0's median, every rank at once
  double bandwidth_GBps() const { return time_s > 0 ? 12.0 * static_cast<double>(elements) / time_s / 1e9 : 0; }
};
CopyMeasurement measure_fp32_add(Backend& backend, std::int64_t elements, int repetitions);

// A copy into memory fresh from the OS (the cluster's device fresh_copy_GBps): what torch.cat of
// more parameters than glibc's 32 MiB mmap ceiling costs on a CPU rank, where every page of the
// new tensor faults on first touch and the old one is unmapped when freed. Every rank at once maps
// a buffer, copies one in and unmaps it, counted as 8 bytes per element (one read, one written).
struct FreshCopyMeasurement {
  std::int64_t elements = 0;
  double time_s = 0;  // rank 0's median, every rank at once
  double bandwidth_GBps() const { return time_s > 0 ? 8.0 * static_cast<double>(elements) / time_s / 1e9 : 0; }
};
FreshCopyMeasurement measure_fresh_copy(Backend& backend, std::int64_t elements, int repetitions);

// How fast Gloo reduces fp16 on this machine's ranks: gloo::sum<gloo::float16>, the function
// ProcessGroupGloo's allreduce applies to each incoming chunk of a half tensor, element by element
// in software (fp32 runs vectorised ~18x faster, and the fitted fp32 sweeps already include it).
struct ReduceMeasurement {
  std::int64_t elements = 0;
  double time_s = 0;  // rank 0's median, every rank at once
  double incoming_GBps() const { return time_s > 0 ? 2.0 * static_cast<double>(elements) / time_s / 1e9 : 0; }
};
ReduceMeasurement measure_fp16_reduce(Backend& backend, std::int64_t elements, int repetitions);

}  // namespace redsim::realexec
