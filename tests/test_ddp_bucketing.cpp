// DDP's bucket rule, checked against PyTorch's own ComputeBucketAssignmentTest expectations
// (test/distributed/test_c10d_common.py) and against an independent walk of ResNet-50.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "core/trace_json.h"
#include "core/units.h"
#include "strategies/ddp_bucketing.h"
#include "tests/test_support.h"

using namespace redsim;

namespace {

// A one-layer trace with tensors of the given element counts and dtypes, registered in order.
ModelTrace tensors(const std::vector<std::pair<std::int64_t, DType>>& spec) {
  ModelTrace t;
  t.model = "tensors";
  t.reference_device = "none";
  t.layers.push_back({"only", 0, 0, std::nullopt, std::nullopt, {}, {}});
  for (std::size_t i = 0; i < spec.size(); ++i) {
    TraceParam p;
    p.name = "t" + std::to_string(i);
    p.numel = spec[i].first;
    p.dtype = spec[i].second;
    t.params.push_back(p);
  }
  t.grad_ready_order = derive_grad_ready_order(t);
  return t;
}

std::vector<std::vector<std::size_t>> indices(const std::vector<GradBucket>& buckets) {
  std::vector<std::vector<std::size_t>> out;
  for (const auto& b : buckets) out.push_back(b.params);
  return out;
}

using V = std::vector<std::vector<std::size_t>>;
constexpr auto f32 = DType::fp32;
constexpr auto f64 = DType::fp64;

}  // namespace

TEST_CASE("PyTorch's bucket assignment cases", "[strategies][bucketing]") {
  // test_single_limit_single_dtype: 400-byte limit, float tensors of 100, 200, 100, 50.
  CHECK(indices(ddp_initial_assignment(tensors({{100, f32}, {200, f32}, {100, f32}, {50, f32}}), {400})) ==
        V{{0}, {1}, {2}, {3}});
  // test_single_limit_multi_dtype
  CHECK(indices(ddp_initial_assignment(
            tensors({{50, f32}, {25, f64}, {50, f32}, {25, f64}, {50, f32}, {25, f64}}), {400})) ==
        V{{0, 2}, {1, 3}, {4}, {5}});
  // test_multi_limit_single_dtype: limits 40 then 80 bytes.
  CHECK(indices(ddp_initial_assignment(tensors({{10, f32}, {10, f32}, {10, f32}, {10, f32}}), {40, 80})) ==
        V{{0}, {1, 2}, {3}});
  // test_multi_limit_multi_dtype: limits 200 then 400 bytes.
  CHECK(indices(ddp_initial_assignment(
            tensors({{50, f32}, {25, f64}, {50, f32}, {25, f64}, {50, f32}, {25, f64}}), {200, 400})) ==
        V{{0}, {1}, {2, 4}, {3, 5}});
}

TEST_CASE("a parameter is never split and excluded or frozen ones are skipped", "[strategies][bucketing]") {
  auto t = tensors({{1000, f32}, {10, f32}, {10, f32}, {10, f32}});
  t.params[1].excluded = true;
  t.params[2].trainable = false;
  t.grad_ready_order = derive_grad_ready_order(t);
  Knobs k;
  k.first_bucket_cap_bytes = 8;
  k.bucket_cap_bytes = 8;
  auto b = ddp_buckets(t, k);
  // Execution order is reverse registration here: t3 then t0, each alone past the 8-byte cap.
  CHECK(indices(b) == V{{3}, {0}});
  CHECK(b[1].bytes == 4000);
}

TEST_CASE("ResNet-50 buckets with DDP defaults", "[strategies][bucketing][resnet50]") {
  auto trace = load_trace(REDSIM_SOURCE_DIR "/traces/resnet50.json");
  Knobs k;  // 25 MiB, first bucket 1 MiB, execution order

  SECTION("execution order (DDP after its first iteration)") {
    auto got = ddp_buckets(trace, k);
    // Independent walk: gradients in ready order, close a bucket once it reaches its cap.
    V expected{{}};
    std::int64_t size = 0, cap = 1 * kMiB;
    for (auto i : trace.grad_ready_order) {
      expected.back().push_back(i);
      size += trace.params[i].numel * 4;
      if (size >= cap) {
        expected.emplace_back();
        size = 0;
        cap = 25 * kMiB;
      }
    }
    if (expected.back().empty()) expected.pop_back();
    CHECK(indices(got) == expected);

    // Facts that follow from ResNet-50's shapes: fc's gradients are ready first, and fc.bias
    // (4 KB) alone is under 1 MiB while fc.bias + fc.weight (8,196,000 B) is over it.
    REQUIRE(got.size() >= 2);
    std::set<std::string> first;
    for (auto i : got[0].params) first.insert(trace.params[i].name);
    CHECK(first == std::set<std::string>{"fc.bias", "fc.weight"});
    CHECK(got[0].bytes == (2048 * 1000 + 1000) * 4);
    std::int64_t total = 0;
    for (std::size_t b = 0; b < got.size(); ++b) {
      total += got[b].bytes;
      if (b + 1 < got.size()) {
        // Closed buckets reached their cap, and did so only with their last tensor.
        CHECK(got[b].bytes >= got[b].size_limit_bytes);
        CHECK(got[b].bytes - trace.params[got[b].params.back()].bytes() < got[b].size_limit_bytes);
      }
    }
    CHECK(total == 25'557'032LL * 4);
  }

  SECTION("definition order (DDP's first iteration)") {
    k.bucket_order = BucketOrder::definition;
    auto got = ddp_buckets(trace, k);
    // Registration order with caps 1 MiB then 25 MiB, then launched in reverse.
    V expected{{}};
    std::int64_t size = 0, cap = 1 * kMiB;
    for (std::size_t i = 0; i < trace.params.size(); ++i) {
      expected.back().push_back(i);
      size += trace.params[i].numel * 4;
      if (size >= cap) {
        expected.emplace_back();
        size = 0;
        cap = 25 * kMiB;
      }
    }
    if (expected.back().empty()) expected.pop_back();
    std::reverse(expected.begin(), expected.end());
    CHECK(indices(got) == expected);
    // The small first bucket holds conv1.weight and is launched last.
    CHECK(trace.params[got.back().params.front()].name == "conv1.weight");
  }
}
