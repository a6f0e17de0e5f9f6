// Importing a PyTorch profiler (Kineto, Chrome trace format) file of one data-parallel rank:
// the DDP buckets it reduced (NCCL allreduce kernels and their message sizes), when each bucket's
// gradients were ready, how long each allreduce took, and the forward, backward and optimizer
// compute around them. The result is a redsim model trace with one synthetic parameter per
// bucket and one layer per bucket interval (see traces/README.md, "Importing a profiler trace"),
// plus the measured times for a measured Timeline.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/knobs.h"
#include "core/plan.h"
#include "core/timeline.h"
#include "core/trace.h"

namespace redsim {

struct KinetoImportOptions {
  std::optional<std::int64_t> step;      // ProfilerStep#N to import; unset: the mean over every step
  std::string model;                     // the trace's model name; "" = derived from the file name
  std::int64_t batch_size_per_rank = 1;  // not in a profiler trace: the caller states it
  // The trace's compute as it would run alone: each compute kernel that ran beside an NCCL kernel
  // for a fraction phi of its time d gave up d phi (1 - 1/s) to it (the simulator's rule,
  // sim/interference.h), taken out of the layer it ended in. 1 = as measured. Fitted by
  // calibrate --from-profile (interference.compute_slowdown).
  double compute_slowdown = 1.0;
  // Instead: the SM-share rule (core/cluster.h), each NCCL kernel beside a compute kernel holding
  // its grid's blocks of the device's sm_count SMs (0: the profile's deviceProperties numSms).
  bool compute_slowdown_sm_share = false;
  int sm_count = 0;
};

// What the compute slowdown took out of the imported layers, seconds per step (means over the
// imported steps); all 0 without one.
struct InterferenceTakenOut {
  double slowdown = 1.0;
  bool sm_share = false;  // the SM-share rule instead of a slowdown, on sm_count SMs
  int sm_count = 0;
  double forward_s = 0, backward_tail_s = 0, optimizer_s = 0;
  std::vector<double> interval_s;  // per bucket interval, as buckets
  double total_s() const;
  bool any() const { return sm_share || slowdown > 1; }  // something was taken out of the compute
};

// One gradient bucket: one NCCL allreduce kernel launched during backward.
struct ImportedBucket {
  std::string kernel;  // NCCL kernel name (of the first imported step)
  DType dtype = DType::fp32;
  bool dtype_known = false;  // from the message's dtype or the kernel's name
  std::int64_t numel = 0;    // elements in the message; 0 when unknown
  std::string size_from;     // where numel came from ("" when unknown)
  // Seconds from the step's origin (its first forward kernel or forward collective began); means
  // over the imported steps.
  double launch_s = 0;  // the host launched the allreduce (DDP marked the bucket ready)
  double ready_s = 0;   // the compute stream finished every kernel launched before it
  double start_s = 0;   // the NCCL kernel ran from start_s to end_s
  double end_s = 0;
  int channels = 0;  // the NCCL kernel's grid, one block per channel (the first step's); 0 unknown
};

// A collective other than a gradient allreduce (a buffer broadcast, a forward-time allreduce).
struct ImportedCollective {
  std::string kernel;
  std::string collective;  // "broadcast", "allreduce", "allgather", ... ("" unknown)
  std::string phase;       // "forward", "backward", "optimizer", "other" (after backward) or "unknown"
  std::int64_t numel = 0;  // 0 when unknown
  DType dtype = DType::fp32;
  bool dtype_known = false;
  double start_s = 0, end_s = 0;  // the NCCL kernel, from the step's origin
};

struct KinetoImport {
  ModelTrace trace;                                   // checked: passes trace_from_json(trace_to_json(trace))
  std::vector<ImportedBucket> buckets;                // in launch order; trace.params[K-1-k] is bucket k
  std::vector<ImportedCollective> other_collectives;  // of one step
  std::vector<std::int64_t> steps;                    // ProfilerStep numbers imported (empty: the trace had none)
  std::vector<double> step_times_s;  // per imported step: from its origin to the end of its last kernel
  std::string step_text;                              // "step 5", "mean of steps 3-7", "the whole trace"
  // Seconds from the step's origin; means over the imported steps.
  double forward_start_s = 0, forward_end_s = 0;
  double backward_start_s = 0, backward_end_s = 0;
  double optimizer_start_s = 0, optimizer_end_s = 0;
  double backward_busy_s = 0;         // sum of backward kernel durations (the stream can also idle)
  // What forward left allocated on the GPU when backward began (the saved activations), from the
  // profiler's memory events (profile_memory=True); nullopt without them. Mean over the steps.
  std::optional<std::int64_t> activation_bytes;
  bool sizes_known = false;           // every bucket's message size was found
  // Gradient tensors per step (autograd's AccumulateGrad ops; the first imported step's), spread
  // over the synthetic parameters in proportion to their bytes (TraceParam::tensors); 0: the
  // profile records no such ops, and each synthetic parameter stands for one tensor.
  std::int64_t grad_tensors = 0;
  int rank = 0;                       // distributedInfo.rank, 0 if absent
  int world_size = 0;                 // Group size / distributedInfo.world_size; 0 if unknown
  std::string device;                 // the GPU the kernels ran on
  std::vector<std::string> warnings;  // what could not be recovered, in words
  InterferenceTakenOut taken_out;     // with KinetoImportOptions::compute_slowdown > 1 or the SM-share rule
  // Bucket k's backward interval starts where the previous bucket was ready (bucket 0: where
  // backward began) and ends at its own ready time.
  double interval_start_s(std::size_t k) const { return k == 0 ? backward_start_s : buckets[k - 1].ready_s; }
  // With `trace import --params-from` (resolved_params.h): the model trace the parameters came
  // from, the caps under which DDP forms the profile's buckets from them, and each resolved
  // backward layer's measured span (seconds from the step's origin). Empty for synthetic ones.
  struct Span {
    std::string layer;
    double start_s = 0, end_s = 0;
  };
  std::string params_from;
  std::int64_t bucket_cap_bytes = 0, first_bucket_cap_bytes = 0;
  std::vector<Span> resolved_spans;
};

// Reads a text file, inflating it first if it is gzip-compressed (by its magic bytes, so the
// name does not matter). Throws InputError naming the file when it cannot be read.
// At most max_bytes of text (after inflating), else InputError: a gzip bomb is refused.
inline constexpr std::size_t kMaxKinetoTextBytes = std::size_t{256} << 20;
std::string read_text_file_maybe_gzip(const std::string& file, std::size_t max_bytes = kMaxKinetoTextBytes);

// Throws InputError naming the file and JSON path for a malformed trace, and for one that
// holds no NCCL allreduce kernel or no such step.
KinetoImport import_kineto(const nlohmann::json& root, const std::string& file, const KinetoImportOptions& options);
KinetoImport import_kineto_file(const std::string& file, const KinetoImportOptions& options);

// Knobs under which the bucketed strategy forms exactly the imported buckets from the imported
// trace: execution order, and both caps at the smallest bucket's bytes (so each synthetic
// parameter closes its own bucket), or the profiled job's caps for resolved parameters. Reduce
// op avg, as DDP.
Knobs imported_bucket_knobs(const KinetoImport& imp);

// The measured Timeline (one rank: the profiled one) of a Plan made from imp.trace by the
// bucketed strategy with imported_bucket_knobs(): ops are matched by name (fwd:/bwd:<layer>,
// allreduce:bucketK, optimizer; a broadcast:buffers op takes the measured forward broadcasts of
// its dtype whose bytes add up to its own). Throws std::invalid_argument for an op it cannot match.
Timeline imported_timeline(const Plan& plan, const KinetoImport& imp);

}  // namespace redsim
