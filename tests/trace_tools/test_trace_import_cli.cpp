// redsim trace import from the command line: the files it writes, a simulate round trip of the
// imported trace, exit status 2 on bad input, and its measured result read by validate --measured.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "core/trace_json.h"
#include "kineto_builder.h"
#include "tool_runner.h"

using namespace redsim;
using namespace redsim::testing;
using nlohmann::json;

namespace {
constexpr double kEps = 1e-12;  // seconds; the reconstruction is exact up to rounding
}  // namespace

TEST_CASE("redsim trace import end to end: files, a simulate round trip, and exit status 2 on bad input",
          "[trace_tools][import][cli]") {
  TempDir dir;
  write_gzip(dir / "rank3.json.gz", build_kineto({example_step(3, 0), example_step(4, 1)}, KBuild{}).dump());
  auto r = run_redsim("trace import --kineto " + quote(dir / "rank3.json.gz") + " --out " + quote(dir / "t.json") +
                          " --measured " + quote(dir / "m.json") + " --batch-size 32 --model bert",
                      dir);
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK(r.err.empty());
  CHECK_THAT(r.out, Catch::Contains("mean of steps 3, 4") && Catch::Contains("3 gradient allreduces"));
  const ModelTrace t = load_trace(dir / "t.json");
  CHECK(t.model == "bert");
  CHECK(t.batch_size_per_rank == 32);
  CHECK(t.params.size() == 3);
  const json m = json::parse(read_file(dir / "m.json"));
  CHECK(m["format"] == "redsim-result");
  CHECK(m["engine"]["name"] == "kineto-import");
  CHECK(m["timeline"]["source"] == "measured");
  CHECK(m["timeline"]["ranks"][0]["rank"] == 3);
  CHECK(m["summary"]["collectives"].size() == 4);
  CHECK(m["knobs"]["bucket_cap_bytes"] == 4000);

  // The imported trace and its knobs simulate, and form the measured buckets.
  r = run_redsim("simulate --trace " + quote(dir / "t.json") + " --cluster " +
                     quote(std::string(REDSIM_SOURCE_DIR) + "/tests/data/ideal_star_4.json") + " --config " +
                     quote(dir / "m.json") + " --out " + quote(dir / "sim.json"),
                 dir);
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  const json sim = json::parse(read_file(dir / "sim.json"));
  std::vector<std::int64_t> sim_bytes, measured_bytes;
  for (const auto& c : sim["summary"]["collectives"])
    if (c["kind"] == "allreduce") sim_bytes.push_back(c["bytes"]);
  for (const auto& c : m["summary"]["collectives"])
    if (c["kind"] == "allreduce") measured_bytes.push_back(c["bytes"]);
  CHECK(sim_bytes == std::vector<std::int64_t>{262144 * 4, 6553600 * 4, 4000});
  CHECK(sim_bytes == measured_bytes);

  // Without --measured the command line to reproduce the buckets is printed.
  r = run_redsim(
      "trace import --kineto " + quote(dir / "rank3.json.gz") + " --out " + quote(dir / "t2.json") + " --step 4", dir);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("(step 4)") && Catch::Contains("--bucket-mb 0.003814697265625"));

  // Bad input: exit status 2, one line naming file and path, nothing written.
  json bad = build_kineto({example_step(3, 0)}, KBuild{});
  auto i = index_of_first(bad, is_kernel);
  bad["traceEvents"][i]["dur"] = "long";
  write_file(dir / "bad.json", bad.dump());
  r = run_redsim("trace import --kineto " + quote(dir / "bad.json") + " --out " + quote(dir / "never.json") +
                     " --measured " + quote(dir / "never-m.json"),
                 dir);
  CHECK(r.status == 2);
  CHECK(r.err == "redsim: error: " + (dir / "bad.json") + ": $.traceEvents[" + std::to_string(i) +
                     "].dur: expected a number, got \"long\"\n");
  CHECK_FALSE(std::filesystem::exists(dir / "never.json"));
  CHECK_FALSE(std::filesystem::exists(dir / "never-m.json"));
  // --step and --average exclude each other.
  r = run_redsim("trace import --kineto " + quote(dir / "rank3.json.gz") + " --out " + quote(dir / "x.json") +
                     " --step 3 --average",
                 dir);
  CHECK(r.status == 2);
  // Without message sizes: a warning on stderr, and the trace still written.
  KBuild nosize;
  nosize.sizes = SizeStyle::none;
  write_file(dir / "nosize.json", build_kineto({example_step(1, 0)}, nosize).dump());
  r = run_redsim("trace import --kineto " + quote(dir / "nosize.json") + " --out " + quote(dir / "n.json"), dir);
  CHECK(r.status == 0);
  CHECK_THAT(r.err, Catch::StartsWith("redsim: warning: ") && Catch::Contains("cannot be recovered"));
  CHECK_THAT(load_trace(dir / "n.json").source, Catch::Contains("cannot be recovered"));
}

TEST_CASE("what trace import --measured writes, validate --measured reads", "[trace_tools][import][cli]") {
  TempDir dir;
  const KStep s3 = example_step(3, 0), s4 = example_step(4, 1);
  write_gzip(dir / "rank3.json.gz", build_kineto({s3, s4}, KBuild{}).dump());
  auto r = run_redsim("trace import --kineto " + quote(dir / "rank3.json.gz") + " --out " + quote(dir / "t.json") +
                          " --measured " + quote(dir / "m.json"),
                      dir);
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  // Each step's time: from its origin (the buffer broadcast before forward) to its last kernel's end.
  auto span_s = [](const KStep& s) {
    double origin = std::numeric_limits<double>::infinity(), end = 0;
    for (const auto& c : s.compute) {
      if (c.phase == KPhase::forward) origin = std::min(origin, c.start_us);
      end = std::max(end, c.start_us + c.dur_us);
    }
    for (const auto& c : s.comm) {
      if (c.phase == KPhase::forward) origin = std::min(origin, c.start_us);
      end = std::max(end, c.start_us + c.dur_us);
    }
    return (end - origin) * 1e-6;
  };
  const json m = json::parse(read_file(dir / "m.json"));
  REQUIRE(m["measurement"]["step_times_s"].size() == 2);
  CHECK(m["measurement"]["step_times_s"][0].get<double>() == Approx(span_s(s3)).margin(kEps));
  CHECK(m["measurement"]["step_times_s"][1].get<double>() == Approx(span_s(s4)).margin(kEps));
  CHECK(m["timeline"]["world_size"] == 8);

  // The profiled job had 8 ranks: validate on an 8-rank cluster, under the knobs the import wrote.
  r = run_redsim("validate --trace " + quote(dir / "t.json") + " --cluster " +
                     quote(std::string(REDSIM_SOURCE_DIR) + "/configs/ideal-star-8.json") + " --config " +
                     quote(dir / "m.json") + " --measured " + quote(dir / "m.json") + " --out " + quote(dir / "v.json"),
                 dir);
  INFO(r.out << r.err);
  CHECK((r.status == 0 || r.status == 1));  // a verdict, not bad input
  CHECK_THAT(r.out, Catch::Contains("op start error"));
  const json v = json::parse(read_file(dir / "v.json"));
  CHECK(v["measured"]["has_timeline"] == true);
  CHECK(v["measured"]["steps"] == 2);
  CHECK(v["comparison"]["measured_step_median_s"].get<double>() ==
        Approx((span_s(s3) + span_s(s4)) / 2).margin(kEps));
  // Rank 3's measured bucket 0, compared op by op.
  const auto& ops = v["comparison"]["ops"];
  const auto bucket0 =
      std::find_if(ops.begin(), ops.end(), [](const json& o) { return o["name"] == "allreduce:bucket0"; });
  REQUIRE(bucket0 != ops.end());
  const auto& tl_ops = m["timeline"]["ranks"][0]["ops"];
  CHECK((*bucket0)["measured_start_s"] == tl_ops[(*bucket0)["op"].get<std::size_t>()]["start_s"]);

  // On a cluster of another size the timeline is not of the plan: bad input, one line.
  r = run_redsim("validate --trace " + quote(dir / "t.json") + " --cluster " +
                     quote(std::string(REDSIM_SOURCE_DIR) + "/tests/data/ideal_star_4.json") + " --config " +
                     quote(dir / "m.json") + " --measured " + quote(dir / "m.json"),
                 dir);
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("$.timeline.world_size: the measured timeline has 8 ranks but the simulated "
                                    "plan has 4"));
}

// The command line trace import suggests names the user's files; pasted into a shell it must name
// exactly those files, whatever their names hold, and run nothing else. Checked by bash itself:
// the suggested word, evaluated by `printf %s`, gives back the path.
TEST_CASE("the command trace import suggests quotes its file names for the shell", "[trace_tools][import][cli]") {
  TempDir dir;
  write_gzip(dir / "rank3.json.gz", build_kineto({example_step(3, 0)}, KBuild{}).dump());
  for (const std::string name : {"plain-name_1.json", "a b$(touch pwned)'x`y`.json", "tab\there\x01.json"}) {
    const std::string out = dir / name;
    auto r = run_redsim("trace import --kineto " + quote(dir / "rank3.json.gz") + " --out " + quote(out), dir);
    INFO(name << "\n" << r.out << r.err);
    REQUIRE(r.status == 0);
    const std::string lead = "predict it: redsim simulate --trace ", tail = " --cluster CLUSTER.json";
    const auto at = r.out.find(lead);
    REQUIRE(at != std::string::npos);
    const auto end = r.out.find(tail, at);
    REQUIRE(end != std::string::npos);
    const std::string word = r.out.substr(at + lead.size(), end - at - lead.size());
    CHECK(word.find('\t') == std::string::npos);  // control bytes are escaped, never echoed
    CHECK(word.find('\x01') == std::string::npos);
    write_file(dir / "eval.sh", "cd " + quote(dir.path.string()) + " || exit 1\nprintf %s " + word + " > " + quote(dir / "word.txt") + "\n");
    REQUIRE(std::system(("bash " + quote(dir / "eval.sh")).c_str()) == 0);
    CHECK(read_file(dir / "word.txt") == out);
    CHECK_FALSE(std::filesystem::exists(dir / "pwned"));  // nothing ran
  }
}
