#include "trace_tools/kineto_import.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include "core/error.h"
#include "core/json_in.h"
#include "core/trace_json.h"

namespace redsim {
namespace {

using nlohmann::json;

constexpr double kSPerUs = 1e-6;

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)" -> the part before '('.
std::string_view kernel_base_name(std::string_view name) { return name.substr(0, name.find('(')); }

std::vector<std::string> split_tokens(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == '_' || c == ' ' || c == ':' || c == '<' || c == '>' || c == ',') {
      if (!cur.empty()) out.push_back(lower(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(lower(cur));
  return out;
}

// Collective kinds, normalised: "allreduce", "broadcast", "reducescatter", "allgather", "reduce",
// "sendrecv", "send", "recv", "alltoall", or "" when unknown.
std::string normalise_collective(std::string_view name) {
  std::string n;
  for (char c : lower(name))
    if (c != '_' && c != ' ') n += c;
  for (const char* k : {"allreduce", "reducescatter", "allgather", "alltoall", "broadcast", "sendrecv"})
    if (n.find(k) != std::string::npos) return k;
  if (n.find("reduce") != std::string::npos) return "reduce";
  if (n.find("send") != std::string::npos) return "send";
  if (n.find("recv") != std::string::npos) return "recv";
  return "";
}

struct DTypeGuess {
  std::optional<DType> dtype;
  bool integer = false;  // an integer type (maybe one redsim has no name for)
  bool known() const { return dtype.has_value() || integer; }
};

// Element type of an NCCL kernel from its name: ..._float, _half, _bf16/__nv_bfloat16, _f32 ...
DTypeGuess dtype_from_kernel_name(std::string_view name) {
  DTypeGuess g;
  for (const auto& t : split_tokens(kernel_base_name(name))) {
    if (t == "float" || t == "f32")
      g.dtype = DType::fp32;
    else if (t == "half" || t == "f16")
      g.dtype = DType::fp16;
    else if (t == "bf16" || t == "bfloat16")
      g.dtype = DType::bf16;
    else if (t == "double" || t == "f64")
      g.dtype = DType::fp64;
    else if (t == "i64" || t == "int64" || t == "u64" || t == "uint64")
      g.dtype = DType::int64, g.integer = true;
    else if (t == "i32" || t == "int32" || t == "u32" || t == "uint32")
      g.dtype = DType::int32, g.integer = true;
    else if (t == "u8" || t == "uint8")
      g.dtype = DType::uint8, g.integer = true;
    else if (t == "i8" || t == "int8")
      g.integer = true;
    else
      continue;
    break;
  }
  return g;
}

// c10 ScalarType names as Kineto writes them ("Float", "BFloat16", ...), the "Input type" names
// of record_shapes ("float", "c10::Half", ...), and redsim's own.
DTypeGuess dtype_from_text(std::string_view text) {
  std::string t = lower(text);
  if (starts_with(t, "c10::")) t = t.substr(5);
  DTypeGuess g;
  if (t == "float" || t == "float32" || t == "fp32")
    g.dtype = DType::fp32;
  else if (t == "half" || t == "float16" || t == "fp16")
    g.dtype = DType::fp16;
  else if (t == "bfloat16" || t == "bf16")
    g.dtype = DType::bf16;
  else if (t == "double" || t == "float64" || t == "fp64")
    g.dtype = DType::fp64;
  else if (t == "long" || t == "int64" || t == "long int")
    g.dtype = DType::int64, g.integer = true;
  else if (t == "int" || t == "int32")
    g.dtype = DType::int32, g.integer = true;
  else if (t == "byte" || t == "uint8" || t == "unsigned char")
    g.dtype = DType::uint8, g.integer = true;
  else if (t == "bool")
    g.dtype = DType::bool8, g.integer = true;
  else if (t == "char" || t == "short" || t == "int8" || t == "int16")
    g.integer = true;
  return g;
}

// A complete ("X") event.
struct Span {
  std::size_t event = 0;
  std::string name;
  std::string cat;  // lower case
  std::string pid, tid;
  double ts = 0, dur = 0;  // microseconds
  const json* args = nullptr;
  double end() const { return ts + dur; }
};

// What the host was doing when it launched a kernel: from the CPU ops enclosing the launch.
struct LaunchContext {
  double ts = 0;                  // the launch (cudaLaunchKernel) began
  bool in_backward = false;       // inside autograd::engine::evaluate_function
  bool in_optimizer = false;      // inside Optimizer.step#...
  const Span* size_op = nullptr;  // innermost enclosing op that carries a message size
};

enum class Phase { unknown, forward, backward, optimizer, other };

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
  Phase phase = Phase::unknown;
  double ts() const { return span->ts; }
  double end() const { return span->end(); }
};

class Reader {
 public:
  Reader(const json& root, std::string file) : root_(root), file_(std::move(file)) {}

  JsonIn events_node() const {
    JsonIn r(root_, "$", file_);
    if (root_.is_array()) return r;
    if (!root_.is_object()) r.fail("a Chrome trace: an object with \"traceEvents\", or an array of events");
    return r.at("traceEvents");
  }
  const std::string& file() const { return file_; }

 private:
  const json& root_;
  std::string file_;
};

std::string id_text(const JsonIn& v) {
  const auto& raw = v.raw();
  if (raw.is_number_integer()) return std::to_string(raw.get<std::int64_t>());
  if (raw.is_number_unsigned()) return std::to_string(raw.get<std::uint64_t>());
  if (raw.is_string()) return raw.get<std::string>();
  v.fail("an integer or a string");
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
  if (auto g = args.find("Group size")) k.group_size = static_cast<int>(g->positive_integer());
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

// record_shapes traces (PyTorch < 2.1): "Input Dims" [[n]] (or [[[n]], ...] for a tensor list)
// and "Input type" ["float"] of the c10d/nccl CPU op.
bool read_input_dims(const JsonIn& args, Kernel& k, const std::string& from) {
  auto dims = args.find("Input Dims");
  if (!dims) return false;
  auto items = dims->items();
  if (items.empty()) return false;
  auto product = [](const JsonIn& shape) -> std::optional<std::int64_t> {
    if (!shape.raw().is_array()) return std::nullopt;
    std::int64_t n = 1;
    for (const auto& d : shape.items()) {
      if (!d.raw().is_number_integer()) return std::nullopt;
      n *= d.nonnegative_integer();
    }
    return n;
  };
  std::int64_t total = 0;
  const auto& first = items[0].raw();
  if (first.is_array() && !first.empty() && first[0].is_array()) {  // a tensor list
    for (const auto& t : items[0].items()) {
      auto n = product(t);
      if (!n) return false;
      total += *n;
    }
  } else {
    auto n = product(items[0]);
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

bool is_comm_op_name(std::string_view name) {
  auto n = lower(name);
  return n == "record_param_comms" || starts_with(n, "nccl:") || starts_with(n, "c10d::") ||
         !normalise_collective(n).empty();
}

struct StepWindow {
  std::int64_t number = -1;  // -1: the whole trace
  double ts = -std::numeric_limits<double>::infinity();
  double end = std::numeric_limits<double>::infinity();
};

struct BucketObs {
  const Kernel* kernel = nullptr;
  double launch = 0, ready = 0;  // us, absolute
};

struct StepResult {
  StepWindow window;
  double origin = 0;
  double fwd_start = 0, fwd_end = 0, bwd_start = 0, bwd_end = 0, opt_start = 0, opt_end = 0;
  double bwd_busy = 0;
  double last_end = -std::numeric_limits<double>::infinity();  // the step's last kernel ended
  std::vector<BucketObs> buckets;
  std::vector<const Kernel*> others;
  std::vector<Phase> other_phases;
};

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

std::string join_numbers(const std::vector<std::int64_t>& v) {
  // "3-7" for a consecutive run, "3, 5, 9" otherwise.
  bool consecutive = v.size() > 2;
  for (std::size_t i = 1; i < v.size(); ++i) consecutive = consecutive && v[i] == v[i - 1] + 1;
  if (consecutive) return std::to_string(v.front()) + "-" + std::to_string(v.back());
  std::string s;
  for (auto n : v) s += (s.empty() ? "" : ", ") + std::to_string(n);
  return s;
}

std::string model_from_file(const std::string& file) {
  std::string stem = std::filesystem::path(file).filename().string();
  for (const char* suffix : {".gz", ".json", ".pt.trace"}) {
    std::string s = suffix;
    if (stem.size() > s.size() && stem.compare(stem.size() - s.size(), s.size(), s) == 0)
      stem.resize(stem.size() - s.size());
  }
  return stem.empty() ? "imported" : stem;
}

}  // namespace

std::string read_text_file_maybe_gzip(const std::string& file) {
  // gzread passes a file that is not gzip-compressed through unchanged.
  gzFile f = gzopen(file.c_str(), "rb");
  if (f == nullptr) throw InputError(file, "", "cannot open file for reading");
  std::string text;
  std::vector<char> buf(1 << 20);
  for (;;) {
    int n = gzread(f, buf.data(), static_cast<unsigned>(buf.size()));
    if (n < 0) {
      int err = 0;
      std::string msg = gzerror(f, &err);
      gzclose(f);
      throw InputError(file, "", "cannot read: " + msg + " (corrupt gzip data?)");
    }
    if (n == 0) break;
    text.append(buf.data(), static_cast<std::size_t>(n));
  }
  int err = 0;
  const char* msg = gzerror(f, &err);
  std::string what = msg != nullptr ? msg : "";
  gzclose(f);
  if (err != Z_OK && err != Z_STREAM_END)
    throw InputError(file, "", "cannot read: " + what + " (truncated or corrupt gzip data)");
  return text;
}

KinetoImport import_kineto_file(const std::string& file, const KinetoImportOptions& options) {
  return import_kineto(JsonIn::parse_text(read_text_file_maybe_gzip(file), file), file, options);
}

KinetoImport import_kineto(const json& root, const std::string& file, const KinetoImportOptions& options) {
  Reader reader(root, file);
  KinetoImport imp;
  const JsonIn events = reader.events_node();
  const auto items = events.items();

  // 1. Read every complete event strictly; keep kernels, launches, CPU ops and profiler steps.
  std::vector<Span> spans;
  spans.reserve(items.size());
  std::vector<StepWindow> steps;
  std::map<std::int64_t, std::size_t> step_seen;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const auto& ev = items[i];
    ev.expect_object();
    const std::string ph = ev.at("ph").string();
    if (ph != "X") continue;
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
    if (starts_with(s.name, "ProfilerStep#") && s.cat != "gpu_user_annotation") {
      const std::string digits = s.name.substr(13);
      bool ok = !digits.empty() && digits.size() < 18 &&
                std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
      if (!ok) ev.at("name").fail("\"ProfilerStep#N\" with N a step number");
      StepWindow w{std::stoll(digits), s.ts, s.end()};
      if (!step_seen.emplace(w.number, i).second) ev.at("name").fail("each profiler step once");
      steps.push_back(w);
      continue;
    }
    spans.push_back(std::move(s));
  }
  auto args_of = [&](const Span& s) {
    return JsonIn(*s.args, events.path() + "[" + std::to_string(s.event) + "].args", file);
  };

  std::vector<Kernel> kernels;
  std::unordered_map<std::int64_t, const Span*> launch_of;  // correlation -> runtime event
  std::map<std::pair<std::string, std::string>, std::vector<const Span*>> cpu_ops_by_thread;
  bool any_backward_op = false, any_optimizer_op = false;
  for (const auto& s : spans) {
    if (s.cat == "kernel") {
      Kernel k;
      k.span = &s;
      k.nccl = starts_with(lower(s.name), "nccl");
      kernels.push_back(std::move(k));
    } else if (s.cat == "cuda_runtime" || s.cat == "cuda_driver" || s.cat == "runtime" || s.cat == "hip_runtime") {
      if (s.args == nullptr) continue;
      if (auto c = args_of(s).find("correlation")) launch_of.emplace(c->integer(), &s);
    } else if (s.cat == "cpu_op" || s.cat == "user_annotation" || s.cat == "operator" || s.cat == "python_function") {
      cpu_ops_by_thread[{s.pid, s.tid}].push_back(&s);
      any_backward_op = any_backward_op || starts_with(s.name, "autograd::engine::evaluate_function");
      any_optimizer_op = any_optimizer_op || starts_with(s.name, "Optimizer.step#");
    }
  }

  // 2. Each kernel's launch and the host ops around it (a sweep over each thread's call stack).
  {
    std::map<std::pair<std::string, std::string>, std::vector<std::pair<const Span*, Kernel*>>> launches_by_thread;
    for (auto& k : kernels) {
      if (k.span->args == nullptr) continue;
      auto c = args_of(*k.span).find("correlation");
      if (!c) continue;
      auto it = launch_of.find(c->integer());
      if (it == launch_of.end()) continue;
      launches_by_thread[{it->second->pid, it->second->tid}].emplace_back(it->second, &k);
    }
    for (auto& [thread, launches] : launches_by_thread) {
      auto& ops = cpu_ops_by_thread[thread];
      std::sort(ops.begin(), ops.end(),
                [](const Span* a, const Span* b) { return a->ts != b->ts ? a->ts < b->ts : a->dur > b->dur; });
      std::sort(launches.begin(), launches.end(),
                [](const auto& a, const auto& b) { return a.first->ts < b.first->ts; });
      std::vector<const Span*> stack;
      std::size_t next = 0;
      for (auto& [rt, kernel] : launches) {
        while (next < ops.size() && ops[next]->ts <= rt->ts) {
          while (!stack.empty() && stack.back()->end() < ops[next]->ts) stack.pop_back();
          stack.push_back(ops[next++]);
        }
        while (!stack.empty() && stack.back()->end() < rt->ts) stack.pop_back();
        LaunchContext ctx;
        ctx.ts = rt->ts;
        for (auto it = stack.rbegin(); it != stack.rend(); ++it) {
          const Span* op = *it;
          if (op->ts > rt->ts || op->end() < rt->ts) continue;
          if (starts_with(op->name, "autograd::engine::evaluate_function")) ctx.in_backward = true;
          if (starts_with(op->name, "Optimizer.step#")) ctx.in_optimizer = true;
          if (ctx.size_op == nullptr && op->args != nullptr && is_comm_op_name(op->name)) {
            const auto& a = *op->args;
            if (a.contains("In msg nelems") || a.contains("Out msg nelems") || a.contains("Input Dims"))
              ctx.size_op = op;
          }
        }
        kernel->launch = ctx;
      }
    }
  }

  // 3. NCCL kernels: collective, dtype and message size.
  std::size_t nccl_count = 0;
  for (auto& k : kernels) {
    if (!k.nccl) continue;
    ++nccl_count;
    k.collective = normalise_collective(kernel_base_name(k.span->name).substr(4));
    k.dtype = dtype_from_kernel_name(k.span->name);
    bool sized = false;
    if (k.span->args != nullptr) sized = read_comm_args(args_of(*k.span), k, "the kernel's args");
    if (!sized && k.launch && k.launch->size_op != nullptr) {
      const Span* op = k.launch->size_op;
      auto a = args_of(*op);
      sized = read_comm_args(a, k, "the args of " + op->name) || read_input_dims(a, k, "the Input Dims of " + op->name);
    }
  }
  if (nccl_count == 0)
    throw InputError(file, events.path(),
                     "no NCCL kernels (names starting with \"nccl\", cat \"kernel\"): expected a PyTorch profiler "
                     "trace of a data-parallel job on NCCL, recorded with ProfilerActivity.CUDA");

  // 4. Steps.
  std::sort(steps.begin(), steps.end(), [](const StepWindow& a, const StepWindow& b) { return a.ts < b.ts; });
  std::vector<StepWindow> chosen;
  if (steps.empty()) {
    if (options.step)
      throw InputError(file, events.path(),
                       "no ProfilerStep#N spans, so --step " + std::to_string(*options.step) +
                           " cannot be found (the whole trace is one step without --step)");
    chosen.push_back(StepWindow{});
    imp.warnings.push_back("no ProfilerStep#N spans: the whole trace is taken as one step");
  } else if (options.step) {
    auto it = std::find_if(steps.begin(), steps.end(), [&](const StepWindow& w) { return w.number == *options.step; });
    if (it == steps.end()) {
      std::vector<std::int64_t> have;
      for (const auto& w : steps) have.push_back(w.number);
      throw InputError(
          file, events.path(),
          "no ProfilerStep#" + std::to_string(*options.step) + "; the trace has steps " + join_numbers(have));
    }
    chosen.push_back(*it);
  } else {
    chosen = steps;
  }

  auto warn = [&](const std::string& w) {
    if (std::find(imp.warnings.begin(), imp.warnings.end(), w) == imp.warnings.end()) imp.warnings.push_back(w);
  };

  // 5. Reconstruct each chosen step.
  std::vector<StepResult> results;
  for (const auto& w : chosen) {
    StepResult r;
    r.window = w;
    std::vector<Kernel*> in_step;
    for (auto& k : kernels) {
      double t = k.launch ? k.launch->ts : k.ts();
      if (t >= w.ts && t < w.end) in_step.push_back(&k);
    }
    // With every kernel's launch known, host-side context decides phases and readiness; without
    // it, only the GPU clock is left.
    std::size_t launched = 0;
    for (auto* k : in_step) launched += k->launch ? 1 : 0;
    const bool launch_mode_possible = !in_step.empty() && launched == in_step.size();
    const bool phases_known = launch_mode_possible && any_backward_op;
    if (!launch_mode_possible)
      warn(
          "some kernels have no launch record (a cuda_runtime event with the same correlation id): forward and "
          "backward cannot be told apart (all compute before the first bucket counts as its interval's backward, "
          "forward_s = 0) and each gradient-ready time is estimated as the end of the last compute kernel before "
          "the allreduce kernel began (an upper bound)");
    if (launch_mode_possible && !any_backward_op)
      warn(
          "no autograd::engine::evaluate_function CPU ops: forward and backward cannot be told apart (all "
          "compute before the first bucket counts as its interval's backward, forward_s = 0), and every "
          "floating-point allreduce is taken as a gradient bucket");
    if (launch_mode_possible && !any_optimizer_op)
      warn("no Optimizer.step#... CPU ops: the compute after backward is taken as the optimizer");
    std::vector<Kernel*> compute, comm;
    for (auto* k : in_step) (k->nccl ? comm : compute).push_back(k);
    for (auto* k : in_step) r.last_end = std::max(r.last_end, k->end());
    const std::string where = w.number >= 0 ? "ProfilerStep#" + std::to_string(w.number) : "the trace";
    if (compute.empty())
      throw InputError(file, events.path(), "no compute kernels in " + where + ": cannot reconstruct its backward");
    auto by_time = [](const Kernel* a, const Kernel* b) { return a->ts() < b->ts(); };
    std::sort(compute.begin(), compute.end(), by_time);
    std::sort(comm.begin(), comm.end(), [&](const Kernel* a, const Kernel* b) {
      if (launch_mode_possible && a->launch->ts != b->launch->ts) return a->launch->ts < b->launch->ts;
      return a->ts() < b->ts();
    });

    // Gradient buckets: floating-point allreduces launched in backward.
    std::vector<Kernel*> grads;
    for (auto* k : comm) {
      bool grad = k->collective == "allreduce" && !k->dtype.integer;
      if (grad && phases_known) grad = k->launch->in_backward;
      if (grad) {
        grads.push_back(k);
      } else {
        r.others.push_back(k);
      }
    }
    if (grads.empty())
      throw InputError(file, events.path(),
                       "no NCCL allreduce launched during backward in " + where +
                           ": expected DDP's gradient buckets (is this a data-parallel job on NCCL?)");

    // Phases of the compute kernels.
    std::vector<Kernel*> fwd, bwd, opt;
    double first_bwd_launch = std::numeric_limits<double>::infinity();
    if (phases_known)
      for (auto* k : in_step)
        if (k->launch->in_backward) first_bwd_launch = std::min(first_bwd_launch, k->launch->ts);
    if (phases_known) {
      double last_bwd_launch = -std::numeric_limits<double>::infinity();
      for (auto* k : compute)
        if (k->launch->in_backward) last_bwd_launch = std::max(last_bwd_launch, k->launch->ts);
      for (auto* k : compute) {
        if (k->launch->in_optimizer)
          k->phase = Phase::optimizer;
        else if (k->launch->in_backward)
          k->phase = Phase::backward;
        else if (k->launch->ts < first_bwd_launch)
          k->phase = Phase::forward;
        else if (!any_optimizer_op && k->launch->ts > last_bwd_launch)
          k->phase = Phase::optimizer;
        else
          k->phase = Phase::other;
      }
    } else {
      double last_grad_end = 0;
      for (auto* k : grads) last_grad_end = std::max(last_grad_end, k->end());
      for (auto* k : compute) {
        if (launch_mode_possible && any_optimizer_op)
          k->phase = k->launch->in_optimizer ? Phase::optimizer : Phase::backward;
        else
          k->phase = k->ts() >= last_grad_end ? Phase::optimizer : Phase::backward;
      }
    }
    for (auto* k : compute) {
      if (k->phase == Phase::forward) fwd.push_back(k);
      if (k->phase == Phase::backward) bwd.push_back(k);
      if (k->phase == Phase::optimizer) opt.push_back(k);
    }
    for (auto* k : r.others) {
      Phase p = Phase::unknown;
      if (phases_known) {
        p = k->launch->in_optimizer            ? Phase::optimizer
            : k->launch->in_backward           ? Phase::backward
            : k->launch->ts < first_bwd_launch ? Phase::forward
                                               : Phase::other;
      } else {
        p = k->ts() < grads.front()->ts() ? Phase::forward : Phase::other;
      }
      r.other_phases.push_back(p);
    }
    if (bwd.empty()) throw InputError(file, events.path(), "no backward compute kernels in " + where);

    auto span_of = [](const std::vector<Kernel*>& ks, double fallback) {
      if (ks.empty()) return std::pair<double, double>{fallback, fallback};
      double a = std::numeric_limits<double>::infinity(), b = -a;
      for (auto* k : ks) a = std::min(a, k->ts()), b = std::max(b, k->end());
      return std::pair<double, double>{a, b};
    };
    std::tie(r.bwd_start, r.bwd_end) = span_of(bwd, 0);
    std::tie(r.fwd_start, r.fwd_end) = span_of(fwd, r.bwd_start);
    double last_comm_end = 0;
    for (auto* k : grads) last_comm_end = std::max(last_comm_end, k->end());
    std::tie(r.opt_start, r.opt_end) = span_of(opt, std::max(r.bwd_end, last_comm_end));
    for (auto* k : bwd) r.bwd_busy += k->span->dur;
    // The step begins with its first forward kernel, or with DDP's buffer broadcast before it.
    r.origin = std::min(r.fwd_start, r.bwd_start);
    for (std::size_t i = 0; i < r.others.size(); ++i)
      if (r.other_phases[i] == Phase::forward) r.origin = std::min(r.origin, r.others[i]->ts());

    // Gradient-ready times: the compute stream has run every backward kernel launched before
    // the allreduce (DDP's NCCL stream waits for exactly that), or without launches, every
    // backward kernel that ended before the allreduce kernel began.
    double ready = r.bwd_start;
    for (auto* g : grads) {
      BucketObs b;
      b.kernel = g;
      for (auto* k : bwd) {
        bool before = launch_mode_possible ? k->launch->ts < g->launch->ts : k->end() <= g->ts();
        if (before) ready = std::max(ready, k->end());
      }
      b.ready = ready;
      b.launch = g->launch ? g->launch->ts : g->ts();
      r.buckets.push_back(b);
    }
    results.push_back(std::move(r));
  }

  // 6. Steps must agree on the buckets before they are averaged.
  const auto& first = results.front();
  for (const auto& r : results) {
    auto name = [](const StepResult& s) {
      return s.window.number >= 0 ? "ProfilerStep#" + std::to_string(s.window.number) : std::string("the trace");
    };
    bool same = r.buckets.size() == first.buckets.size();
    for (std::size_t b = 0; same && b < r.buckets.size(); ++b) {
      const Kernel* x = r.buckets[b].kernel;
      const Kernel* y = first.buckets[b].kernel;
      same = x->numel == y->numel && x->dtype.dtype == y->dtype.dtype;
    }
    if (!same)
      throw InputError(file, events.path(),
                       name(r) + " reduces " + std::to_string(r.buckets.size()) + " gradient buckets and " +
                           name(first) + " " + std::to_string(first.buckets.size()) +
                           (r.buckets.size() == first.buckets.size() ? " of other sizes" : "") +
                           " (DDP rebuilds its buckets after its first iteration): pick one step with --step N");
  }

  // 7. Means over the steps, relative to each step's origin.
  const double n = static_cast<double>(results.size());
  auto mean = [&](auto field) {
    double s = 0;
    for (const auto& r : results) s += field(r) - r.origin;
    return s / n * kSPerUs;
  };
  imp.forward_start_s = mean([](const StepResult& r) { return r.fwd_start; });
  imp.forward_end_s = mean([](const StepResult& r) { return r.fwd_end; });
  imp.backward_start_s = mean([](const StepResult& r) { return r.bwd_start; });
  imp.backward_end_s = mean([](const StepResult& r) { return r.bwd_end; });
  imp.optimizer_start_s = mean([](const StepResult& r) { return r.opt_start; });
  imp.optimizer_end_s = mean([](const StepResult& r) { return r.opt_end; });
  {
    double s = 0;
    for (const auto& r : results) s += r.bwd_busy;
    imp.backward_busy_s = s / n * kSPerUs;
  }
  imp.sizes_known = true;
  std::size_t unknown_dtype = 0;
  for (std::size_t b = 0; b < first.buckets.size(); ++b) {
    const Kernel* k = first.buckets[b].kernel;
    ImportedBucket ib;
    ib.kernel = k->span->name;
    ib.dtype_known = k->dtype.dtype.has_value();
    ib.dtype = k->dtype.dtype.value_or(DType::fp32);
    if (!ib.dtype_known) ++unknown_dtype;
    ib.numel = k->numel.value_or(0);
    ib.size_from = k->numel ? k->size_from : "";
    if (!k->numel) imp.sizes_known = false;
    ib.launch_s = mean([&](const StepResult& r) { return r.buckets[b].launch; });
    ib.ready_s = mean([&](const StepResult& r) { return r.buckets[b].ready; });
    ib.start_s = mean([&](const StepResult& r) { return r.buckets[b].kernel->ts(); });
    ib.end_s = mean([&](const StepResult& r) { return r.buckets[b].kernel->end(); });
    imp.buckets.push_back(std::move(ib));
  }
  // Other collectives: averaged when every step has the same ones, else from the first step.
  bool others_agree = true;
  for (const auto& r : results) {
    others_agree = others_agree && r.others.size() == first.others.size();
    for (std::size_t i = 0; others_agree && i < r.others.size(); ++i)
      others_agree =
          r.others[i]->span->name == first.others[i]->span->name && r.others[i]->numel == first.others[i]->numel;
  }
  if (!others_agree)
    imp.warnings.push_back("the steps differ in their other collectives: those of the first imported step are kept");
  for (std::size_t i = 0; i < first.others.size(); ++i) {
    const Kernel* k = first.others[i];
    ImportedCollective c{k->span->name,
                         k->collective,
                         phase_name(first.other_phases[i]),
                         k->numel.value_or(0),
                         k->dtype.dtype.value_or(DType::fp32),
                         k->dtype.dtype.has_value(),
                         0,
                         0};
    if (others_agree) {
      c.start_s = mean([&](const StepResult& r) { return r.others[i]->ts(); });
      c.end_s = mean([&](const StepResult& r) { return r.others[i]->end(); });
    } else {
      c.start_s = (k->ts() - first.origin) * kSPerUs;
      c.end_s = (k->end() - first.origin) * kSPerUs;
    }
    imp.other_collectives.push_back(std::move(c));
  }
  for (const auto& r : results) {
    if (r.window.number >= 0) imp.steps.push_back(r.window.number);
    imp.step_times_s.push_back((r.last_end - r.origin) * kSPerUs);
  }
  if (imp.steps.empty())
    imp.step_text = "the whole trace";
  else if (imp.steps.size() == 1)
    imp.step_text = "step " + std::to_string(imp.steps.front());
  else
    imp.step_text = "mean of steps " + join_numbers(imp.steps);

  // 8. Where it ran.
  JsonIn top(root, "$", file);
  std::string device_id = first.buckets.front().kernel->span->pid;
  for (const auto& k : kernels)
    if (!k.nccl) {
      device_id = k.span->pid;
      if (k.span->args != nullptr)
        if (auto d = args_of(*k.span).find("device")) device_id = id_text(*d);
      break;
    }
  imp.device = "GPU " + device_id + " (name not in the trace)";
  if (root.is_object()) {
    if (auto props = top.find("deviceProperties")) {
      for (const auto& p : props->items()) {
        p.expect_object();
        auto id = p.find("id");
        auto name = p.find("name");
        if (id && name && id_text(*id) == device_id) imp.device = name->nonempty_string();
      }
    }
    if (auto info = top.find("distributedInfo")) {
      info->expect_object();
      if (auto rk = info->find("rank")) imp.rank = static_cast<int>(rk->nonnegative_integer());
      if (auto ws = info->find("world_size")) imp.world_size = static_cast<int>(ws->positive_integer());
    }
  }
  for (const auto& r : results)
    for (const auto& b : r.buckets)
      if (b.kernel->group_size > 0) imp.world_size = b.kernel->group_size;
  if (imp.world_size == 0)
    imp.warnings.push_back(
        "the world size is not in the trace (no \"Group size\" args, no distributedInfo): "
        "taken as 1, so bus bandwidths are not computed");

  // 9. What could not be recovered.
  if (!imp.sizes_known) {
    std::size_t unknown = 0;
    for (const auto& b : imp.buckets) unknown += b.numel == 0 ? 1 : 0;
    imp.warnings.push_back(
        std::to_string(unknown) + " of " + std::to_string(imp.buckets.size()) +
        " gradient allreduces carry no message size (no \"In msg nelems\" on the kernel or its record_param_comms "
        "op, no Input Dims from record_shapes): their bucket sizes cannot be recovered and their synthetic "
        "parameters have the placeholder numel 1; timing (gradient-ready times, allreduce durations) is exact");
  }
  if (unknown_dtype > 0)
    imp.warnings.push_back(
        std::to_string(unknown_dtype) +
        " gradient allreduces show no dtype (neither in args nor in the kernel name): taken as fp32");
  std::size_t buffer_broadcasts = 0;
  for (const auto& c : imp.other_collectives)
    if (c.phase == "forward" && c.collective == "broadcast" && c.numel > 0) ++buffer_broadcasts;
  if (imp.other_collectives.size() > buffer_broadcasts)
    imp.warnings.push_back(std::to_string(imp.other_collectives.size() - buffer_broadcasts) +
                           " NCCL collective(s) per step that are not gradient buckets (nor forward broadcasts "
                           "of known size, which become buffers) are left out of the trace");

  // 10. The trace: one synthetic parameter per bucket, one layer per bucket interval.
  ModelTrace& t = imp.trace;
  t.model = options.model.empty() ? model_from_file(file) : options.model;
  t.reference_device = imp.device;
  t.batch_size_per_rank = options.batch_size_per_rank;
  t.optimizer_s = std::max(0.0, imp.optimizer_end_s - imp.optimizer_start_s);
  const std::size_t K = imp.buckets.size();
  t.layers.push_back({"forward_pass", std::max(0.0, imp.forward_end_s - imp.forward_start_s), 0.0});
  const double last_ready = imp.buckets.back().ready_s;
  t.layers.push_back({"backward_tail", 0.0, std::max(0.0, imp.backward_end_s - last_ready)});
  for (std::size_t k = K; k-- > 0;) {
    double prev = k == 0 ? imp.backward_start_s : imp.buckets[k - 1].ready_s;
    t.layers.push_back({"interval" + std::to_string(k), 0.0, std::max(0.0, imp.buckets[k].ready_s - prev)});
  }
  for (std::size_t k = K; k-- > 0;) {
    TraceParam p;
    p.name = "bucket" + std::to_string(k);
    p.numel = imp.buckets[k].numel > 0 ? imp.buckets[k].numel : 1;
    p.dtype = imp.buckets[k].dtype;
    p.layer = 2 + (K - 1 - k);
    t.params.push_back(std::move(p));
  }
  t.grad_ready_order = derive_grad_ready_order(t);
  std::size_t nbuf = 0;
  for (const auto& c : imp.other_collectives)
    if (c.phase == "forward" && c.collective == "broadcast" && c.numel > 0)
      t.buffers.push_back({"broadcast" + std::to_string(nbuf++), c.numel, c.dtype, true});

  char head[512];
  std::snprintf(
      head, sizeof head,
      "imported by redsim trace import from the PyTorch profiler (Kineto) trace %s, %s, rank %d of %d, on %s: ",
      std::filesystem::path(file).filename().string().c_str(), imp.step_text.c_str(), imp.rank,
      std::max(1, imp.world_size), imp.device.c_str());
  t.source = std::string(head) + std::to_string(K) +
             " NCCL allreduces launched in backward are DDP's gradient buckets. A profiler trace has no parameters, "
             "so each bucket is one synthetic parameter bucketK (numel: the allreduce's message elements; listed in "
             "reverse launch order, as DDP's buckets hold the last-registered parameters first), owned by a layer "
             "intervalK whose backward_s is the backward compute between the previous bucket's gradient-ready time "
             "and bucket K's (the compute stream finished every kernel launched before the allreduce), on the GPU "
             "clock; backward_tail is the backward after the last bucket; forward_pass is the whole forward; "
             "optimizer_s spans the optimizer step's kernels. Real parameter names, per-layer times and buffers "
             "other than broadcast ones are not in a profiler trace.";
  if (!imp.warnings.empty()) {
    t.source += " Not recovered: ";
    for (std::size_t i = 0; i < imp.warnings.size(); ++i) t.source += (i ? "; " : "") + imp.warnings[i];
    t.source += ".";
  }
  // What we write must read back (the same checks as any trace file).
  imp.trace = trace_from_json(trace_to_json(t), file);
  return imp;
}

Knobs imported_bucket_knobs(const KinetoImport& imp) {
  Knobs k;
  k.strategy = "bucketed";
  k.bucket_order = BucketOrder::execution;
  std::int64_t smallest = std::numeric_limits<std::int64_t>::max();
  for (const auto& p : imp.trace.params) smallest = std::min(smallest, p.bytes());
  k.bucket_cap_bytes = smallest;
  k.first_bucket_cap_bytes = smallest;
  k.reduce_op = ReduceOp::avg;
  return k;
}

Timeline imported_timeline(const Plan& plan, const KinetoImport& imp) {
  Timeline tl("measured", 1, plan.ops.size());
  const auto K = imp.buckets.size();
  auto ready_before = [&](std::size_t k) { return k == 0 ? imp.backward_start_s : imp.buckets[k - 1].ready_s; };
  auto parse_index = [](std::string_view s) -> std::optional<std::size_t> {
    if (s.empty() || s.size() > 9 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return std::nullopt;
    return static_cast<std::size_t>(std::stoul(std::string(s)));
  };
  // Measured forward broadcasts (DDP's buffer sync), by dtype, in order.
  std::map<DType, std::vector<const ImportedCollective*>> broadcasts;
  for (const auto& c : imp.other_collectives)
    if (c.phase == "forward" && c.collective == "broadcast" && c.numel > 0) broadcasts[c.dtype].push_back(&c);
  std::map<DType, std::size_t> broadcast_next;
  double comm_free = 0;
  for (const auto& op : plan.ops) {
    auto& t = tl.at(0, op.id);
    std::string_view name = op.name;
    auto set = [&](double a, double b) {
      t.ready_s = a;
      t.start_s = a;
      t.end_s = b;
    };
    if (name == "fwd:forward_pass") {
      set(imp.forward_start_s, imp.forward_end_s);
    } else if (starts_with(name, "fwd:")) {
      set(imp.forward_end_s, imp.forward_end_s);
    } else if (name == "bwd:backward_tail") {
      set(imp.buckets.back().ready_s, imp.backward_end_s);
    } else if (name == "bwd:forward_pass") {
      set(imp.backward_end_s, imp.backward_end_s);
    } else if (starts_with(name, "bwd:interval")) {
      auto k = parse_index(name.substr(12));
      if (!k || *k >= K) throw std::invalid_argument("imported_timeline: unknown op " + op.name);
      set(ready_before(*k), imp.buckets[*k].ready_s);
    } else if (starts_with(name, "allreduce:bucket")) {
      auto k = parse_index(name.substr(16));
      if (!k || *k >= K) throw std::invalid_argument("imported_timeline: unknown op " + op.name);
      const auto& b = imp.buckets[*k];
      t.ready_s = std::max(b.ready_s, comm_free);
      t.start_s = b.start_s;
      t.end_s = b.end_s;
      comm_free = b.end_s;
      // Per rank, a ring allreduce sends and receives 2(n-1)/n of the buffer: nccl-tests' bus bytes.
      const int n = plan.world_size;
      if (imp.sizes_known && n > 1) {
        const auto bus = static_cast<std::int64_t>(std::llround(2.0 * (n - 1) / n * static_cast<double>(op.bytes)));
        t.bytes_sent = bus;
        t.bytes_received = bus;
      }
    } else if (name == "optimizer") {
      set(imp.optimizer_start_s, imp.optimizer_end_s);
    } else if (op.kind == OpKind::broadcast && starts_with(name, "broadcast:buffers:")) {
      auto& list = broadcasts[op.dtype];
      auto& next = broadcast_next[op.dtype];
      std::int64_t bytes = 0;
      double start = 0, end = 0;
      for (bool first = true; bytes < op.bytes && next < list.size(); first = false) {
        const auto* c = list[next++];
        bytes += c->numel * dtype_size_bytes(c->dtype);
        if (first) start = c->start_s;
        end = c->end_s;
      }
      if (bytes != op.bytes)
        throw std::invalid_argument("imported_timeline: the measured broadcasts do not make up " + op.name);
      t.ready_s = std::max(start, comm_free);
      t.start_s = start;
      t.end_s = end;
      comm_free = end;
      // NCCL's broadcast pipelines the buffer along the ring from the root (ranks in order):
      // every rank but the root receives it, every rank but the root's predecessor passes it on.
      const int n = plan.world_size, root = std::max(0, op.root);
      if (n > 1) {
        t.bytes_received = imp.rank == root ? 0 : op.bytes;
        t.bytes_sent = imp.rank == (root + n - 1) % n ? 0 : op.bytes;
      }
    } else {
      throw std::invalid_argument("imported_timeline: unknown op " + op.name);
    }
  }
  return tl;
}

}  // namespace redsim
