// redsim trace import: where the phases of a step begin and end when the trace says less (no
// launch records: the GPU clock alone) or when the host, not the GPU, is on the step's path (the
// optimizer's host work before its first kernel).
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <string>

#include "kineto_builder.h"
#include "trace_tools/imported_run.h"
#include "trace_tools/kineto_import.h"

using namespace redsim;
using namespace redsim::testing;
using nlohmann::json;

namespace {
constexpr double kEps = 1e-12;  // seconds; the reconstruction is exact up to rounding

double last_comm_end_us(const KStep& s) {
  double end = 0;
  for (const auto& c : s.comm) end = std::max(end, c.start_us + c.dur_us);
  return end;
}
}  // namespace

TEST_CASE("a GPU-only trace is imported from the GPU clock, with its limits stated", "[trace_tools][import]") {
  const KStep step = example_step(1, 0);
  KBuild b;
  b.launches = false;
  const KinetoImport imp = import_kineto(build_kineto({step}, b), "t.json", {});
  // Without launches: optimizer = compute that starts after the last allreduce ends; all other
  // compute is backward; a bucket is ready at the end of the last compute kernel that ended
  // before its allreduce began.
  const double last_comm_end = last_comm_end_us(step);
  const double origin = 50;  // the broadcast, before the first allreduce: forward
  double first = 1e300, bwd_end = 0;
  for (const auto& c : step.compute)
    if (c.start_us < last_comm_end)
      first = std::min(first, c.start_us), bwd_end = std::max(bwd_end, c.start_us + c.dur_us);
  CHECK(imp.forward_end_s - imp.forward_start_s == 0);
  CHECK(imp.backward_start_s == Approx((first - origin) * 1e-6).margin(kEps));
  CHECK(imp.backward_end_s == Approx((bwd_end - origin) * 1e-6).margin(kEps));
  std::size_t k = 0;
  double ready = first;
  for (const auto& c : step.comm) {
    if (c.collective != "allreduce") continue;
    for (const auto& x : step.compute)
      if (x.start_us + x.dur_us <= c.start_us && x.start_us < last_comm_end)
        ready = std::max(ready, x.start_us + x.dur_us);
    REQUIRE(k < imp.buckets.size());
    CHECK(imp.buckets[k].ready_s == Approx((ready - origin) * 1e-6).margin(kEps));
    CHECK(imp.buckets[k].start_s == Approx((c.start_us - origin) * 1e-6).margin(kEps));
    CHECK(imp.buckets[k].end_s == Approx((c.start_us + c.dur_us - origin) * 1e-6).margin(kEps));
    CHECK(imp.buckets[k].numel == c.numel);  // sizes on the kernels' args
    ++k;
  }
  CHECK(k == imp.buckets.size());
  CHECK(imp.optimizer_end_s - imp.optimizer_start_s == Approx(100e-6).margin(kEps));
  bool said = false;
  for (const auto& w : imp.warnings) said = said || w.find("no launch record") != std::string::npos;
  CHECK(said);
}

TEST_CASE("the optimizer's host work before its first kernel counts while the GPU waits for it",
          "[trace_tools][import]") {
  // example_step: the last allreduce ends at 1970 us, the host enters Optimizer.step
  // kOptimizerOpLeadUs before the first optimizer launch (2000 us), whose kernel starts at 2050.
  KStep idle = example_step(1, 0);
  REQUIRE(last_comm_end_us(idle) == 1970);
  const double origin = 50;  // DDP's buffer broadcast
  const double entered = 2000 - kOptimizerOpLeadUs;
  const KinetoImport a = import_kineto(build_kineto({idle}, KBuild{}), "t.json", {});
  CHECK(a.optimizer_start_s == Approx((entered - origin) * 1e-6).margin(kEps));
  CHECK(a.optimizer_end_s == Approx((2110 + 40 - origin) * 1e-6).margin(kEps));
  CHECK(a.trace.optimizer_s == Approx((2150 - entered) * 1e-6).margin(kEps));

  // The last allreduce still runs when the host enters: the optimizer's time begins at its end.
  KStep busy = example_step(1, 0);
  busy.comm.back().dur_us = 2020 - busy.comm.back().start_us;
  const KinetoImport b = import_kineto(build_kineto({busy}, KBuild{}), "t.json", {});
  CHECK(b.optimizer_start_s == Approx((2020 - origin) * 1e-6).margin(kEps));

  // The host enters after the GPU's first optimizer kernel could not have: never later than it.
  KStep late = example_step(1, 0);
  late.comm.back().dur_us = 2080 - late.comm.back().start_us;  // ends after 2050
  const KinetoImport c = import_kineto(build_kineto({late}, KBuild{}), "t.json", {});
  CHECK(c.optimizer_start_s == Approx((2050 - origin) * 1e-6).margin(kEps));

  // Without launch records nothing says when the host entered: the first kernel starts it.
  KBuild gpu_only;
  gpu_only.launches = false;
  const KinetoImport d = import_kineto(build_kineto({idle}, gpu_only), "t.json", {});
  CHECK(d.optimizer_end_s - d.optimizer_start_s == Approx(100e-6).margin(kEps));
}

TEST_CASE("the profile's gradient tensors are spread over the synthetic parameters by their bytes",
          "[trace_tools][import]") {
  KStep s = example_step(1, 0);
  s.accumulate_grads = 47;  // and one around each of the 3 allreduce launches
  const KinetoImport imp = import_kineto(build_kineto({s}, KBuild{}), "t.json", {});
  CHECK(imp.grad_tensors == 50);
  // One each, and the other 47 in proportion to 1 MiB, 25 MiB and 4000 bytes: 1.81, 45.19 and
  // 0.01, so 1 and 45 whole, and the last one to the largest remainder (bucket 0's 0.81).
  std::map<std::string, std::int64_t> tensors;
  std::int64_t sum = 0;
  for (const auto& p : imp.trace.params) tensors[p.name] = p.tensors, sum += p.tensors;
  CHECK(sum == 50);
  CHECK(tensors == std::map<std::string, std::int64_t>{{"bucket0", 3}, {"bucket1", 46}, {"bucket2", 1}});
  // As many tensors as buckets (the AccumulateGrad around each launch): one each.
  const KinetoImport three = import_kineto(build_kineto({example_step(1, 0)}, KBuild{}), "t.json", {});
  CHECK(three.grad_tensors == 3);
  for (const auto& p : three.trace.params) CHECK(p.tensors == 1);
  // A GPU-only trace has no host ops: each synthetic parameter stands for one tensor.
  KBuild gpu_only;
  gpu_only.launches = false;
  const KinetoImport bare = import_kineto(build_kineto({s}, gpu_only), "t.json", {});
  CHECK(bare.grad_tensors == 0);
  for (const auto& p : bare.trace.params) CHECK(p.tensors == 1);
}

TEST_CASE("a bucket's channels are its NCCL kernel's grid, where the profile gives one", "[trace_tools][import]") {
  KStep s = example_step(1, 0);
  s.comm[1].channels = 16;  // bucket 0's allreduce (comm[0] is the buffer broadcast)
  const KinetoImport imp = import_kineto(build_kineto({s}, KBuild{}), "t.json", {});
  REQUIRE(imp.buckets.size() == 3);
  CHECK(imp.buckets[0].channels == 16);
  CHECK(imp.buckets[1].channels == 0);  // no grid: unknown
  // The measured plan's ops carry it (the summary, the result JSON and the timeline read it there).
  const ImportedRun run = imported_run(imp);
  for (const auto& op : run.plan.ops)
    if (op.kind == OpKind::allreduce) CHECK(op.channels == (op.bucket == 0 ? 16 : 1));
}
