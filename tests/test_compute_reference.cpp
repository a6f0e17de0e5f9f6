// Which factor divides a trace's compute times on a cluster (core/compute_reference.h), and that
// planning applies it: a trace timed on the cluster's own device is never scaled, one timed on the
// device's speedup_reference is divided by compute_speedup, anything else needs --compute-scale.
#include <catch2/catch.hpp>

#include "core/compute_reference.h"
#include "core/error.h"
#include "strategies/strategy.h"
#include "test_support.h"

using namespace redsim;

namespace {

ClusterSpec h100_like() {
  ClusterSpec c = testing::ideal_nvswitch(2, 100e9, 1e-6);
  c.device.name = "H100-SXM5-80GB";
  c.device.aliases = {"NVIDIA H100 80GB HBM3"};
  c.device.compute_speedup = 3.17;
  c.device.speedup_reference = "A100-SXM4-80GB";
  return c;
}

ModelTrace timed_on(const std::string& device) {
  ModelTrace t = testing::uniform_trace(4, 1 << 20, 1e-3, 2e-3, 0.5e-3);
  t.reference_device = device;
  return t;
}

double total_compute_s(const Plan& plan) {
  double s = 0;
  for (const auto& op : plan.ops)
    if (op.kind == OpKind::forward || op.kind == OpKind::backward) s += op.duration_s;
  return s;
}

}  // namespace

TEST_CASE("device names compare without case, spacing or vendor word") {
  CHECK(normalized_device_name("NVIDIA A100-SXM4-80GB") == "a100-sxm4-80gb");
  CHECK(normalized_device_name("  Tesla   V100-SXM2-32GB ") == "v100-sxm2-32gb");
  CHECK(normalized_device_name("CPU Intel(R) Xeon(R) (2 threads)") == "cpu intel(r) xeon(r) (2 threads)");
}

TEST_CASE("the cluster's own device needs no factor, its reference gets compute_speedup") {
  const auto c = h100_like();
  CHECK(compute_divisor(timed_on("H100-SXM5-80GB"), "t.json", c, "c.json", std::nullopt) == 1.0);
  // torch.cuda.get_device_name() on an H100 SXM says this; the alias makes it the same device.
  CHECK(compute_divisor(timed_on("NVIDIA H100 80GB HBM3"), "t.json", c, "c.json", std::nullopt) == 1.0);
  CHECK(compute_divisor(timed_on("NVIDIA A100-SXM4-80GB"), "t.json", c, "c.json", std::nullopt) == 3.17);
  // --compute-scale overrides whatever the devices say.
  CHECK(compute_divisor(timed_on("NVIDIA H100 80GB HBM3"), "t.json", c, "c.json", 2.0) == 2.0);
}

TEST_CASE("a CPU trace on a GPU cluster is refused unless the factor is stated") {
  const auto c = h100_like();
  const auto cpu = timed_on("CPU Intel(R) Xeon(R) Platinum 8375C (2 threads)");
  try {
    compute_divisor(cpu, "cpu_trace.json", c, "h100.json", std::nullopt);
    FAIL("a CPU trace was accepted on an H100 cluster");
  } catch (const InputError& e) {
    const std::string msg = e.what();
    CHECK(msg.find("cpu_trace.json: $.reference_device: ") == 0);
    CHECK(msg.find("h100.json") != std::string::npos);
    CHECK(msg.find("--compute-scale") != std::string::npos);
  }
  CHECK(compute_divisor(cpu, "cpu_trace.json", c, "h100.json", 40.0) == 40.0);
  CHECK_THROWS_AS(compute_divisor(cpu, "t", c, "c", 0.0), InputError);
}

TEST_CASE("an emulated device (\"*\") runs any trace with its own factor") {
  auto c = h100_like();
  c.device.name = "cpu-rank";
  c.device.aliases.clear();
  c.device.compute_speedup = 1.0;
  c.device.speedup_reference = "*";
  CHECK(compute_divisor(timed_on("CPU anything"), "t", c, "c", std::nullopt) == 1.0);
}

TEST_CASE("planning divides by the resolved factor exactly once") {
  const auto c = h100_like();
  const auto a100 = timed_on("NVIDIA A100-SXM4-80GB");
  const auto h100 = timed_on("NVIDIA H100 80GB HBM3");
  double traced_s = 0;
  for (const auto& l : a100.layers) traced_s += l.forward_s + l.backward_s;
  Knobs k;
  const auto plan_a = make_strategy("bucketed")->plan(a100, cluster_for_trace(a100, "t", c, "c", std::nullopt), k);
  const auto plan_h = make_strategy("bucketed")->plan(h100, cluster_for_trace(h100, "t", c, "c", std::nullopt), k);
  CHECK(total_compute_s(plan_a) == Approx(traced_s / 3.17).epsilon(1e-12));
  CHECK(total_compute_s(plan_h) == Approx(traced_s).epsilon(1e-12));
}

// A trace whose compute was measured beside collectives (an imported DDP profile, as measured)
// holds their slowdown already: a cluster that slows such compute again is refused, naming the
// field and the re-import that fixes it; a cluster without that slowdown takes it as it is.
TEST_CASE("compute timed beside collectives is not slowed a second time by the cluster") {
  auto c = h100_like();
  auto t = timed_on("NVIDIA H100 80GB HBM3");
  t.compute_beside_collectives = true;
  CHECK(cluster_for_trace(t, "t.json", c, "c.json", std::nullopt).device.compute_speedup == 1.0);  // no slowdown
  c.interference.compute_slowdown = 1.25;
  CHECK_THROWS_AS(cluster_for_trace(t, "t.json", c, "c.json", std::nullopt), InputError);
  CHECK_THROWS_WITH(cluster_for_trace(t, "t.json", c, "c.json", std::nullopt),
                    Catch::StartsWith("t.json: $.compute_timed: ") && Catch::Contains("c.json") &&
                        Catch::Contains("--compute-slowdown 1.25"));
  c.interference.compute_slowdown = 1.0;
  c.interference.compute_slowdown_sm_share = true;
  c.device.sm_count = 132;
  CHECK_THROWS_WITH(cluster_for_trace(t, "t.json", c, "c.json", std::nullopt),
                    Catch::Contains("--compute-slowdown sm_share"));
  t.compute_beside_collectives = false;  // timed alone: the cluster's rule is what slows it
  CHECK(cluster_for_trace(t, "t.json", c, "c.json", std::nullopt).device.compute_speedup == 1.0);
}
