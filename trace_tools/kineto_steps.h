// Reconstructing one training step from a Kineto trace's events (kineto_events.h): which kernels
// are forward, backward and optimizer, which NCCL allreduces are DDP's gradient buckets, and when
// each bucket's gradients were ready. For the importer (kineto_import.h).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "trace_tools/kineto_events.h"

namespace redsim::kineto {

struct BucketObs {
  const Kernel* kernel = nullptr;
  double launch = 0, ready = 0;  // us, absolute
};

struct StepResult {
  StepWindow window;
  double origin = 0;  // us: the first forward kernel, or the forward collective before it
  double fwd_start = 0, fwd_end = 0, bwd_start = 0, bwd_end = 0, opt_start = 0, opt_end = 0;
  double bwd_busy = 0;
  // Host ops in the step's window: gradients accumulated (AccumulateGrad) and copied back out of
  // DDP's buckets (copy_bucket_to_grad); 0 where the profile records none.
  std::int64_t grad_tensors = 0, copied_out = 0;
  double last_end = -std::numeric_limits<double>::infinity();  // the step's last kernel ended
  std::vector<BucketObs> buckets;
  std::vector<const Kernel*> others;  // NCCL kernels that are not gradient buckets
  std::vector<Phase> other_phases;
};

// What could not be recovered, each said once.
void warn_once(std::vector<std::string>& warnings, const std::string& w);

// 4. The steps to import: ProfilerStep#`step`, or every ProfilerStep, or (without any) the whole
// trace. InputError when `step` is not in the trace.
std::vector<StepWindow> choose_steps(const KinetoEvents& ev, const std::optional<std::int64_t>& step,
                                     std::vector<std::string>& warnings);

// 5. One step. InputError when it has no compute, no backward or no gradient allreduce.
StepResult reconstruct_step(const KinetoEvents& ev, const StepWindow& w, std::vector<std::string>& warnings);

// 6. The steps must reduce the same buckets before they are averaged (DDP rebuilds its buckets
// after its first iteration). InputError saying to pick one step otherwise.
void check_steps_agree(const KinetoEvents& ev, const std::vector<StepResult>& steps);

}  // namespace redsim::kineto
