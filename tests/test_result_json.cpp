// The redsim-result format: what result_to_json writes, measured_run_from_json reads back (the
// step times, every rank's op times, or the one rank a profiler trace covers), and the simpler
// measured files get one-line errors that name the file and JSON path.
#include <catch2/catch.hpp>

#include "core/error.h"
#include "core/result_json.h"
#include "strategies/strategy.h"
#include "tests/test_support.h"

using namespace redsim;
using testing::error_of;
using nlohmann::json;

namespace {

struct Fixture {
  ModelTrace trace = testing::uniform_trace(3, 1000, 1e-3, 2e-3, 1e-3);
  ClusterSpec cluster = testing::ideal_star(2, 1e10, 1e-6);
  Knobs knobs;
  Plan plan = make_strategy("bucketed")->plan(trace, cluster, knobs);

  // Op i on row r: ready at i + r/10 s, from i + r/10 + 0.01 s to i + r/10 + 0.5 s, sending 7 i bytes.
  Timeline timeline(int rows) const {
    Timeline tl("measured", rows, plan.ops.size());
    for (int r = 0; r < rows; ++r)
      for (std::size_t i = 0; i < plan.ops.size(); ++i) {
        auto& t = tl.mutable_at(r, i);
        t.ready_s = static_cast<double>(i) + r / 10.0;
        t.start_s = t.ready_s + 0.01;
        t.end_s = t.ready_s + 0.5;
        t.bytes_sent = op_kind_is_collective(plan.ops[i].kind) ? 7 * static_cast<std::int64_t>(i) : 0;
        t.bytes_received = t.bytes_sent;
      }
    return tl;
  }
  json write(const Timeline& tl, std::vector<int> ranks, std::optional<Measurement> m) const {
    const StepSummary summary = summarize(plan, tl);
    const RedsimResult r{{"t.json", &trace, "c.json", &cluster, {{"name", "gloo"}}}, &knobs, &plan, &summary, &tl,
                         std::move(ranks), std::move(m)};
    return result_to_json(r);
  }
};

}  // namespace

TEST_CASE("a measured redsim-result reads back: step times, every rank's op times", "[core][json][result]") {
  const Fixture f;
  const Timeline tl = f.timeline(2);
  const json j = f.write(tl, {}, Measurement{{0.3, 0.1, 0.2}, 2, {{"backend", "gloo"}, {"buffer_scale", 0.5}}});
  CHECK(j["format"] == "redsim-result");
  CHECK(j["measurement"]["step_time_median_s"] == 0.2);
  CHECK(j["measurement"]["step_time_min_s"] == 0.1);
  CHECK(j["measurement"]["step_time_max_s"] == 0.3);
  CHECK(j["cluster"]["world_size"] == 2);
  const MeasuredRun m = measured_run_from_json(j, "m.json", f.plan);
  CHECK(m.step_times_s == std::vector<double>{0.3, 0.1, 0.2});
  CHECK(m.engine == "gloo");
  CHECK(m.buffer_scale == 0.5);
  REQUIRE(m.timeline);
  CHECK(m.timeline->world_size == 2);
  CHECK(m.timeline->ranks == std::vector<int>{0, 1});
  REQUIRE(m.timeline->timeline.op_count == f.plan.ops.size());
  for (int r = 0; r < 2; ++r)
    for (std::size_t i = 0; i < f.plan.ops.size(); ++i) {
      const auto& got = m.timeline->timeline.at(r, i);
      const auto& want = tl.at(r, i);
      CHECK(got.ready_s == want.ready_s);
      CHECK(got.start_s == want.start_s);
      CHECK(got.end_s == want.end_s);
      CHECK(got.bytes_sent == want.bytes_sent);
      CHECK(got.bytes_received == want.bytes_received);
    }
}

TEST_CASE("a timeline of one rank of the job reads back as that rank", "[core][json][result]") {
  const Fixture f;
  const Timeline one = f.timeline(1);
  const json j = f.write(one, {1}, Measurement{{0.25}, -1, json::object()});
  CHECK(j["timeline"]["world_size"] == 2);
  CHECK(j["timeline"]["ranks"][0]["rank"] == 1);
  CHECK_FALSE(j["measurement"].contains("median_step"));
  const MeasuredRun m = measured_run_from_json(j, "m.json", f.plan);
  REQUIRE(m.timeline);
  CHECK(m.timeline->ranks == std::vector<int>{1});
  CHECK(m.timeline->timeline.world_size == 1);
  CHECK(m.timeline->timeline.at(0, 2).end_s == one.at(0, 2).end_s);
}

TEST_CASE("plain measured files: an object with step_times_s, or an array", "[core][json][result]") {
  const Fixture f;
  auto m = measured_run_from_json(json::parse(R"({"step_times_s": [0.5, 0.25], "variant": "ddp"})"), "d.json", f.plan);
  CHECK(m.step_times_s == std::vector<double>{0.5, 0.25});
  CHECK_FALSE(m.timeline);
  CHECK(m.buffer_scale == 1);
  m = measured_run_from_json(json::parse("[0.125]"), "a.json", f.plan);
  CHECK(m.step_times_s == std::vector<double>{0.125});
}

TEST_CASE("bad measured files: one line naming the file and JSON path", "[core][json][result]") {
  const Fixture f;
  auto err = [&](const std::string& text) {
    return error_of([&] { measured_run_from_json(json::parse(text), "m.json", f.plan); });
  };
  CHECK(err(R"({"step_times_s": [0.1, -1]})") ==
        "m.json: $.step_times_s[1]: expected a positive number of seconds (at most 1e9), got -1");
  // 31 years per step is a corrupt file: past 1e9 s every derived error would lose meaning.
  CHECK(err("[0.1, 2e9]") == "m.json: $[1]: expected a positive number of seconds (at most 1e9), got 2000000000.0");
  CHECK(err("[]") == "m.json: $: expected a non-empty array of step times in seconds, got []");
  CHECK_THAT(err(R"({"steps": 3})"), Catch::StartsWith("m.json: $: expected a measured result"));
  // A simulated result has no measurement.
  json simulated = f.write(f.timeline(2), {}, std::nullopt);
  CHECK_THAT(error_of([&] { measured_run_from_json(simulated, "s.json", f.plan); }),
             Catch::Contains("simulated, not measured"));
  // Timelines must be of the plan: its world size, its op count, each rank once.
  json j = f.write(f.timeline(2), {}, Measurement{{0.1}, 0, json::object()});
  json k = j;
  k["timeline"]["ranks"][1]["ops"].erase(0);
  CHECK_THAT(error_of([&] { measured_run_from_json(k, "m.json", f.plan); }),
             Catch::StartsWith("m.json: $.timeline.ranks[1].ops: expected " + std::to_string(f.plan.ops.size()) +
                               " ops (the plan's op count)"));
  k = j;
  k["timeline"]["world_size"] = 4;
  CHECK_THAT(error_of([&] { measured_run_from_json(k, "m.json", f.plan); }),
             Catch::StartsWith("m.json: $.timeline.world_size: the measured timeline has 4 ranks but the simulated "
                               "plan has 2"));
  k = j;
  k["timeline"]["ranks"][1]["rank"] = 0;
  CHECK(error_of([&] { measured_run_from_json(k, "m.json", f.plan); }) ==
        "m.json: $.timeline.ranks[1].rank: expected each rank once, got 0");
  k = j;
  k["timeline"]["ranks"][0]["ops"][1]["start_s"] = "soon";
  CHECK(error_of([&] { measured_run_from_json(k, "m.json", f.plan); }) ==
        "m.json: $.timeline.ranks[0].ops[1].start_s: expected a number, got \"soon\"");
}
