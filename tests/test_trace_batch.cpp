// A trace evaluated at another batch size from its measured curve (core/trace_batch.h): the
// closed form of a piecewise-linear curve, the trace it gives, and the reader's checks.
#include <functional>
#include <stdexcept>

#include <catch2/catch.hpp>

#include "core/error.h"
#include "core/trace_batch.h"
#include "core/trace_json.h"
#include "tests/test_support.h"

using namespace redsim;
using testing::error_of;
using nlohmann::json;

namespace {
// Two layers measured at 4, 8 and 16 samples; the trace's own batch is 8.
json curved_trace() {
  return json::parse(R"({"format":"redsim-trace","version":1,"model":"m","reference_device":"d",
    "batch_size_per_rank":8,"optimizer_s":0.003,"curve_batch_sizes":[4,8,16],
    "layers":[{"name":"a","forward_s":0.010,"backward_s":0.020,"activation_bytes":800,"input_bytes":80,
               "forward_s_by_batch":[0.006,0.010,0.018],"backward_s_by_batch":[0.012,0.020,0.036]},
              {"name":"b","forward_s":0.002,"backward_s":0.004,"activation_bytes":8,"input_bytes":0,
               "forward_s_by_batch":[0.002,0.002,0.002],"backward_s_by_batch":[0.001,0.004,0.012]}],
    "params":[{"name":"a.w","numel":10,"dtype":"fp32","layer":"a"}]})");
}
}  // namespace

TEST_CASE("a batch curve is linear between its points and along its end segments beyond them", "[core][trace]") {
  const std::vector<std::int64_t> b{8, 32, 64};
  const std::vector<double> t{0.010, 0.022, 0.030};
  CHECK(curve_time_s(b, t, 8) == Approx(0.010));
  CHECK(curve_time_s(b, t, 32) == Approx(0.022));
  // 16 is a third of the way from 8 to 32: 10 + (22 - 10) / 3 ms.
  CHECK(curve_time_s(b, t, 16) == Approx(0.014));
  // 48 is half way from 32 to 64.
  CHECK(curve_time_s(b, t, 48) == Approx(0.026));
  // Below 8 the first segment's line: 0.5 ms a sample, so a fixed part of 6 ms at batch 0.
  CHECK(curve_time_s(b, t, 1) == Approx(0.0065));
  // Above 64 the last segment's: 0.25 ms a sample.
  CHECK(curve_time_s(b, t, 128) == Approx(0.046));
  // A line that would fall below zero stops at zero.
  CHECK(curve_time_s({8, 16}, {0.001, 0.009}, 1) == 0.0);
}

TEST_CASE("trace_at_batch gives the curve's times, scales the bytes and keeps the optimizer", "[core][trace]") {
  const auto t = trace_from_json(curved_trace(), "c.json");
  REQUIRE(t.curve_batch_sizes == std::vector<std::int64_t>{4, 8, 16});

  const auto at4 = trace_at_batch(t, 4, "c.json");
  CHECK(at4.batch_size_per_rank == 4);
  CHECK(at4.layers[0].forward_s == Approx(0.006));
  CHECK(at4.layers[1].backward_s == Approx(0.001));
  CHECK(at4.optimizer_s == 0.003);
  CHECK(*at4.layers[0].activation_bytes == 400);  // half the samples, half the saved bytes
  CHECK(*at4.layers[0].input_bytes == 40);

  // 12 is half way from 8 to 16; the point joins the curve, which stays the same.
  const auto at12 = trace_at_batch(t, 12, "c.json");
  CHECK(at12.layers[0].forward_s == Approx(0.014));
  CHECK(at12.layers[0].backward_s == Approx(0.028));
  CHECK(at12.layers[1].backward_s == Approx(0.008));
  CHECK(*at12.layers[0].activation_bytes == 1200);
  CHECK(at12.curve_batch_sizes == std::vector<std::int64_t>{4, 8, 12, 16});
  const auto back = trace_at_batch(at12, 8, "c.json");
  CHECK(back.layers[0].forward_s == Approx(0.010));
  CHECK(back.layers[1].backward_s == Approx(0.004));
  // What it writes, it reads back the same.
  CHECK(trace_to_json(trace_from_json(trace_to_json(at12), "again.json")) == trace_to_json(at12));

  // The trace's own batch is the trace itself.
  CHECK(trace_to_json(trace_at_batch(t, 8, "c.json")) == trace_to_json(t));
}

TEST_CASE("another batch needs a curve, and a batch within 1 to 2^24", "[core][trace]") {
  auto j = curved_trace();
  j.erase("curve_batch_sizes");
  for (auto& l : j["layers"]) l.erase("forward_s_by_batch"), l.erase("backward_s_by_batch");
  const auto flat = trace_from_json(j, "flat.json");
  CHECK(trace_at_batch(flat, 8, "flat.json").layers[0].forward_s == 0.010);
  CHECK_THAT(error_of([&] { trace_at_batch(flat, 4, "flat.json"); }),
             Catch::StartsWith("flat.json: $.curve_batch_sizes: --batch-size 4: ") && Catch::Contains("--batch-sizes"));
  const auto t = trace_from_json(curved_trace(), "c.json");
  CHECK_THAT(error_of([&] { trace_at_batch(t, 0, "c.json"); }), Catch::StartsWith("--batch-size: expected"));
  CHECK_THAT(error_of([&] { trace_at_batch(t, kMaxBatchSizePerRank + 1, "c.json"); }),
             Catch::StartsWith("--batch-size: expected"));
}

TEST_CASE("a batch outside the measured sizes is said to be extrapolated", "[core][trace]") {
  const auto t = trace_from_json(curved_trace(), "c.json");
  // Within 4 to 16, at either end and at the trace's own batch, the times are measured or between.
  for (std::int64_t b : {4, 6, 8, 16}) CHECK(extrapolation_note(t, b).empty());
  for (std::int64_t b : {1, 3, 17, 64}) {
    CHECK_THAT(extrapolation_note(t, b), Catch::StartsWith("batch " + std::to_string(b) + " per rank is outside") &&
                                             Catch::Contains("(4 to 16)"));
  }
  CHECK_THAT(trace_at_batch(t, 32, "c.json").source, Catch::EndsWith("at 3 batch sizes, extrapolated beyond them"));
  CHECK_THAT(trace_at_batch(t, 12, "c.json").source, Catch::EndsWith("at 3 batch sizes"));
  auto j = curved_trace();
  j.erase("curve_batch_sizes");
  for (auto& l : j["layers"]) l.erase("forward_s_by_batch"), l.erase("backward_s_by_batch");
  CHECK(extrapolation_note(trace_from_json(j, "flat.json"), 8).empty());  // nothing to extrapolate
}

TEST_CASE("the reader checks a batch curve", "[core][trace][json]") {
  auto fails = [](const std::function<void(json&)>& edit) {
    auto j = curved_trace();
    edit(j);
    return error_of([&] { trace_from_json(j, "bad.json"); });
  };
  CHECK_THAT(fails([](json& j) { j["curve_batch_sizes"] = {4, 16}; }),
             Catch::StartsWith("bad.json: $.curve_batch_sizes: expected batch_size_per_rank (8) among"));
  CHECK_THAT(fails([](json& j) { j["curve_batch_sizes"] = {8, 4, 16}; }),
             Catch::StartsWith("bad.json: $.curve_batch_sizes[1]: expected batch sizes in increasing order"));
  CHECK_THAT(fails([](json& j) {
               j["curve_batch_sizes"] = json::array();
               for (int b = 1; b <= 17; ++b) j["curve_batch_sizes"].push_back(b);
             }),
             Catch::StartsWith("bad.json: $.curve_batch_sizes: expected at most 16 batch sizes"));
  CHECK_THAT(fails([](json& j) { j["curve_batch_sizes"] = {8}; }),
             Catch::StartsWith("bad.json: $.curve_batch_sizes: expected at least two batch sizes"));
  CHECK_THAT(fails([](json& j) { j["layers"][1]["forward_s_by_batch"] = {0.002, 0.002}; }),
             Catch::StartsWith("bad.json: $.layers[1].forward_s_by_batch: expected 3 times"));
  // At the trace's own batch the curve is the layer's own time.
  CHECK_THAT(fails([](json& j) { j["layers"][0]["backward_s_by_batch"][1] = 0.021; }),
             Catch::StartsWith("bad.json: $.layers[0].backward_s_by_batch[1]: expected the layer's own time"));
  CHECK_THAT(fails([](json& j) { j["layers"][0].erase("backward_s_by_batch"); }),
             Catch::StartsWith("bad.json: $.layers[0]: expected a member backward_s_by_batch"));
  CHECK_THAT(fails([](json& j) { j.erase("curve_batch_sizes"); }),
             Catch::StartsWith("bad.json: $.layers[0].forward_s_by_batch: expected no forward_s_by_batch"));
  CHECK_THAT(fails([](json& j) { j["layers"][0]["forward_s_by_batch"][2] = -1; }),
             Catch::StartsWith("bad.json: $.layers[0].forward_s_by_batch[2]: "));
}

TEST_CASE("attach_batch_curve orders the points and keeps each trace's times", "[core][trace]") {
  const auto t = trace_from_json(curved_trace(), "c.json");
  ModelTrace own = trace_at_batch(t, 8, "c.json"), at4 = trace_at_batch(t, 4, "c.json"), at16 = trace_at_batch(t, 16, "c.json");
  for (auto* x : {&own, &at4, &at16}) {
    x->curve_batch_sizes.clear();
    for (auto& l : x->layers) l.forward_s_by_batch.clear(), l.backward_s_by_batch.clear();
  }
  attach_batch_curve(own, {at16, at4});
  CHECK(own.curve_batch_sizes == std::vector<std::int64_t>{4, 8, 16});
  CHECK(own.layers[0].forward_s_by_batch == std::vector<double>{0.006, 0.010, 0.018});
  CHECK(own.layers[1].backward_s_by_batch == std::vector<double>{0.001, 0.004, 0.012});
  CHECK(trace_to_json(trace_from_json(trace_to_json(own), "again.json")) == trace_to_json(own));
  auto other = at4;
  other.layers[1].name = "x";
  CHECK_THROWS_AS(attach_batch_curve(own, {other}), std::invalid_argument);
}

TEST_CASE("the lists of --batch-sizes are checked", "[core][trace]") {
  CHECK(parse_batch_sizes("16,4,16", 8) == std::vector<std::int64_t>{4, 8, 16});
  CHECK_THAT(error_of([] { parse_batch_sizes("8", 8); }), Catch::Contains("other than --batch-size (8)"));
  CHECK_THAT(error_of([] { parse_batch_sizes("2,,4", 8); }), Catch::Contains("comma-separated positive integers"));
  CHECK_THAT(error_of([] { parse_batch_sizes("4x", 8); }), Catch::Contains("comma-separated positive integers"));
  CHECK_THAT(error_of([] { parse_batch_sizes("0", 8); }), Catch::Contains("from 1 to 2^24, got 0"));
  CHECK_THAT(error_of([] { parse_batch_sizes("1,2,3,4,5,6,7,9,10,11,12,13,14,15,16,17", 8); }),
             Catch::Contains("at most 16"));
}
