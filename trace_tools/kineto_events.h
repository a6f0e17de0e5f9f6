// The events of a PyTorch profiler (Kineto) trace the importer works from (kineto_import.h):
// complete events read strictly, the ProfilerStep#N windows, every GPU kernel with the host context
// it was launched from, and the message each NCCL kernel carried.
#pragma once
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/json_in.h"
#include "trace_tools/kineto_names.h"

namespace redsim::kineto {

constexpr double kSPerUs = 1e-6;

// A complete ("X") event.
struct Span {
  std::size_t event = 0;  // index in the trace's events
  std::string name;
  std::string cat;  // lower case
  std::string pid, tid;
  double ts = 0, dur = 0;  // microseconds
  const nlohmann::json* args = nullptr;
  double end() const { return ts + dur; }
};

// What the host was doing when it launched a kernel: from the CPU ops enclosing the launch.
struct LaunchContext {
  double ts = 0;                  // the launch (cudaLaunchKernel) began
  bool in_backward = false;       // inside autograd::engine::evaluate_function
  bool in_optimizer = false;      // inside Optimizer.step#...
  double optimizer_entered = 0;   // when in_optimizer: the host entered that Optimizer.step (us)
  const Span* size_op = nullptr;  // innermost enclosing op that carries a message size
};

enum class Phase { unknown, forward, backward, optimizer, other };
std::string phase_name(Phase p);

struct Kernel {
  const Span* span = nullptr;
  bool nccl = false;
  std::string collective;  // normalised, for NCCL kernels
  std::optional<LaunchContext> launch;
  // NCCL message
  std::optional<std::int64_t> numel;
  DTypeGuess dtype;
  std::string size_from;
  int group_size = 0;
  double ts() const { return span->ts; }
  double end() const { return span->end(); }
};

// A "[memory]" instant event (the profiler's profile_memory=True): one allocation (bytes > 0) or
// free, and what the device's allocator held after it when the trace says.
struct MemoryEvent {
  double ts = 0;            // microseconds, on the host clock
  int device_type = 0;      // c10::DeviceType: 0 CPU, 1 CUDA
  std::int64_t device_id = -1;
  std::int64_t bytes = 0;
  std::optional<std::int64_t> total_allocated;  // "Total Allocated"
};

// A ProfilerStep#N span; the default is the whole trace.
struct StepWindow {
  std::int64_t number = -1;  // -1: the whole trace
  double ts = -std::numeric_limits<double>::infinity();
  double end = std::numeric_limits<double>::infinity();
};

struct KinetoEvents {
  std::string file;
  std::string events_path;  // "$.traceEvents", or "$" for a bare array of events
  std::vector<Span> spans;  // every complete event but the ProfilerStep spans
  std::vector<StepWindow> steps;  // in trace order
  std::vector<Kernel> kernels;    // in trace order; they point into spans
  std::vector<MemoryEvent> memory;  // in trace order
  bool any_backward_op = false;   // autograd::engine::evaluate_function CPU ops exist
  bool any_optimizer_op = false;  // Optimizer.step#... CPU ops exist
  // Host ops that count DDP's gradient tensors, by start time (us): autograd's AccumulateGrad, one
  // per parameter whose gradient is accumulated, and the reducer's copy_bucket_to_grad, one per
  // tensor copied back out of its bucket (none with gradient_as_bucket_view=True).
  std::vector<double> accumulate_grad_ts, copy_out_ts;

  KinetoEvents() = default;
  KinetoEvents(const KinetoEvents&) = delete;  // kernels point into spans
  KinetoEvents& operator=(const KinetoEvents&) = delete;

  // An event's args, with its JSON path for errors.
  JsonIn args_of(const Span& s) const;
};

// Reads the events of `root` (an object with traceEvents, or an array of events) into `out`.
// Throws InputError naming the file and JSON path for a malformed event, and for a trace without
// NCCL kernels.
void read_kineto_events(const nlohmann::json& root, const std::string& file, KinetoEvents& out);

// A JSON id (pid, tid, device) as text: Kineto writes integers or strings.
std::string id_text(const JsonIn& v);

}  // namespace redsim::kineto
