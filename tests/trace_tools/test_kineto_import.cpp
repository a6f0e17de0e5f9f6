// redsim trace import: a Kineto trace built here, with known kernels, launches and message
// sizes, must come back as exactly those buckets, gradient-ready times and durations.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "core/cluster.h"
#include "core/error.h"
#include "core/json_in.h"
#include "core/step_summary.h"
#include "core/trace_json.h"
#include "kineto_builder.h"
#include "strategies/strategy.h"
#include "tests/test_support.h"
#include "tool_runner.h"
#include "trace_tools/kineto_import.h"

using namespace redsim;
using namespace redsim::testing;
using nlohmann::json;

namespace {

constexpr double kEps = 1e-12;  // seconds; the reconstruction is exact up to rounding

// What the importer must find, worked out from the scenario by the rules DDP and CUDA streams
// follow: the step starts with its first forward kernel or forward collective; a bucket's
// gradients are ready when the compute stream has run every backward kernel launched before
// DDP launched the bucket's allreduce (the NCCL stream waits on an event recorded then).
struct Expected {
  double fwd_start = 0, fwd_end = 0, bwd_start = 0, bwd_end = 0, opt_start = 0, opt_end = 0;  // us from origin
  std::vector<double> launch, ready, start, end;
  std::vector<std::int64_t> numel;
  std::vector<double> bcast_start, bcast_end;
};

Expected expect(const KStep& s) {
  const double inf = std::numeric_limits<double>::infinity();
  double fs = inf, fe = -inf, bs = inf, be = -inf, os = inf, oe = -inf;
  for (const auto& c : s.compute) {
    double& a = c.phase == KPhase::forward ? fs : c.phase == KPhase::backward ? bs : os;
    double& b = c.phase == KPhase::forward ? fe : c.phase == KPhase::backward ? be : oe;
    a = std::min(a, c.start_us);
    b = std::max(b, c.start_us + c.dur_us);
  }
  double origin = std::min(fs, bs);
  for (const auto& c : s.comm)
    if (c.phase == KPhase::forward) origin = std::min(origin, c.start_us);
  // The optimizer's time begins when the host enters Optimizer.step (the builder's op opens
  // kOptimizerOpLeadUs before the first optimizer launch), or, if the GPU is still running
  // kernels that began before the first optimizer kernel then, when the last of them ends.
  double first_launch = inf, busy_until = -inf;
  for (const auto& c : s.compute)
    if (c.phase == KPhase::optimizer) first_launch = std::min(first_launch, c.launch_us);
  for (const auto& c : s.compute)
    if (c.start_us < os) busy_until = std::max(busy_until, c.start_us + c.dur_us);
  for (const auto& c : s.comm)
    if (c.start_us < os) busy_until = std::max(busy_until, c.start_us + c.dur_us);
  os = std::min(os, std::max(first_launch - kOptimizerOpLeadUs, busy_until));
  Expected e;
  e.fwd_start = fs - origin, e.fwd_end = fe - origin, e.bwd_start = bs - origin, e.bwd_end = be - origin;
  e.opt_start = os - origin, e.opt_end = oe - origin;
  double ready = bs;
  for (const auto& c : s.comm) {
    if (c.phase != KPhase::backward) {
      e.bcast_start.push_back(c.start_us - origin);
      e.bcast_end.push_back(c.start_us + c.dur_us - origin);
      continue;
    }
    for (const auto& k : s.compute)
      if (k.phase == KPhase::backward && k.launch_us < c.launch_us) ready = std::max(ready, k.start_us + k.dur_us);
    e.launch.push_back(c.launch_us - origin);
    e.ready.push_back(ready - origin);
    e.start.push_back(c.start_us - origin);
    e.end.push_back(c.start_us + c.dur_us - origin);
    e.numel.push_back(c.numel);
  }
  return e;
}

Expected mean(const std::vector<Expected>& v) {
  Expected m = v.front();
  auto avg = [&](auto get) {
    double s = 0;
    for (const auto& e : v) s += get(e);
    return s / static_cast<double>(v.size());
  };
  m.fwd_start = avg([](const Expected& e) { return e.fwd_start; });
  m.fwd_end = avg([](const Expected& e) { return e.fwd_end; });
  m.bwd_start = avg([](const Expected& e) { return e.bwd_start; });
  m.bwd_end = avg([](const Expected& e) { return e.bwd_end; });
  m.opt_start = avg([](const Expected& e) { return e.opt_start; });
  m.opt_end = avg([](const Expected& e) { return e.opt_end; });
  for (std::size_t k = 0; k < m.ready.size(); ++k) {
    m.launch[k] = avg([&](const Expected& e) { return e.launch[k]; });
    m.ready[k] = avg([&](const Expected& e) { return e.ready[k]; });
    m.start[k] = avg([&](const Expected& e) { return e.start[k]; });
    m.end[k] = avg([&](const Expected& e) { return e.end[k]; });
  }
  for (std::size_t k = 0; k < m.bcast_start.size(); ++k) {
    m.bcast_start[k] = avg([&](const Expected& e) { return e.bcast_start[k]; });
    m.bcast_end[k] = avg([&](const Expected& e) { return e.bcast_end[k]; });
  }
  return m;
}

void check_matches(const KinetoImport& imp, const Expected& e) {
  const double us = 1e-6;
  CHECK(imp.forward_start_s == Approx(e.fwd_start * us).margin(kEps));
  CHECK(imp.forward_end_s == Approx(e.fwd_end * us).margin(kEps));
  CHECK(imp.backward_start_s == Approx(e.bwd_start * us).margin(kEps));
  CHECK(imp.backward_end_s == Approx(e.bwd_end * us).margin(kEps));
  CHECK(imp.optimizer_start_s == Approx(e.opt_start * us).margin(kEps));
  CHECK(imp.optimizer_end_s == Approx(e.opt_end * us).margin(kEps));
  REQUIRE(imp.buckets.size() == e.ready.size());
  for (std::size_t k = 0; k < e.ready.size(); ++k) {
    INFO("bucket " << k);
    CHECK(imp.buckets[k].launch_s == Approx(e.launch[k] * us).margin(kEps));
    CHECK(imp.buckets[k].ready_s == Approx(e.ready[k] * us).margin(kEps));
    CHECK(imp.buckets[k].start_s == Approx(e.start[k] * us).margin(kEps));
    CHECK(imp.buckets[k].end_s == Approx(e.end[k] * us).margin(kEps));
  }
  // The trace: layers forward_pass, backward_tail, interval2..0; one parameter per bucket.
  const auto& t = imp.trace;
  const std::size_t K = e.ready.size();
  REQUIRE(t.layers.size() == K + 2);
  CHECK(t.layers[0].name == "forward_pass");
  CHECK(t.layers[0].forward_s == Approx((e.fwd_end - e.fwd_start) * us).margin(kEps));
  CHECK(t.layers[1].name == "backward_tail");
  CHECK(t.layers[1].backward_s == Approx((e.bwd_end - e.ready.back()) * us).margin(kEps));
  double bwd_sum = 0;
  for (std::size_t k = 0; k < K; ++k) {
    const auto& l = t.layers[2 + (K - 1 - k)];
    CHECK(l.name == "interval" + std::to_string(k));
    CHECK(l.forward_s == 0);
    CHECK(l.backward_s == Approx((e.ready[k] - (k == 0 ? e.bwd_start : e.ready[k - 1])) * us).margin(kEps));
  }
  for (const auto& l : t.layers) bwd_sum += l.backward_s;
  CHECK(bwd_sum == Approx((e.bwd_end - e.bwd_start) * us).margin(1e-11));
  CHECK(t.optimizer_s == Approx((e.opt_end - e.opt_start) * us).margin(kEps));
  REQUIRE(t.params.size() == K);
  for (std::size_t k = 0; k < K; ++k) {
    const auto& p = t.params[K - 1 - k];  // reverse launch order, as DDP's registration order
    CHECK(p.name == "bucket" + std::to_string(k));
    CHECK(t.layers[p.layer].name == "interval" + std::to_string(k));
  }
  // Gradients become ready bucket by bucket.
  REQUIRE(t.grad_ready_order.size() == K);
  for (std::size_t k = 0; k < K; ++k) CHECK(t.params[t.grad_ready_order[k]].name == "bucket" + std::to_string(k));
}

bool is_nccl_allreduce(const json& e) {
  return is_kernel(e) && e["name"].get<std::string>().find("AllReduce") != std::string::npos;
}

}  // namespace

TEST_CASE("import reconstructs the buckets, gradient-ready times and durations of one step", "[trace_tools][import]") {
  const KStep step = example_step(5, 0);
  const json k = build_kineto({step}, KBuild{});
  const KinetoImport imp = import_kineto(k, "rank3.json", {});
  check_matches(imp, expect(step));
  // The same numbers by hand: origin = the buffer broadcast at 50 us; K2 (launched at 420 us, before
  // the first allreduce at 430 us) ends at 850 us, K5 at 1450 us, K6 at 1650 us.
  REQUIRE(imp.buckets.size() == 3);
  CHECK(imp.buckets[0].ready_s == Approx(800e-6).margin(kEps));
  CHECK(imp.buckets[1].ready_s == Approx(1400e-6).margin(kEps));
  CHECK(imp.buckets[2].ready_s == Approx(1600e-6).margin(kEps));
  CHECK(imp.buckets[0].end_s - imp.buckets[0].start_s == Approx(300e-6).margin(kEps));
  CHECK(imp.buckets[1].end_s - imp.buckets[1].start_s == Approx(400e-6).margin(kEps));
  CHECK(imp.buckets[2].end_s - imp.buckets[2].start_s == Approx(100e-6).margin(kEps));
  CHECK(imp.trace.layers[4].backward_s == Approx(350e-6).margin(kEps));  // interval0: 500..850 us

  // Sizes and dtypes from the kernels' args.
  const std::vector<std::int64_t> numel{262144, 6553600, 1000};
  for (std::size_t b = 0; b < 3; ++b) {
    CHECK(imp.buckets[b].numel == numel[b]);
    CHECK(imp.buckets[b].dtype == DType::fp32);
    CHECK(imp.buckets[b].dtype_known);
    CHECK(imp.buckets[b].size_from == "the kernel's args");
    CHECK(imp.trace.params[2 - b].numel == numel[b]);
    CHECK(imp.trace.params[2 - b].dtype == DType::fp32);
  }
  CHECK(imp.sizes_known);
  CHECK(imp.trace.params[2].bytes() == 1 * 1024 * 1024);
  CHECK(imp.trace.params[1].bytes() == 25 * 1024 * 1024);
  // DDP's buffer broadcast becomes a buffer.
  REQUIRE(imp.trace.buffers.size() == 1);
  CHECK(imp.trace.buffers[0].numel == 500);
  CHECK(imp.trace.buffers[0].dtype == DType::fp32);
  // Where and who.
  CHECK(imp.device == "NVIDIA H100 80GB HBM3");
  CHECK(imp.trace.reference_device == "NVIDIA H100 80GB HBM3");
  CHECK(imp.rank == 3);
  CHECK(imp.world_size == 8);
  CHECK(imp.steps == std::vector<std::int64_t>{5});
  CHECK(imp.trace.model == "rank3");
  CHECK(imp.warnings.empty());
  CHECK_THAT(imp.trace.source, Catch::Contains("synthetic parameter"));
  // The trace is a valid trace file.
  CHECK(trace_to_json(trace_from_json(trace_to_json(imp.trace), "x.json")) == trace_to_json(imp.trace));
}

TEST_CASE("message sizes are found on record_param_comms or in record_shapes' Input Dims", "[trace_tools][import]") {
  const KStep step = example_step(2, 0);
  for (auto style : {SizeStyle::record_param_comms, SizeStyle::input_dims}) {
    KBuild b;
    b.sizes = style;
    const KinetoImport imp = import_kineto(build_kineto({step}, b), "t.json", {});
    check_matches(imp, expect(step));
    REQUIRE(imp.buckets.size() == 3);
    CHECK(imp.buckets[1].numel == 6553600);
    CHECK(imp.buckets[1].size_from == (style == SizeStyle::record_param_comms ? "the args of record_param_comms"
                                                                              : "the Input Dims of nccl:all_reduce"));
    CHECK(imp.sizes_known);
    if (style == SizeStyle::record_param_comms) CHECK(imp.world_size == 8);  // Group size
  }
}

TEST_CASE("bf16 buckets take their dtype from the kernel name", "[trace_tools][import]") {
  KStep step = example_step(1, 0);
  for (auto& c : step.comm) c.dtype = "BFloat16";
  KBuild b;
  b.sizes = SizeStyle::none;
  const KinetoImport imp = import_kineto(build_kineto({step}, b), "t.json", {});
  for (const auto& bk : imp.buckets) {
    CHECK(bk.dtype == DType::bf16);
    CHECK(bk.kernel == "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
  }
}

TEST_CASE("several profiler steps are averaged, or one is picked with --step", "[trace_tools][import]") {
  const std::vector<KStep> steps{example_step(3, 0), example_step(4, 1), example_step(5, 2)};
  const json k = build_kineto(steps, KBuild{});
  const KinetoImport all = import_kineto(k, "t.json", {});
  CHECK(all.steps == std::vector<std::int64_t>{3, 4, 5});
  CHECK(all.step_text == "mean of steps 3-5");
  check_matches(all, mean({expect(steps[0]), expect(steps[1]), expect(steps[2])}));

  KinetoImportOptions o;
  o.step = 4;
  const KinetoImport one = import_kineto(k, "t.json", o);
  CHECK(one.steps == std::vector<std::int64_t>{4});
  check_matches(one, expect(steps[1]));
  // The jitter moved step 4 by 1 us relative to step 3: its mean-free numbers differ.
  CHECK(one.buckets[0].end_s - one.buckets[0].start_s == Approx(301e-6).margin(kEps));

  o.step = 9;
  CHECK(error_of([&] { import_kineto(k, "t.json", o); }) ==
        "t.json: $.traceEvents: no ProfilerStep#9; the trace has steps 3-5");
}

TEST_CASE("a trace without ProfilerStep spans is one step, and a bare event array is a trace", "[trace_tools][import]") {
  const KStep step = example_step(1, 0);
  KBuild b;
  b.profiler_steps = false;
  const json k = build_kineto({step}, b);
  const KinetoImport imp = import_kineto(k, "t.json", {});
  check_matches(imp, expect(step));
  CHECK(imp.steps.empty());
  CHECK(imp.step_text == "the whole trace");
  REQUIRE(imp.warnings.size() == 1);
  CHECK(imp.warnings[0] == "no ProfilerStep#N spans: the whole trace is taken as one step");
  KinetoImportOptions o;
  o.step = 1;
  CHECK_THAT(error_of([&] { import_kineto(k, "t.json", o); }), Catch::Contains("no ProfilerStep#N spans, so --step 1"));

  // The Chrome trace format also allows a bare array of events (no device names then).
  const KinetoImport bare = import_kineto(build_kineto({step}, KBuild{})["traceEvents"], "t.json", {});
  check_matches(bare, expect(step));
  CHECK(bare.device == "GPU 0 (name not in the trace)");
  CHECK(bare.world_size == 8);  // from the kernels' Group size
}

TEST_CASE("steps that reduce different buckets are not averaged", "[trace_tools][import]") {
  KStep first = example_step(1, 0);
  KStep second = example_step(2, 0);
  // DDP's first iteration: definition-order buckets, here two instead of three.
  first.comm.pop_back();
  first.comm.back().numel = 6553600 + 1000;
  const json k = build_kineto({first, second}, KBuild{});
  const auto msg = error_of([&] { import_kineto(k, "t.json", {}); });
  CHECK_THAT(
      msg, Catch::StartsWith("t.json: $.traceEvents: ProfilerStep#2 reduces 3 gradient buckets and ProfilerStep#1 2"));
  CHECK_THAT(msg, Catch::Contains("--step"));
  KinetoImportOptions o;
  o.step = 2;
  check_matches(import_kineto(k, "t.json", o), expect(second));
}

TEST_CASE("without message sizes the timing is kept and the sizes are declared unknown", "[trace_tools][import]") {
  const KStep step = example_step(7, 0);
  KBuild b;
  b.sizes = SizeStyle::none;
  const KinetoImport imp = import_kineto(build_kineto({step}, b), "t.json", {});
  check_matches(imp, expect(step));
  CHECK_FALSE(imp.sizes_known);
  for (const auto& bk : imp.buckets) {
    CHECK(bk.numel == 0);
    CHECK(bk.dtype == DType::fp32);  // from the kernel name
    CHECK(bk.dtype_known);
  }
  for (const auto& p : imp.trace.params) CHECK(p.numel == 1);  // the stated placeholder
  REQUIRE_FALSE(imp.warnings.empty());
  bool said = false;
  for (const auto& w : imp.warnings) said = said || w.find("cannot be recovered") != std::string::npos;
  CHECK(said);
  CHECK_THAT(imp.trace.source, Catch::Contains("Not recovered: ") && Catch::Contains("cannot be recovered"));
  // Without Group size args the world size still comes from distributedInfo.
  CHECK(imp.world_size == 8);
  CHECK(imp.trace.buffers.empty());  // the broadcast's size is unknown too
}

TEST_CASE("the measured Timeline follows the bucketed Plan of the imported trace op by op", "[trace_tools][import]") {
  const KStep step = example_step(5, 0);
  const KinetoImport imp = import_kineto(build_kineto({step}, KBuild{}), "t.json", {});
  const Expected e = expect(step);
  const Knobs knobs = imported_bucket_knobs(imp);
  CHECK(knobs.bucket_order == BucketOrder::execution);
  CHECK(knobs.bucket_cap_bytes == 4000);  // the smallest bucket: 1000 fp32
  CHECK(knobs.first_bucket_cap_bytes == 4000);
  ClusterSpec cluster;
  cluster.nodes = 1;
  cluster.devices_per_node = imp.world_size;
  const Plan plan = make_strategy("bucketed")->plan(imp.trace, cluster, knobs);
  const Timeline tl = imported_timeline(plan, imp);
  REQUIRE(tl.world_size == 1);
  REQUIRE(tl.op_count == plan.ops.size());
  std::size_t allreduces = 0, broadcasts = 0;
  for (const auto& op : plan.ops) {
    const auto& t = tl.at(0, op.id);
    INFO(op.name);
    CHECK(t.start_s <= t.end_s);
    if (op.kind == OpKind::allreduce) {
      const auto k = static_cast<std::size_t>(op.bucket);
      CHECK(op.name == "allreduce:bucket" + std::to_string(k));
      CHECK(op.bytes == e.numel[k] * 4);
      CHECK(t.start_s == Approx(e.start[k] * 1e-6).margin(kEps));
      CHECK(t.end_s == Approx(e.end[k] * 1e-6).margin(kEps));
      CHECK(t.ready_s == Approx(std::max(e.ready[k], k == 0 ? 0.0 : e.end[k - 1]) * 1e-6).margin(kEps));
      // nccl-tests' bus bytes of a ring allreduce over 8 ranks: 2 * 7/8 of the buffer each way.
      CHECK(t.bytes_sent == e.numel[k] * 4 * 2 * 7 / 8);
      CHECK(t.bytes_received == t.bytes_sent);
      ++allreduces;
    } else if (op.kind == OpKind::broadcast) {
      CHECK(op.bytes == 2000);
      CHECK(t.start_s == Approx(e.bcast_start[0] * 1e-6).margin(kEps));
      CHECK(t.end_s == Approx(e.bcast_end[0] * 1e-6).margin(kEps));
      CHECK(t.bytes_received == 2000);  // rank 3 is not the root
      ++broadcasts;
    } else if (op.name == "optimizer") {
      CHECK(t.start_s == Approx(e.opt_start * 1e-6).margin(kEps));
      CHECK(t.end_s == Approx(e.opt_end * 1e-6).margin(kEps));
    } else if (op.name == "bwd:interval1") {
      CHECK(t.start_s == Approx(e.ready[0] * 1e-6).margin(kEps));
      CHECK(t.end_s == Approx(e.ready[1] * 1e-6).margin(kEps));
    } else if (op.name == "fwd:forward_pass") {
      CHECK(t.start_s == Approx(e.fwd_start * 1e-6).margin(kEps));
      CHECK(t.end_s == Approx(e.fwd_end * 1e-6).margin(kEps));
    }
  }
  CHECK(allreduces == 3);
  CHECK(broadcasts == 1);
  const StepSummary s = summarize(plan, tl);
  CHECK(s.step_time_s == Approx(e.opt_end * 1e-6).margin(kEps));
  REQUIRE(s.collectives.size() == 4);
}

TEST_CASE("gzip-compressed and plain traces read the same, and broken ones are errors", "[trace_tools][import]") {
  TempDir dir;
  const KStep step = example_step(5, 0);
  const std::string text = build_kineto({step}, KBuild{}).dump();
  write_file(dir / "plain.json", text);
  write_gzip(dir / "rank0.json.gz", text);
  CHECK(read_text_file_maybe_gzip(dir / "rank0.json.gz") == text);
  CHECK(read_text_file_maybe_gzip(dir / "plain.json") == text);
  const auto a = import_kineto_file(dir / "plain.json", {});
  const auto b = import_kineto_file(dir / "rank0.json.gz", {});
  CHECK(trace_to_json(a.trace)["layers"] == trace_to_json(b.trace)["layers"]);
  CHECK(b.trace.model == "rank0");

  // A truncated download.
  const std::string gz = read_file(dir / "rank0.json.gz");
  write_file(dir / "cut.json.gz", gz.substr(0, gz.size() / 2));
  CHECK_THAT(error_of([&] { read_text_file_maybe_gzip(dir / "cut.json.gz"); }),
             Catch::StartsWith(dir / "cut.json.gz" + ": cannot read: "));
  CHECK(error_of([&] { read_text_file_maybe_gzip(dir / "missing.json"); }) ==
        dir / "missing.json" + ": cannot open file for reading");
}

TEST_CASE("malformed profiler traces get one-line errors naming the JSON path", "[trace_tools][import]") {
  const json good = build_kineto({example_step(5, 0)}, KBuild{});
  auto err = [](const json& j) { return error_of([&] { import_kineto(j, "bad.json", {}); }); };

  CHECK(error_of([] { import_kineto_file("/nonexistent/x.json", {}); }) ==
        "/nonexistent/x.json: cannot open file for reading");
  CHECK_THAT(error_of([] { import_kineto(JsonIn::parse_text("{\"traceEvents\": [", "bad.json"), "bad.json", {}); }),
             Catch::StartsWith("bad.json: $: malformed JSON at line 1"));
  CHECK(err(json(42)) ==
        "bad.json: $: expected a Chrome trace: an object with \"traceEvents\", or an array of events, got 42");
  CHECK(err(json::object()) == "bad.json: $.traceEvents: missing required member");
  CHECK(err({{"traceEvents", json::object()}}) == "bad.json: $.traceEvents: expected an array, got {}");

  json j = good;
  j["traceEvents"][4] = "oops";
  CHECK(err(j) == "bad.json: $.traceEvents[4]: expected an object, got \"oops\"");

  j = good;
  auto i = index_of_first(j, is_nccl_allreduce);
  j["traceEvents"][i]["dur"] = -3;
  CHECK(err(j) == "bad.json: $.traceEvents[" + std::to_string(i) + "].dur: expected a non-negative number, got -3");

  j = good;
  i = index_of_first(j, is_kernel);
  j["traceEvents"][i]["ts"] = "soon";
  CHECK(err(j) == "bad.json: $.traceEvents[" + std::to_string(i) + "].ts: expected a number, got \"soon\"");

  j = good;
  i = index_of_first(j, is_kernel);
  j["traceEvents"][i].erase("ph");
  CHECK(err(j) == "bad.json: $.traceEvents[" + std::to_string(i) + "].ph: missing required member");

  j = good;
  i = index_of_first(j, [](const json& e) { return e.value("name", "") == "ProfilerStep#5"; });
  j["traceEvents"][i]["name"] = "ProfilerStep#five";
  CHECK(err(j) == "bad.json: $.traceEvents[" + std::to_string(i) +
                      "].name: expected \"ProfilerStep#N\" with N a step number, got \"ProfilerStep#five\"");

  j = good;
  i = index_of_first(j, is_nccl_allreduce);
  j["traceEvents"][i]["args"]["In msg nelems"] = -5;
  CHECK(err(j) == "bad.json: $.traceEvents[" + std::to_string(i) +
                      "].args.In msg nelems: expected a non-negative integer, got -5");

  j = good;
  i = index_of_first(j, [](const json& e) { return e.value("cat", "") == "cuda_runtime"; });
  j["traceEvents"][i]["args"]["correlation"] = "c1";
  CHECK(err(j) ==
        "bad.json: $.traceEvents[" + std::to_string(i) + "].args.correlation: expected an integer, got \"c1\"");

  j = good;
  i = index_of_first(j, is_kernel);
  j["traceEvents"][i]["pid"] = json::array();
  CHECK(err(j) == "bad.json: $.traceEvents[" + std::to_string(i) + "].pid: expected an integer or a string, got []");

  // A trace of a job that never reduced anything.
  j = good;
  auto& ev = j["traceEvents"];
  ev.erase(
      std::remove_if(ev.begin(), ev.end(),
                     [](const json& e) { return is_kernel(e) && e["name"].get<std::string>().rfind("nccl", 0) == 0; }),
      ev.end());
  CHECK_THAT(err(j), Catch::StartsWith("bad.json: $.traceEvents: no NCCL kernels"));

  // NCCL kernels but none launched in backward: not DDP's gradient buckets.
  j = good;
  for (auto& e : j["traceEvents"])
    if (e.value("name", "").rfind("autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", 0) == 0)
      e["name"] = "some_hook";
  CHECK_THAT(err(j), Catch::StartsWith(
                         "bad.json: $.traceEvents: no NCCL allreduce launched during backward in ProfilerStep#5"));
}
