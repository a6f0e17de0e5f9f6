#include "trace_tools/kineto_events.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <utility>

#include "core/error.h"

namespace redsim::kineto {

using nlohmann::json;

std::string phase_name(Phase p) {
  switch (p) {
    case Phase::forward:
      return "forward";
    case Phase::backward:
      return "backward";
    case Phase::optimizer:
      return "optimizer";
    case Phase::other:
      return "other";
    default:
      return "unknown";
  }
}

std::string id_text(const JsonIn& v) {
  const auto& raw = v.raw();
  if (raw.is_number_integer()) return std::to_string(raw.get<std::int64_t>());
  if (raw.is_number_unsigned()) return std::to_string(raw.get<std::uint64_t>());
  if (raw.is_string()) return raw.get<std::string>();
  v.fail("an integer or a string");
}

JsonIn KinetoEvents::args_of(const Span& s) const {
  return JsonIn(*s.args, events_path + "[" + std::to_string(s.event) + "].args", file);
}

namespace {

using Thread = std::pair<std::string, std::string>;  // pid, tid

JsonIn events_node(const json& root, const std::string& file) {
  JsonIn r(root, "$", file);
  if (root.is_array()) return r;
  if (!root.is_object()) r.fail("a Chrome trace: an object with \"traceEvents\", or an array of events");
  return r.at("traceEvents");
}

Span read_span(const JsonIn& ev, std::size_t i) {
  Span s;
  s.event = i;
  s.name = ev.at("name").string();
  s.cat = lower(ev.string_or("cat", ""));
  s.ts = ev.at("ts").number();
  s.dur = ev.at("dur").nonnegative_number();
  if (auto p = ev.find("pid")) s.pid = id_text(*p);
  if (auto t = ev.find("tid")) s.tid = id_text(*t);
  if (auto a = ev.find("args")) {
    a->expect_object();
    s.args = &a->raw();
  }
  return s;
}

bool is_profiler_step(const Span& s) { return starts_with(s.name, "ProfilerStep#") && s.cat != "gpu_user_annotation"; }

StepWindow read_step_window(const JsonIn& ev, const Span& s) {
  const std::string digits = s.name.substr(13);
  const bool ok = !digits.empty() && digits.size() < 18 &&
                  std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!ok) ev.at("name").fail("\"ProfilerStep#N\" with N a step number");
  return StepWindow{std::stoll(digits), s.ts, s.end()};
}

MemoryEvent read_memory_event(const JsonIn& ev) {
  MemoryEvent m;
  m.ts = ev.at("ts").number();
  const JsonIn args = ev.at("args");
  args.expect_object();
  m.bytes = args.at("Bytes").integer();
  m.device_type = static_cast<int>(args.at("Device Type").integer());
  if (auto id = args.find("Device Id")) m.device_id = id->integer();
  if (auto total = args.find("Total Allocated")) m.total_allocated = total->nonnegative_integer();
  return m;
}

// 1. Every complete event, strictly; the profiler steps apart; the memory events.
void read_spans(const JsonIn& events, KinetoEvents& out) {
  const auto items = events.items();
  out.spans.reserve(items.size());
  std::map<std::int64_t, std::size_t> step_seen;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const auto& ev = items[i];
    ev.expect_object();
    const std::string ph = ev.at("ph").string();
    if (ph == "i" && ev.string_or("name", "") == "[memory]") out.memory.push_back(read_memory_event(ev));
    if (ph != "X") continue;
    Span s = read_span(ev, i);
    if (is_profiler_step(s)) {
      const StepWindow w = read_step_window(ev, s);
      if (!step_seen.emplace(w.number, i).second) ev.at("name").fail("each profiler step once");
      out.steps.push_back(w);
      continue;
    }
    out.spans.push_back(std::move(s));
  }
}

struct HostEvents {
  std::unordered_map<std::int64_t, const Span*> launch_of;  // correlation -> runtime event
  std::map<Thread, std::vector<const Span*>> cpu_ops_by_thread;
};

// Kernels, kernel launches (runtime events) and CPU ops, by kind.
HostEvents index_spans(KinetoEvents& out) {
  HostEvents host;
  for (const auto& s : out.spans) {
    if (s.cat == "kernel") {
      Kernel k;
      k.span = &s;
      k.nccl = starts_with(lower(s.name), "nccl");
      out.kernels.push_back(std::move(k));
    } else if (s.cat == "cuda_runtime" || s.cat == "cuda_driver" || s.cat == "runtime" || s.cat == "hip_runtime") {
      if (s.args == nullptr) continue;
      if (auto c = out.args_of(s).find("correlation")) host.launch_of.emplace(c->integer(), &s);
    } else if (s.cat == "cpu_op" || s.cat == "user_annotation" || s.cat == "operator" || s.cat == "python_function") {
      host.cpu_ops_by_thread[{s.pid, s.tid}].push_back(&s);
      out.any_backward_op = out.any_backward_op || starts_with(s.name, "autograd::engine::evaluate_function");
      out.any_optimizer_op = out.any_optimizer_op || starts_with(s.name, "Optimizer.step#");
      if (starts_with(s.name, "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad"))
        out.accumulate_grad_ts.push_back(s.ts);
      if (s.name == "torch.distributed.ddp.reducer::copy_bucket_to_grad") out.copy_out_ts.push_back(s.ts);
    }
  }
  return host;
}

// The launch at `rt` inside the open CPU ops `stack` (outermost first).
LaunchContext context_at(const std::vector<const Span*>& stack, const Span& rt) {
  LaunchContext ctx;
  ctx.ts = rt.ts;
  for (auto it = stack.rbegin(); it != stack.rend(); ++it) {
    const Span* op = *it;
    if (op->ts > rt.ts || op->end() < rt.ts) continue;
    if (starts_with(op->name, "autograd::engine::evaluate_function")) ctx.in_backward = true;
    if (starts_with(op->name, "Optimizer.step#")) {
      ctx.in_optimizer = true;
      ctx.optimizer_entered = op->ts;
    }
    if (ctx.size_op == nullptr && op->args != nullptr && is_comm_op_name(op->name)) {
      const auto& a = *op->args;
      if (a.contains("In msg nelems") || a.contains("Out msg nelems") || a.contains("Input Dims")) ctx.size_op = op;
    }
  }
  return ctx;
}

// One thread's launches, in time order, against its call stack of CPU ops (a sweep).
void sweep_thread(std::vector<const Span*>& ops, std::vector<std::pair<const Span*, Kernel*>>& launches) {
  std::sort(ops.begin(), ops.end(),
            [](const Span* a, const Span* b) { return a->ts != b->ts ? a->ts < b->ts : a->dur > b->dur; });
  std::sort(launches.begin(), launches.end(), [](const auto& a, const auto& b) { return a.first->ts < b.first->ts; });
  std::vector<const Span*> stack;
  std::size_t next = 0;
  for (auto& [rt, kernel] : launches) {
    while (next < ops.size() && ops[next]->ts <= rt->ts) {
      while (!stack.empty() && stack.back()->end() < ops[next]->ts) stack.pop_back();
      stack.push_back(ops[next++]);
    }
    while (!stack.empty() && stack.back()->end() < rt->ts) stack.pop_back();
    kernel->launch = context_at(stack, *rt);
  }
}

// 2. Each kernel's launch (by correlation id) and the host ops around it.
void attach_launches(KinetoEvents& out, HostEvents& host) {
  std::map<Thread, std::vector<std::pair<const Span*, Kernel*>>> launches_by_thread;
  for (auto& k : out.kernels) {
    if (k.span->args == nullptr) continue;
    auto c = out.args_of(*k.span).find("correlation");
    if (!c) continue;
    auto it = host.launch_of.find(c->integer());
    if (it == host.launch_of.end()) continue;
    launches_by_thread[{it->second->pid, it->second->tid}].emplace_back(it->second, &k);
  }
  for (auto& [thread, launches] : launches_by_thread) sweep_thread(host.cpu_ops_by_thread[thread], launches);
}

std::optional<std::int64_t> optional_nonnegative_integer(const JsonIn& args, std::string_view key) {
  if (auto v = args.find(key)) return v->nonnegative_integer();
  return std::nullopt;
}

// Message size from args ("In msg nelems", "dtype", "Group size"), as Kineto records them on
// NCCL kernels (PyTorch >= 2.1) and on record_param_comms / nccl:* CPU ops.
bool read_comm_args(const JsonIn& args, Kernel& k, const std::string& from) {
  auto in = optional_nonnegative_integer(args, "In msg nelems");
  auto out = optional_nonnegative_integer(args, "Out msg nelems");
  if (auto g = args.find("Group size")) {
    // Bounded so that it fits an int; a cluster this large is refused later anyway.
    const auto ranks = g->positive_integer();
    if (ranks > (std::int64_t{1} << 30)) g->fail("a group size of at most 2^30 ranks");
    k.group_size = static_cast<int>(ranks);
  }
  if (auto d = args.find("dtype")) {
    auto guess = dtype_from_text(d->string());
    if (guess.known()) k.dtype = guess;
  }
  if (auto c = args.find("Collective name")) {
    auto coll = normalise_collective(c->string());
    if (!coll.empty()) k.collective = coll;
  }
  if (!in && !out) return false;
  std::int64_t n = std::max(in.value_or(0), out.value_or(0));
  // Allreduce and broadcast carry the same elements in and out; for the others the larger side
  // is the full buffer (as nccl-tests sizes them).
  if (k.collective == "allreduce" || k.collective == "broadcast" || k.collective == "reduce") n = in.value_or(n);
  if (n <= 0) return false;
  k.numel = n;
  k.size_from = from;
  return true;
}

// Elements of one shape [[n, m, ...]]; nullopt when it is not a list of integers.
std::optional<std::int64_t> shape_elements(const JsonIn& shape) {
  if (!shape.raw().is_array()) return std::nullopt;
  std::int64_t n = 1;
  for (const auto& d : shape.items()) {
    if (!d.raw().is_number_integer()) return std::nullopt;
    n *= d.nonnegative_integer();
  }
  return n;
}

// record_shapes traces (PyTorch < 2.1): "Input Dims" [[n]] (or [[[n]], ...] for a tensor list)
// and "Input type" ["float"] of the c10d/nccl CPU op.
bool read_input_dims(const JsonIn& args, Kernel& k, const std::string& from) {
  auto dims = args.find("Input Dims");
  if (!dims) return false;
  auto items = dims->items();
  if (items.empty()) return false;
  std::int64_t total = 0;
  const auto& first = items[0].raw();
  if (first.is_array() && !first.empty() && first[0].is_array()) {  // a tensor list
    for (const auto& t : items[0].items()) {
      auto n = shape_elements(t);
      if (!n) return false;
      total += *n;
    }
  } else {
    auto n = shape_elements(items[0]);
    if (!n) return false;
    total = *n;
  }
  if (total <= 0) return false;
  k.numel = total;
  k.size_from = from;
  if (auto types = args.find("Input type"); types && types->raw().is_array() && !types->raw().empty()) {
    const auto& t0 = types->raw()[0];
    if (t0.is_string()) {
      auto guess = dtype_from_text(t0.get<std::string>());
      if (guess.known()) k.dtype = guess;
    }
  }
  return true;
}

// 3. NCCL kernels: collective, dtype and message size (on the kernel, or on the op that launched it).
std::size_t read_nccl_messages(KinetoEvents& out) {
  std::size_t nccl_count = 0;
  for (auto& k : out.kernels) {
    if (!k.nccl) continue;
    ++nccl_count;
    k.collective = normalise_collective(kernel_base_name(k.span->name).substr(4));
    k.dtype = dtype_from_kernel_name(k.span->name);
    bool sized = false;
    if (k.span->args != nullptr) sized = read_comm_args(out.args_of(*k.span), k, "the kernel's args");
    if (!sized && k.launch && k.launch->size_op != nullptr) {
      const Span* op = k.launch->size_op;
      auto a = out.args_of(*op);
      sized = read_comm_args(a, k, "the args of " + op->name) || read_input_dims(a, k, "the Input Dims of " + op->name);
    }
  }
  return nccl_count;
}

}  // namespace

void read_kineto_events(const json& root, const std::string& file, KinetoEvents& out) {
  out.file = file;
  const JsonIn events = events_node(root, file);
  out.events_path = events.path();
  read_spans(events, out);
  HostEvents host = index_spans(out);
  attach_launches(out, host);
  if (read_nccl_messages(out) == 0)
    throw InputError(file, events.path(),
                     "no NCCL kernels (names starting with \"nccl\", cat \"kernel\"): expected a PyTorch profiler "
                     "trace of a data-parallel job on NCCL, recorded with ProfilerActivity.CUDA");
}

}  // namespace redsim::kineto
