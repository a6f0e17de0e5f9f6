#include "kineto_builder.h"

#include <map>
#include <stdexcept>
#include <utility>

namespace redsim::testing {

using nlohmann::json;

namespace {
constexpr int kHostPid = 4242;
constexpr int kMainTid = 4242;
constexpr int kAutogradTid = 4250;
constexpr int kDevice = 0;
constexpr int kComputeStream = 7;
constexpr int kNcclStream = 20;

std::string c10_to_kernel_suffix(const std::string& dtype) {
  if (dtype == "Float") return "float";
  if (dtype == "Half") return "half";
  if (dtype == "BFloat16") return "__nv_bfloat16";
  if (dtype == "Double") return "double";
  if (dtype == "Long") return "int64_t";
  return "int8_t";
}

std::string input_type(const std::string& dtype) {
  if (dtype == "Float") return "float";
  if (dtype == "Half") return "c10::Half";
  if (dtype == "BFloat16") return "c10::BFloat16";
  if (dtype == "Double") return "double";
  if (dtype == "Long") return "long int";
  return "signed char";
}
}  // namespace

std::string nccl_kernel_name(const std::string& collective, const std::string& dtype) {
  const std::string kind = collective == "broadcast" ? "Broadcast" : "AllReduce";
  if (dtype == "BFloat16")  // NCCL >= 2.19 names its kernels ncclDevKernel_<Coll>_<Op>_<type>_<ALGO>_<PROTO>
    return "ncclDevKernel_" + kind + "_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
  return "ncclKernel_" + kind + "_RING_LL_Sum_" + c10_to_kernel_suffix(dtype) + "(ncclWorkElem)";
}

KStep example_step(std::int64_t number, int jitter) {
  KStep s;
  s.number = number;
  s.length_us = 2500;
  const double j = jitter;
  auto add = [&](double launch, double start, double dur, KPhase phase) {
    s.compute.push_back({launch, start + 3 * j, dur + j, phase});
  };
  // forward: three kernels
  add(20, 100, 80, KPhase::forward);
  add(30, 200, 80, KPhase::forward);
  add(40, 300, 80, KPhase::forward);
  // backward: six kernels, launched 20 us apart, each 150 us on the GPU
  for (int i = 0; i < 6; ++i) add(400 + 20 * i, 500 + 200 * i, 150, KPhase::backward);
  // optimizer
  add(2000, 2050, 50, KPhase::optimizer);
  add(2010, 2110, 40, KPhase::optimizer);
  // DDP's buffer broadcast before forward, then three gradient buckets
  s.comm.push_back({5, 50 + 3 * j, 30 + j, "broadcast", 500, "Float", KPhase::forward});
  // (launched after the 2nd, 5th and 6th backward kernels: ready at their ends, 850, 1450, 1650 us)
  s.comm.push_back({430, 860 + 3 * j, 300 + j, "allreduce", 262144, "Float", KPhase::backward});
  s.comm.push_back({490, 1460 + 3 * j, 400 + j, "allreduce", 6553600, "Float", KPhase::backward});
  s.comm.push_back({510, 1870 + 3 * j, 100 + j, "allreduce", 1000, "Float", KPhase::backward});
  return s;
}

namespace {

// The events of one trace, appended in the order Kineto writes them.
class Builder {
 public:
  explicit Builder(const KBuild& o) : o_(o), base_(o.base_us) {}

  void header() {
    // What Kineto writes around the activities.
    events_.push_back({{"name", "process_name"},
                       {"ph", "M"},
                       {"ts", o_.base_us},
                       {"pid", kHostPid},
                       {"tid", 0},
                       {"args", {{"name", "python3"}}}});
    events_.push_back({{"name", "process_name"},
                       {"ph", "M"},
                       {"ts", o_.base_us},
                       {"pid", kDevice},
                       {"tid", 0},
                       {"args", {{"name", "GPU 0"}}}});
    events_.push_back({{"name", "Iteration Start: PyTorch Profiler"},
                       {"ph", "i"},
                       {"s", "g"},
                       {"pid", "Traces"},
                       {"tid", "Trace PyTorch Profiler"},
                       {"ts", o_.base_us}});
  }

  void step(const KStep& s) {
    if (o_.profiler_steps) profiler_step(s);
    optimizer_op(s);
    int n = 0;
    for (const auto& c : s.compute) compute(c, n++);
    for (const auto& c : s.comm) comm(c);
    for (const auto& m : s.memory) memory(m);
    if (o_.launches) {
      for (int i = 0; i < s.accumulate_grads; ++i)
        cpu_op("autograd::engine::evaluate_function: torch::autograd::AccumulateGrad",
               base_ + s.accumulate_at_us + 1e-3 * i, 5e-4, kAutogradTid);
      for (int i = 0; i < s.copies_out; ++i)
        cpu_op("torch.distributed.ddp.reducer::copy_bucket_to_grad", base_ + s.copy_out_at_us + 1e-3 * i, 5e-4,
               kAutogradTid);
    }
    base_ += s.length_us + 500;
  }

  json finish() {
    // Kineto writes memcpy/memset activity too; not compute.
    events_.push_back({{"ph", "X"},
                       {"cat", "gpu_memcpy"},
                       {"name", "Memcpy HtoD (Pageable -> Device)"},
                       {"pid", kDevice},
                       {"tid", kComputeStream},
                       {"ts", o_.base_us + 1},
                       {"dur", 2},
                       {"args", {{"device", kDevice}, {"stream", kComputeStream}}}});
    return {{"schemaVersion", 1},
            {"deviceProperties", json::array({{{"id", 0}, {"name", o_.device_name}, {"totalGlobalMem", 85045526528LL}},
                                              {{"id", 1}, {"name", "another GPU"}}})},
            {"distributedInfo", {{"backend", "nccl"}, {"rank", o_.rank}, {"world_size", o_.group_size}}},
            {"traceEvents", std::move(events_)},
            {"traceName", "rank3.pt.trace.json"},
            {"displayTimeUnit", "ms"},
            {"baseTimeNanoseconds", 1700000000000000000LL}};
  }

 private:
  void memory(const KMemory& m) {
    std::int64_t& total = allocated_[{m.device_type, m.device_id}];
    total += m.bytes;
    json args = {{"Device Type", m.device_type}, {"Device Id", m.device_id}, {"Addr", 140000000000LL + total},
                 {"Bytes", m.bytes}, {"Total Reserved", total + (1 << 21)}};
    if (o_.total_allocated) args["Total Allocated"] = total;
    events_.push_back({{"ph", "i"}, {"cat", "cpu_instant_event"}, {"s", "t"}, {"name", "[memory]"},
                       {"pid", kHostPid}, {"tid", kMainTid}, {"ts", base_ + m.ts_us}, {"args", std::move(args)}});
  }

  void cpu_op(const std::string& name, double ts, double dur, int tid, json args = json::object()) {
    args["External id"] = external_++;
    events_.push_back({{"ph", "X"},
                       {"cat", "cpu_op"},
                       {"name", name},
                       {"pid", kHostPid},
                       {"tid", tid},
                       {"ts", ts},
                       {"dur", dur},
                       {"args", std::move(args)}});
  }

  void launch(double ts, int tid, std::int64_t corr) {
    events_.push_back({{"ph", "X"},
                       {"cat", "cuda_runtime"},
                       {"name", "cudaLaunchKernel"},
                       {"pid", kHostPid},
                       {"tid", tid},
                       {"ts", ts},
                       {"dur", 4},
                       {"args", {{"cbid", 211}, {"correlation", corr}}}});
    // Kineto's flow arrow from the launch to the kernel.
    events_.push_back(
        {{"ph", "s"}, {"id", corr}, {"pid", kHostPid}, {"tid", tid}, {"ts", ts}, {"cat", "ac2g"}, {"name", "ac2g"}});
  }

  void kernel(const std::string& name, double ts, double dur, int stream, std::int64_t corr, json args) {
    args["device"] = kDevice;
    args["stream"] = stream;
    args["correlation"] = corr;
    args["queued"] = 0;
    events_.push_back({{"ph", "X"},
                       {"cat", "kernel"},
                       {"name", name},
                       {"pid", kDevice},
                       {"tid", stream},
                       {"ts", ts},
                       {"dur", dur},
                       {"args", std::move(args)}});
  }

  void profiler_step(const KStep& s) {
    cpu_op("ProfilerStep#" + std::to_string(s.number), base_, s.length_us, kMainTid);
    events_.back()["cat"] = "user_annotation";
    // Newer Kineto also marks the step on the GPU timeline; the importer must ignore it.
    events_.push_back({{"ph", "X"},
                       {"cat", "gpu_user_annotation"},
                       {"name", "ProfilerStep#" + std::to_string(s.number)},
                       {"pid", kDevice},
                       {"tid", kComputeStream},
                       {"ts", base_ + 40},
                       {"dur", s.length_us}});
  }

  void optimizer_op(const KStep& s) {
    double opt_first = 1e300, opt_last = -1e300;
    for (const auto& c : s.compute)
      if (c.phase == KPhase::optimizer)
        opt_first = std::min(opt_first, c.launch_us), opt_last = std::max(opt_last, c.launch_us);
    if (o_.launches && opt_first < 1e300)
      cpu_op("Optimizer.step#SGD.step", base_ + opt_first - kOptimizerOpLeadUs, opt_last - opt_first + kOptimizerOpLeadUs + 15,
             kMainTid);
  }

  void compute(const KCompute& c, int n) {
    const std::int64_t corr = correlation_++;
    const double t = base_ + c.launch_us;
    if (o_.launches) {
      if (c.phase == KPhase::backward) {
        // Properly nested, as one thread's call stack is.
        cpu_op("autograd::engine::evaluate_function: MmBackward0", t - 2, 8, kAutogradTid);
        cpu_op("MmBackward0", t - 1.5, 7, kAutogradTid);
        cpu_op("aten::mm", t - 1, 5.5, kAutogradTid);
        launch(t, kAutogradTid, corr);
      } else {
        cpu_op(c.phase == KPhase::forward ? "aten::linear" : "aten::add_", t - 2, 8, kMainTid,
               {{"Input Dims", json::array({json::array({64, 1024}), json::array({1024, 1024})})},
                {"Input type", json::array({"float", "float"})}});
        launch(t, kMainTid, corr);
      }
    }
    kernel("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_" + std::to_string(c.id >= 0 ? c.id : n) + ">(Params)",
           base_ + c.start_us, c.dur_us, kComputeStream, corr, {{"External id", 0}, {"grid", {108, 1, 1}}});
    events_.push_back({{"ph", "f"},
                       {"id", corr},
                       {"pid", kDevice},
                       {"tid", kComputeStream},
                       {"ts", base_ + c.start_us},
                       {"cat", "ac2g"},
                       {"name", "ac2g"},
                       {"bp", "e"}});
  }

  void comm(const KComm& c) {
    const std::int64_t corr = correlation_++;
    const double t = base_ + c.launch_us;
    const int tid = c.phase == KPhase::backward ? kAutogradTid : kMainTid;
    const json meta = {{"Collective name", c.collective},
                       {"In msg nelems", c.numel},
                       {"Out msg nelems", c.numel},
                       {"Group size", o_.group_size},
                       {"dtype", c.dtype},
                       {"Process Group Name", "0"},
                       {"Process Group Ranks", "[0, 1, 2, 3, 4, 5, 6, 7]"}};
    if (o_.launches) {
      if (c.phase == KPhase::backward)
        cpu_op("autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", t - 3, 10, tid);
      cpu_op("record_param_comms", t - 2.5, 9, tid,
             o_.sizes == SizeStyle::record_param_comms ? meta : json{{"Process Group Name", "0"}});
      const std::string op = c.collective == "broadcast" ? "nccl:broadcast" : "nccl:all_reduce";
      json dims = json::object();
      if (o_.sizes == SizeStyle::input_dims)
        dims = {{"Input Dims", json::array({json::array({c.numel})})},
                {"Input type", json::array({input_type(c.dtype)})}};
      cpu_op(op, t - 2, 8, tid, dims);
      launch(t, tid, corr);
    }
    json args = o_.sizes == SizeStyle::kernel_args ? meta : json::object();
    if (c.channels > 0) args["grid"] = {c.channels, 1, 1};
    kernel(nccl_kernel_name(c.collective, c.dtype), base_ + c.start_us, c.dur_us, kNcclStream, corr, std::move(args));
  }

  const KBuild& o_;
  json events_ = json::array();
  std::int64_t correlation_ = 1000, external_ = 1;
  double base_;
  std::map<std::pair<int, int>, std::int64_t> allocated_;  // (device type, id): "Total Allocated"
};

}  // namespace

json build_kineto(const std::vector<KStep>& steps, const KBuild& o) {
  Builder b(o);
  b.header();
  for (const auto& s : steps) b.step(s);
  return b.finish();
}

std::size_t index_of_first(const json& trace, const std::function<bool(const json&)>& pred) {
  const auto& ev = trace["traceEvents"];
  for (std::size_t i = 0; i < ev.size(); ++i)
    if (pred(ev[i])) return i;
  throw std::logic_error("no such event");
}

bool is_kernel(const json& e) { return e.value("cat", "") == "kernel"; }

}  // namespace redsim::testing
