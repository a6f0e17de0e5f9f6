// The activations a profiled step held, from the profiler's memory events (profile_memory=True):
// what the device's allocator held more when backward began than at its least since the step
// began. Forward allocates what autograd saves and frees its temporaries, so the difference is
// the saved tensors (and the loss), on the device as the job ran them (its dtypes, its attention
// kernels, its checkpointing).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trace_tools/kineto_events.h"
#include "trace_tools/kineto_steps.h"

namespace redsim::kineto {

// The mean over the steps of the bytes forward left allocated on the GPU `device_id` (the device
// of the compute kernels, as where_it_ran names it), rounded to a byte; nullopt when the trace has
// no memory events of that device in a step before its first autograd op, or no autograd ops.
std::optional<std::int64_t> forward_allocated_bytes(const KinetoEvents& ev, const std::vector<StepResult>& steps,
                                                    const std::string& device_id);

}  // namespace redsim::kineto
