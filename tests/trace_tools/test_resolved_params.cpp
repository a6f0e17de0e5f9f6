// trace import --params-from (trace_tools/resolved_params.h): the real resnet50 profile of
// HolisticTraceAnalysis (2 A100s, PyTorch's 25 MiB buckets) with the bundled resnet50 trace's
// parameters. What is checked follows from DDP's rule applied to the model trace (a reference
// computation, strategies/ddp_bucketing.h), from conservation of the measured times, or from the
// file's own numbers; nothing is copied from the import's output.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/trace_batch.h"
#include "core/trace_json.h"
#include "core/units.h"
#include "strategies/ddp_bucketing.h"
#include "trace_tools/grad_ready.h"
#include "trace_tools/imported_run.h"
#include "trace_tools/kineto_import.h"
#include "trace_tools/resolved_params.h"
#include "tool_runner.h"

using namespace redsim;
using namespace redsim::testing;

namespace {
const std::string kSource = REDSIM_SOURCE_DIR;
const std::string kProfile = kSource + "/tests/data/profiles/hta_resnet50_ddp_2xa100_rank0.json.gz";
const std::string kResnet50 = kSource + "/traces/resnet50.json";
constexpr std::int64_t kResnet50Params = 25'557'032;  // torchvision's count
constexpr std::size_t kResnet50Tensors = 161;         // 53 convolutions, 53 batch norms x 2, fc x 2

KinetoImport resolved(const ModelTrace& model, double slowdown = 1, std::int64_t cap = 25 * kMiB) {
  KinetoImportOptions o;
  o.compute_slowdown = slowdown;
  KinetoImport imp = import_kineto_file(kProfile, o);
  resolve_params(imp, {&model, kResnet50, cap, 1 * kMiB});
  return imp;
}

double backward_sum_s(const ModelTrace& t) {
  double s = 0;
  for (const auto& l : t.layers) s += l.backward_s;
  return s;
}

Knobs bucketed(std::int64_t cap) {
  Knobs k;
  k.strategy = "bucketed";
  k.bucket_order = BucketOrder::execution;
  k.bucket_cap_bytes = cap;
  k.first_bucket_cap_bytes = 1 * kMiB;
  return k;
}
}  // namespace

TEST_CASE("trace import --params-from: resnet50's own parameters in the real profile's buckets",
          "[trace_tools][import][resolve]") {
  const ModelTrace model = load_trace(kResnet50);
  const KinetoImport synthetic = import_kineto_file(kProfile, {});
  const KinetoImport imp = resolved(model);
  const ModelTrace& t = imp.trace;

  REQUIRE(t.params.size() == kResnet50Tensors);
  std::int64_t numel = 0;
  for (std::size_t i = 0; i < t.params.size(); ++i) {
    numel += t.params[i].numel;
    CHECK(t.params[i].name == model.params[i].name);
  }
  CHECK(numel == kResnet50Params);

  // DDP's rule at the job's caps makes the profile's buckets from the trace, as from the model.
  const auto buckets = ddp_buckets(t, bucketed(25 * kMiB));
  REQUIRE(buckets.size() == synthetic.buckets.size());
  for (std::size_t b = 0; b < buckets.size(); ++b) CHECK(buckets[b].numel == synthetic.buckets[b].numel);

  // Every bucket is ready when it was measured: its last gradient, by the trace's own rule (layers
  // run last to first from the start of backward), at the bucket's measured ready time.
  std::vector<double> ready(t.params.size(), 0.0);
  for (const auto& g : grad_ready_times(t)) ready[g.param] = g.ready_s;
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    double last = 0;
    for (auto p : buckets[b].params) last = std::max(last, ready[p]);
    CHECK(last == Approx(synthetic.buckets[b].ready_s - synthetic.backward_start_s).margin(1e-9));
  }
  // Inside a bucket, each gradient is ready where the model's own ready time falls between the
  // bucket's first and last, mapped linearly onto the measured interval.
  std::vector<double> model_ready(model.params.size(), 0.0);
  for (const auto& g : grad_ready_times(model)) model_ready[g.param] = g.ready_s;
  double model_prev = 0, measured_prev = 0;
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    double model_end = 0;
    for (auto p : buckets[b].params) model_end = std::max(model_end, model_ready[p]);
    const double measured_end = synthetic.buckets[b].ready_s - synthetic.backward_start_s;
    for (auto p : buckets[b].params)
      CHECK(ready[p] == Approx(measured_prev + (model_ready[p] - model_prev) / (model_end - model_prev) *
                                                   (measured_end - measured_prev))
                            .margin(1e-9));
    model_prev = model_end, measured_prev = measured_end;
  }
  // The measured backward, conserved; forward and optimizer unchanged.
  CHECK(backward_sum_s(t) == Approx(backward_sum_s(synthetic.trace)).epsilon(1e-12));
  CHECK(t.layers[0].forward_s == synthetic.trace.layers[0].forward_s);
  CHECK(t.optimizer_s == synthetic.trace.optimizer_s);

  // The measured Timeline of the resolved trace times the same buckets as the synthetic one.
  const ImportedRun run = imported_run(imp), run0 = imported_run(synthetic);
  CHECK(run.summary.step_time_s == Approx(run0.summary.step_time_s).epsilon(1e-12));
  CHECK(run.summary.exposed_comm_s == Approx(run0.summary.exposed_comm_s).epsilon(1e-12));
}

TEST_CASE("trace import --params-from: the resolved trace re-buckets, the synthetic one cannot",
          "[trace_tools][import][resolve]") {
  const ModelTrace model = load_trace(kResnet50);
  const KinetoImport imp = resolved(model);
  const KinetoImport synthetic = import_kineto_file(kProfile, {});
  for (std::int64_t cap : {1 * kMiB, 5 * kMiB, 100 * kMiB}) {
    INFO("cap " << cap);
    // The model's own buckets at that cap, by DDP's rule on the model trace.
    const auto want = ddp_buckets(model, bucketed(cap));
    const auto got = ddp_buckets(imp.trace, bucketed(cap));
    REQUIRE(got.size() == want.size());
    for (std::size_t b = 0; b < got.size(); ++b) CHECK(got[b].numel == want[b].numel);
    // One synthetic parameter per bucket: never split, and below its size each one closes a bucket.
    CHECK(ddp_buckets(synthetic.trace, bucketed(cap)).size() == (cap <= 5 * kMiB ? synthetic.buckets.size() : 2u));
  }
}

TEST_CASE("trace import --params-from: interference taken out of a bucket's interval is shared by its layers",
          "[trace_tools][import][resolve]") {
  const ModelTrace model = load_trace(kResnet50);
  KinetoImportOptions o;
  o.compute_slowdown = 1.5;
  const KinetoImport synthetic = import_kineto_file(kProfile, o);
  const KinetoImport imp = resolved(model, 1.5);
  CHECK(synthetic.taken_out.total_s() > 0);
  CHECK(backward_sum_s(imp.trace) == Approx(backward_sum_s(synthetic.trace)).epsilon(1e-9));
}

namespace {
// The model's spans at `batch`, computed here from the model trace alone: its forward, each
// bucket's stretch of backward (from the previous bucket's last gradient to its own) and the
// backward after the last bucket.
struct Spans {
  double forward_s = 0, tail_s = 0;
  std::vector<double> bucket_s;
};
Spans model_spans(const ModelTrace& model, std::int64_t batch) {
  const ModelTrace m = trace_at_batch(model, batch, kResnet50);
  std::vector<double> ready(m.params.size(), 0.0);
  for (const auto& g : grad_ready_times(m)) ready[g.param] = g.ready_s;
  Spans s;
  double backward = 0, prev = 0;
  for (const auto& l : m.layers) s.forward_s += l.forward_s, backward += l.backward_s;
  for (const auto& b : ddp_buckets(m, bucketed(25 * kMiB))) {
    double end = prev;
    for (auto p : b.params) end = std::max(end, ready[p]);
    s.bucket_s.push_back(end - prev);
    prev = end;
  }
  s.tail_s = backward - prev;
  return s;
}
}  // namespace

TEST_CASE("trace import --params-from carries the model's batch curve when the profiled batch is known",
          "[trace_tools][import][resolve][curve]") {
  const ModelTrace model = load_trace(kResnet50);
  REQUIRE_FALSE(model.curve_batch_sizes.empty());
  KinetoImportOptions o;
  o.batch_size_per_rank = 64;
  KinetoImport imp = import_kineto_file(kProfile, o);
  const KinetoImport synthetic = imp;
  ResolveOptions r{&model, kResnet50, 25 * kMiB, 1 * kMiB};
  r.batch_known = true;
  resolve_params(imp, r);
  const ModelTrace& t = imp.trace;
  REQUIRE(t.curve_batch_sizes == model.curve_batch_sizes);  // 64 is already one of the model's
  const Spans at64 = model_spans(model, 64);
  const auto buckets = ddp_buckets(t, bucketed(25 * kMiB));
  for (std::size_t i = 0; i < t.curve_batch_sizes.size(); ++i) {
    const std::int64_t B = t.curve_batch_sizes[i];
    INFO("batch " << B);
    const Spans at = model_spans(model, B);
    // forward_pass and backward_tail scale as the model's forward and its backward after the buckets.
    CHECK(t.layers[0].forward_s_by_batch[i] == Approx(t.layers[0].forward_s * at.forward_s / at64.forward_s));
    CHECK(t.layers[1].backward_s_by_batch[i] == Approx(t.layers[1].backward_s * at.tail_s / at64.tail_s));
    // Each bucket's layers together scale as the model's backward in that bucket.
    for (std::size_t b = 0; b < buckets.size(); ++b) {
      double sum = 0;
      std::vector<bool> seen(t.layers.size(), false);
      for (auto p : buckets[b].params) {
        const std::size_t l = t.params[p].layer;
        if (!seen[l]) seen[l] = true, sum += t.layers[l].backward_s_by_batch[i];
      }
      const double prev = b == 0 ? synthetic.backward_start_s : synthetic.buckets[b - 1].ready_s;
      const double interval = synthetic.buckets[b].ready_s - prev;
      CHECK(sum == Approx(interval * at.bucket_s[b] / at64.bucket_s[b]).epsilon(1e-9));
    }
  }
  // Without the profiled batch there is no curve, and a warning says so.
  KinetoImport unknown = import_kineto_file(kProfile, {});
  resolve_params(unknown, {&model, kResnet50, 25 * kMiB, 1 * kMiB});
  CHECK(unknown.trace.curve_batch_sizes.empty());
  bool warned = false;
  for (const auto& w : unknown.warnings) warned = warned || w.find("give --batch-size") != std::string::npos;
  CHECK(warned);
}

TEST_CASE("trace import --params-from refuses parameters that do not make the profile's buckets",
          "[trace_tools][import][resolve]") {
  const ModelTrace model = load_trace(kResnet50);
  // At 10 MiB DDP makes other buckets from resnet50: the message names the trace, the path and both lists.
  try {
    resolved(model, 1, 10 * kMiB);
    FAIL("no error");
  } catch (const InputError& e) {
    const std::string what = e.what();
    CHECK_THAT(what, Catch::Contains(kResnet50) && Catch::Contains("$.params") && Catch::Contains("10 MiB") &&
                         Catch::Contains("[2049000, 7875584, 6563840, 6637568, 2431040]"));
  }
  // Another model.
  const ModelTrace bert = load_trace(kSource + "/traces/bert-large.json");
  KinetoImport imp = import_kineto_file(kProfile, {});
  CHECK_THROWS_AS(resolve_params(imp, {&bert, "bert-large.json", 25 * kMiB, 1 * kMiB}), InputError);
  // A profile whose bucket sizes are unknown cannot be matched.
  KinetoImport unsized = import_kineto_file(kProfile, {});
  unsized.sizes_known = false;
  CHECK_THROWS_WITH(resolve_params(unsized, {&model, kResnet50, 25 * kMiB, 1 * kMiB}),
                    Catch::Contains("record_shapes"));
}

TEST_CASE("trace import --params-from from the command line: validates, then predicts other bucket sizes",
          "[trace_tools][import][resolve][e2e]") {
  TempDir dir;
  auto r = run_redsim("trace import --kineto " + quote(kProfile) + " --params-from " + quote(kResnet50) +
                          " --batch-size 64 --compute-slowdown sm_share --out " + quote(dir / "t.json") + " --measured " +
                          quote(dir / "m.json"),
                      dir);
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("161 parameters of"));
  // The resolved trace keeps what the import said of its compute: timed alone for the preset's rule.
  CHECK_FALSE(load_trace(dir / "t.json").compute_beside_collectives);
  const std::string cluster = kSource + "/configs/dgx-a100.json";
  r = run_redsim("validate --trace " + quote(dir / "t.json") + " --cluster " + quote(cluster) +
                     " --layout 1x2 --compute-scale 1 --config " + quote(dir / "m.json") + " --measured " +
                     quote(dir / "m.json"),
                 dir);
  INFO(r.out << r.err);
  CHECK(r.status == 0);
  // At 1 MiB the plan has the model's own number of buckets at that cap.
  const auto want = ddp_buckets(load_trace(kResnet50), bucketed(1 * kMiB)).size();
  r = run_redsim("simulate --trace " + quote(dir / "t.json") + " --cluster " + quote(cluster) +
                     " --layout 1x2 --compute-scale 1 --strategy bucketed --bucket-mb 1 --out " + quote(dir / "s.json"),
                 dir);
  REQUIRE(r.status == 0);
  std::size_t allreduces = 0;
  const auto result = nlohmann::json::parse(read_file(dir / "s.json"));
  for (const auto& c : result["summary"]["collectives"])
    allreduces += c["kind"] == "allreduce" ? 1 : 0;
  CHECK(allreduces == want);
  // At 1 MiB the plan is not the measured one: validate refuses the timeline unless asked to
  // compare step times alone, and then compares with the measured steps' median.
  const std::string at_1mib = "validate --trace " + quote(dir / "t.json") + " --cluster " + quote(cluster) +
                              " --layout 1x2 --compute-scale 1 --strategy bucketed --bucket-mb 1";
  r = run_redsim(at_1mib + " --measured " + quote(dir / "m.json"), dir);
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("--step-times-only"));
  r = run_redsim(at_1mib + " --measured " + quote(dir / "m.json") + " --step-times-only", dir);
  INFO(r.out << r.err);
  CHECK((r.status == 0 || r.status == 1));
  const auto measured = nlohmann::json::parse(read_file(dir / "m.json"));
  std::vector<double> steps = measured["measurement"]["step_times_s"];
  std::sort(steps.begin(), steps.end());
  char want_ms[64];
  std::snprintf(want_ms, sizeof want_ms, "measured %.3f ms median", steps[steps.size() / 2] * 1e3);
  CHECK_THAT(r.out, Catch::Contains("step times only") && Catch::Contains(want_ms));
  r = run_redsim(at_1mib + " --step-times-only --ranks 2", dir);
  CHECK(r.status == 2);
  // --bucket-mb without --params-from is a usage error.
  r = run_redsim("trace import --kineto " + quote(kProfile) + " --bucket-mb 5 --out " + quote(dir / "x.json"), dir);
  CHECK(r.status == 2);
  CHECK_FALSE(std::filesystem::exists(dir / "x.json"));
}
