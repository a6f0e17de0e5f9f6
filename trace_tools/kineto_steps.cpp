#include "trace_tools/kineto_steps.h"

#include <algorithm>

#include "core/error.h"

namespace redsim::kineto {

void warn_once(std::vector<std::string>& warnings, const std::string& w) {
  if (std::find(warnings.begin(), warnings.end(), w) == warnings.end()) warnings.push_back(w);
}

std::vector<StepWindow> choose_steps(const KinetoEvents& ev, const std::optional<std::int64_t>& step,
                                     std::vector<std::string>& warnings) {
  std::vector<StepWindow> steps = ev.steps;
  std::sort(steps.begin(), steps.end(), [](const StepWindow& a, const StepWindow& b) { return a.ts < b.ts; });
  if (steps.empty()) {
    if (step)
      throw InputError(ev.file, ev.events_path,
                       "no ProfilerStep#N spans, so --step " + std::to_string(*step) +
                           " cannot be found (the whole trace is one step without --step)");
    warnings.push_back("no ProfilerStep#N spans: the whole trace is taken as one step");
    return {StepWindow{}};
  }
  if (!step) return steps;
  auto it = std::find_if(steps.begin(), steps.end(), [&](const StepWindow& w) { return w.number == *step; });
  if (it == steps.end()) {
    std::vector<std::int64_t> have;
    for (const auto& w : steps) have.push_back(w.number);
    throw InputError(ev.file, ev.events_path,
                     "no ProfilerStep#" + std::to_string(*step) + "; the trace has steps " + join_numbers(have));
  }
  return {*it};
}

namespace {

using Kernels = std::vector<const Kernel*>;

// The kernels a step launched (or ran, without launches), and how much the host side tells.
struct StepKernels {
  std::string where;            // "ProfilerStep#N" or "the trace"
  Kernels all, compute, comm;   // compute and comm in time (comm: launch) order
  bool launch_mode = false;     // every kernel's launch is known: host context decides
  bool phases_known = false;    // ... and autograd ops tell forward from backward
};

StepKernels select_kernels(const KinetoEvents& ev, const StepWindow& w) {
  StepKernels s;
  s.where = w.number >= 0 ? "ProfilerStep#" + std::to_string(w.number) : "the trace";
  for (const auto& k : ev.kernels) {
    const double t = k.launch ? k.launch->ts : k.ts();
    if (t >= w.ts && t < w.end) s.all.push_back(&k);
  }
  std::size_t launched = 0;
  for (const auto* k : s.all) launched += k->launch ? 1 : 0;
  s.launch_mode = !s.all.empty() && launched == s.all.size();
  s.phases_known = s.launch_mode && ev.any_backward_op;
  for (const auto* k : s.all) (k->nccl ? s.comm : s.compute).push_back(k);
  if (s.compute.empty())
    throw InputError(ev.file, ev.events_path, "no compute kernels in " + s.where + ": cannot reconstruct its backward");
  std::sort(s.compute.begin(), s.compute.end(), [](const Kernel* a, const Kernel* b) { return a->ts() < b->ts(); });
  std::sort(s.comm.begin(), s.comm.end(), [&](const Kernel* a, const Kernel* b) {
    if (s.launch_mode && a->launch->ts != b->launch->ts) return a->launch->ts < b->launch->ts;
    return a->ts() < b->ts();
  });
  return s;
}

// With every kernel's launch known, host-side context decides phases and readiness; without it,
// only the GPU clock is left. Says which.
void warn_about_context(const KinetoEvents& ev, const StepKernels& s, std::vector<std::string>& warnings) {
  if (!s.launch_mode)
    warn_once(warnings,
              "some kernels have no launch record (a cuda_runtime event with the same correlation id): forward and "
              "backward cannot be told apart (all compute before the first bucket counts as its interval's "
              "backward, forward_s = 0) and each gradient-ready time is estimated as the end of the last compute "
              "kernel before the allreduce kernel began (an upper bound)");
  if (s.launch_mode && !ev.any_backward_op)
    warn_once(warnings,
              "no autograd::engine::evaluate_function CPU ops: forward and backward cannot be told apart (all "
              "compute before the first bucket counts as its interval's backward, forward_s = 0), and every "
              "floating-point allreduce is taken as a gradient bucket");
  if (s.launch_mode && !ev.any_optimizer_op)
    warn_once(warnings, "no Optimizer.step#... CPU ops: the compute after backward is taken as the optimizer");
}

// Gradient buckets: floating-point allreduces launched in backward; the rest go to r.others.
Kernels gradient_buckets(const KinetoEvents& ev, const StepKernels& s, StepResult& r) {
  Kernels grads;
  for (const auto* k : s.comm) {
    bool grad = k->collective == "allreduce" && !k->dtype.integer;
    if (grad && s.phases_known) grad = k->launch->in_backward;
    (grad ? grads : r.others).push_back(k);
  }
  if (grads.empty())
    throw InputError(ev.file, ev.events_path,
                     "no NCCL allreduce launched during backward in " + s.where +
                         ": expected DDP's gradient buckets (is this a data-parallel job on NCCL?)");
  return grads;
}

double first_backward_launch(const StepKernels& s) {
  double first = std::numeric_limits<double>::infinity();
  if (s.phases_known)
    for (const auto* k : s.all)
      if (k->launch->in_backward) first = std::min(first, k->launch->ts);
  return first;
}

// A compute kernel's phase: from its launch context, or, without one, from the GPU clock (all
// before the last bucket's end is backward).
Phase compute_phase(const KinetoEvents& ev, const StepKernels& s, const Kernel& k, double first_bwd_launch,
                    double last_bwd_launch, double last_grad_end) {
  if (s.phases_known) {
    if (k.launch->in_optimizer) return Phase::optimizer;
    if (k.launch->in_backward) return Phase::backward;
    if (k.launch->ts < first_bwd_launch) return Phase::forward;
    if (!ev.any_optimizer_op && k.launch->ts > last_bwd_launch) return Phase::optimizer;
    return Phase::other;
  }
  if (s.launch_mode && ev.any_optimizer_op) return k.launch->in_optimizer ? Phase::optimizer : Phase::backward;
  return k.ts() >= last_grad_end ? Phase::optimizer : Phase::backward;
}

struct Phases {
  Kernels fwd, bwd, opt;
};

Phases compute_phases(const KinetoEvents& ev, const StepKernels& s, const Kernels& grads, double first_bwd_launch) {
  double last_bwd_launch = -std::numeric_limits<double>::infinity();
  if (s.phases_known)
    for (const auto* k : s.compute)
      if (k->launch->in_backward) last_bwd_launch = std::max(last_bwd_launch, k->launch->ts);
  double last_grad_end = 0;
  for (const auto* k : grads) last_grad_end = std::max(last_grad_end, k->end());
  Phases p;
  for (const auto* k : s.compute) {
    const Phase ph = compute_phase(ev, s, *k, first_bwd_launch, last_bwd_launch, last_grad_end);
    if (ph == Phase::forward) p.fwd.push_back(k);
    if (ph == Phase::backward) p.bwd.push_back(k);
    if (ph == Phase::optimizer) p.opt.push_back(k);
  }
  return p;
}

void other_collective_phases(const StepKernels& s, const Kernels& grads, double first_bwd_launch, StepResult& r) {
  for (const auto* k : r.others) {
    Phase p = Phase::unknown;
    if (s.phases_known) {
      p = k->launch->in_optimizer            ? Phase::optimizer
          : k->launch->in_backward           ? Phase::backward
          : k->launch->ts < first_bwd_launch ? Phase::forward
                                             : Phase::other;
    } else {
      p = k->ts() < grads.front()->ts() ? Phase::forward : Phase::other;
    }
    r.other_phases.push_back(p);
  }
}

std::pair<double, double> span_of(const Kernels& ks, double fallback) {
  if (ks.empty()) return {fallback, fallback};
  double a = std::numeric_limits<double>::infinity(), b = -a;
  for (const auto* k : ks) a = std::min(a, k->ts()), b = std::max(b, k->end());
  return {a, b};
}

// Where the optimizer's time begins. Its host work before its first kernel (the optimizer's
// loops over its parameters) is on the step's path while the GPU has nothing else to run: from the
// later of the host entering Optimizer.step and the end of every kernel before the first. In the
// bundled A100 profile that is 5 ms of a 216 ms step (tests/data/profiles/README.md).
double optimizer_start(const StepKernels& s, const Kernels& opt, double first_kernel) {
  double entered = std::numeric_limits<double>::infinity();
  for (const auto* k : opt)
    if (k->launch && k->launch->in_optimizer) entered = std::min(entered, k->launch->optimizer_entered);
  if (!(entered < first_kernel)) return first_kernel;
  double busy_until = -std::numeric_limits<double>::infinity();
  for (const auto* k : s.all)
    if (k->ts() < first_kernel) busy_until = std::max(busy_until, k->end());
  return std::min(first_kernel, std::max(entered, busy_until));
}

// Phase spans, the backward's busy time, and the step's origin: its first forward kernel, or
// DDP's buffer broadcast before it.
void phase_spans(const StepKernels& s, const Phases& p, const Kernels& grads, StepResult& r) {
  std::tie(r.bwd_start, r.bwd_end) = span_of(p.bwd, 0);
  std::tie(r.fwd_start, r.fwd_end) = span_of(p.fwd, r.bwd_start);
  double last_comm_end = 0;
  for (const auto* k : grads) last_comm_end = std::max(last_comm_end, k->end());
  std::tie(r.opt_start, r.opt_end) = span_of(p.opt, std::max(r.bwd_end, last_comm_end));
  if (!p.opt.empty()) r.opt_start = optimizer_start(s, p.opt, r.opt_start);
  for (const auto* k : p.bwd) r.bwd_busy += k->span->dur;
  r.origin = std::min(r.fwd_start, r.bwd_start);
  for (std::size_t i = 0; i < r.others.size(); ++i)
    if (r.other_phases[i] == Phase::forward) r.origin = std::min(r.origin, r.others[i]->ts());
}

// Gradient-ready times: the compute stream has run every backward kernel launched before the
// allreduce (DDP's NCCL stream waits for exactly that), or without launches, every backward
// kernel that ended before the allreduce kernel began.
void ready_times(const StepKernels& s, const Kernels& grads, const Kernels& bwd, StepResult& r) {
  double ready = r.bwd_start;
  for (const auto* g : grads) {
    BucketObs b;
    b.kernel = g;
    for (const auto* k : bwd) {
      const bool before = s.launch_mode ? k->launch->ts < g->launch->ts : k->end() <= g->ts();
      if (before) ready = std::max(ready, k->end());
    }
    b.ready = ready;
    b.launch = g->launch ? g->launch->ts : g->ts();
    r.buckets.push_back(b);
  }
}

}  // namespace

StepResult reconstruct_step(const KinetoEvents& ev, const StepWindow& w, std::vector<std::string>& warnings) {
  StepResult r;
  r.window = w;
  const StepKernels s = select_kernels(ev, w);
  for (const auto* k : s.all) r.last_end = std::max(r.last_end, k->end());
  warn_about_context(ev, s, warnings);
  const Kernels grads = gradient_buckets(ev, s, r);
  const double first_bwd_launch = first_backward_launch(s);
  const Phases phases = compute_phases(ev, s, grads, first_bwd_launch);
  other_collective_phases(s, grads, first_bwd_launch, r);
  if (phases.bwd.empty()) throw InputError(ev.file, ev.events_path, "no backward compute kernels in " + s.where);
  phase_spans(s, phases, grads, r);
  ready_times(s, grads, phases.bwd, r);
  const auto in_window = [&](const std::vector<double>& ts) {
    return static_cast<std::int64_t>(std::count_if(ts.begin(), ts.end(), [&](double t) { return t >= w.ts && t <= w.end; }));
  };
  r.grad_tensors = in_window(ev.accumulate_grad_ts);
  r.copied_out = in_window(ev.copy_out_ts);
  return r;
}

void check_steps_agree(const KinetoEvents& ev, const std::vector<StepResult>& steps) {
  const auto& first = steps.front();
  auto name = [](const StepResult& s) {
    return s.window.number >= 0 ? "ProfilerStep#" + std::to_string(s.window.number) : std::string("the trace");
  };
  for (const auto& r : steps) {
    bool same = r.buckets.size() == first.buckets.size();
    for (std::size_t b = 0; same && b < r.buckets.size(); ++b) {
      const Kernel* x = r.buckets[b].kernel;
      const Kernel* y = first.buckets[b].kernel;
      same = x->numel == y->numel && x->dtype.dtype == y->dtype.dtype;
    }
    if (!same)
      throw InputError(ev.file, ev.events_path,
                       name(r) + " reduces " + std::to_string(r.buckets.size()) + " gradient buckets and " +
                           name(first) + " " + std::to_string(first.buckets.size()) +
                           (r.buckets.size() == first.buckets.size() ? " of other sizes" : "") +
                           " (DDP rebuilds its buckets after its first iteration): pick one step with --step N");
  }
}

}  // namespace redsim::kineto
