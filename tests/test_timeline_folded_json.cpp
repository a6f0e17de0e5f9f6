// redsim-timeline version 3 (core/timeline_json.h) and rank sets (core/rank_set.h): what simulate
// --out writes is read back as the same per-rank records, for all ranks or the chosen ones.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <tuple>

#include "core/error.h"
#include "core/rank_set.h"
#include "core/step_summary.h"
#include "core/timeline_json.h"

using namespace redsim;

namespace {

Plan three_op_plan(int world) {
  Plan p;
  p.world_size = world;
  p.streams = {"compute", "comm"};
  for (std::uint32_t i = 0; i < 3; ++i) {
    PlanOp op;
    op.id = i;
    op.name = "op" + std::to_string(i);
    op.kind = i == 1 ? OpKind::allreduce : OpKind::backward;
    op.bytes = i == 1 ? 4096 : 0;
    p.ops.push_back(op);
  }
  return p;
}

// Op 0 equal on every rank (folded), op 1 by depth (indexed), op 2 different on every rank.
Timeline sample(int world) {
  Timeline tl = Timeline::folded("simulated", world, 3);
  std::vector<OpTiming> a(static_cast<std::size_t>(world), OpTiming{0.0, 0.0, 1.0, 0, 0}), b = a, c = a;
  for (int r = 0; r < world; ++r) {
    b[static_cast<std::size_t>(r)] = OpTiming{1.0, 1.0, r % 2 ? 1.5 : 1.75, 8192, 8192};
    c[static_cast<std::size_t>(r)] = OpTiming{1.75, 1.75, 2.0 + r * 1e-3, 0, 0};
  }
  tl.set_op(0, a);
  tl.set_op(1, b);
  tl.set_op(2, c);
  return tl;
}

// Reading `doc` as a timeline of `plan` is refused with an error that contains `fragment`.
void expect_error(const Plan& plan, const nlohmann::json& doc, const std::string& fragment) {
  try {
    timeline_from_json(JsonIn(doc, "$.timeline", "r.json"), plan);
    FAIL("accepted");
  } catch (const InputError& e) {
    CHECK_THAT(e.what(), Catch::Contains(fragment));
  }
}

RankedTimeline round_trip(const Plan& plan, const Timeline& tl, const std::vector<int>& ranks) {
  std::string text;
  write_folded_timeline_json(plan, tl, ranks, [&](std::string_view s) { text.append(s); });
  const auto j = nlohmann::json::parse(text);
  return timeline_from_json(JsonIn(j, "$.timeline", "r.json"), plan);
}

}  // namespace

TEST_CASE("a folded timeline is read back as the same per-rank records", "[core][timeline][json]") {
  const int world = 64;
  const Plan plan = three_op_plan(world);
  const Timeline tl = sample(world);
  std::string text;
  write_folded_timeline_json(plan, tl, parse_rank_set("all", world, "--timeline-ranks"),
                             [&](std::string_view s) { text.append(s); });
  const auto j = nlohmann::json::parse(text);
  CHECK(j["version"] == 3);
  // One record for the folded op, two for the alternating one, one per rank for the third.
  CHECK(j["ops"][0]["records"].size() == 1);
  CHECK(j["ops"][0]["records"][0]["ranks"] == nlohmann::json::parse("[[0, 63]]"));
  CHECK(j["ops"][1]["records"].size() == 2);
  // Even ranks: one run of stride 2 (32 ranges of one in version 2).
  CHECK(j["ops"][1]["records"][0]["ranks"] == nlohmann::json::parse("[[0, 62, 2]]"));
  CHECK(j["ops"][1]["records"][1]["ranks"] == nlohmann::json::parse("[[1, 63, 2]]"));
  CHECK(j["ops"][2]["records"].size() == 64);
  CHECK(j["ops"][1]["records"][0].contains("bytes_sent"));   // a collective's bytes
  CHECK_FALSE(j["ops"][0]["records"][0].contains("bytes_sent"));

  const RankedTimeline back = round_trip(plan, tl, parse_rank_set("all", world, "x"));
  REQUIRE(back.ranks.size() == 64);
  for (int r = 0; r < world; ++r)
    for (std::size_t op = 0; op < 3; ++op) CHECK(back.timeline.at(r, op) == tl.at(r, op));
}

TEST_CASE("a record on ranks 0, 1 and 3 of every node is written as three runs and read back",
          "[core][timeline][json]") {
  const int world = 64;
  const Plan plan = three_op_plan(world);
  Timeline tl = sample(world);
  std::vector<OpTiming> b(static_cast<std::size_t>(world));
  for (int r = 0; r < world; ++r) {
    const bool head = r % 8 == 0 || r % 8 == 1 || r % 8 == 3;
    b[static_cast<std::size_t>(r)] = OpTiming{1.0, 1.0, head ? 1.5 : 1.75, 8192, 8192};
  }
  tl.set_op(1, b);
  std::string text;
  write_folded_timeline_json(plan, tl, parse_rank_set("all", world, "x"), [&](std::string_view s) { text.append(s); });
  const auto j = nlohmann::json::parse(text);
  CHECK(j["ops"][1]["records"][0]["ranks"] == nlohmann::json::parse("[[0, 56, 8], [1, 57, 8], [3, 59, 8]]"));
  // The others (2 and 4-7 of every node: 16 ranges) as a run per rank of the node.
  CHECK(j["ops"][1]["records"][1]["ranks"] ==
        nlohmann::json::parse("[[2, 58, 8], [4, 60, 8], [5, 61, 8], [6, 62, 8], [7, 63, 8]]"));
  const RankedTimeline back = round_trip(plan, tl, parse_rank_set("all", world, "x"));
  for (int r = 0; r < world; ++r)
    for (std::size_t op = 0; op < 3; ++op) CHECK(back.timeline.at(r, op) == tl.at(r, op));
}

TEST_CASE("an op whose ranks all end apart is written as columns and read back", "[core][timeline][json]") {
  // A chain of 300 ranks: each ends one hop after the one before; the head receives nothing.
  const int world = 300;
  const Plan plan = three_op_plan(world);
  Timeline tl = sample(world);
  std::vector<OpTiming> chain(static_cast<std::size_t>(world));
  for (int r = 0; r < world; ++r)
    chain[static_cast<std::size_t>(r)] = OpTiming{1.0, 1.0, 1.5 + r * 1e-6, 8192, r == 0 ? 0 : 8192};
  tl.set_op(1, chain);
  std::string text;
  write_folded_timeline_json(plan, tl, parse_rank_set("all", world, "x"), [&](std::string_view s) { text.append(s); });
  const auto j = nlohmann::json::parse(text);
  // One record: the members every rank shares as values, the others one per rank.
  const auto& rec = j["ops"][1]["records"];
  REQUIRE(rec.size() == 1);
  CHECK(rec[0]["ranks"] == nlohmann::json::parse("[[0, 299]]"));
  CHECK(rec[0]["start_s"] == 1.0);
  CHECK(rec[0]["bytes_sent"] == 8192);
  REQUIRE(rec[0]["end_s"].size() == 300);
  CHECK(rec[0]["end_s"][299] == 1.5 + 299 * 1e-6);
  CHECK(rec[0]["bytes_received"][0] == 0);
  // Op 2 (a record per rank, 300 of them) is columns too; op 0 (one record) is not.
  CHECK(j["ops"][2]["records"].size() == 1);
  CHECK(j["ops"][0]["records"][0]["end_s"] == 1.0);

  const RankedTimeline back = round_trip(plan, tl, parse_rank_set("all", world, "x"));
  for (int r = 0; r < world; ++r)
    for (std::size_t op = 0; op < 3; ++op) CHECK(back.timeline.at(r, op) == tl.at(r, op));
  // A column of the wrong length, or columns in version 2, are refused with their path.
  auto short_column = j;
  short_column["ops"][1]["records"][0]["end_s"].erase(0);
  expect_error(plan, short_column, "$.timeline.ops[1].records[0].end_s: expected a value, or an array of one value per rank");
  auto negative = j;
  negative["ops"][1]["records"][0]["bytes_received"][7] = -1;
  expect_error(plan, negative, "$.timeline.ops[1].records[0].bytes_received[7]");
  auto v2 = j;
  v2["version"] = 2;
  v2["ops"][1]["records"][0]["ranks"] = nlohmann::json::parse("[[0, 299]]");
  expect_error(plan, v2, "$.timeline.ops[1].records[0].end_s");
}

TEST_CASE("a folded timeline of chosen ranks says which ranks it holds", "[core][timeline][json]") {
  const int world = 64;
  const Plan plan = three_op_plan(world);
  const Timeline tl = sample(world);
  const auto ranks = parse_rank_set("0,1,8-10,63", world, "--timeline-ranks");
  const RankedTimeline back = round_trip(plan, tl, ranks);
  CHECK(back.ranks == std::vector<int>{0, 1, 8, 9, 10, 63});
  CHECK(back.world_size == 64);
  for (std::size_t row = 0; row < back.ranks.size(); ++row)
    for (std::size_t op = 0; op < 3; ++op) CHECK(back.timeline.at(static_cast<int>(row), op) == tl.at(back.ranks[row], op));
}

TEST_CASE("a folded timeline that misses or repeats a rank is refused with its path", "[core][timeline][json]") {
  const int world = 8;
  const Plan plan = three_op_plan(world);
  std::string text;
  write_folded_timeline_json(plan, sample(world), parse_rank_set("all", world, "x"), [&](std::string_view s) { text.append(s); });
  auto j = nlohmann::json::parse(text);
  // Op 0's one record given other ranks: what is wrong, and the path and words of the error.
  const std::vector<std::pair<const char*, const char*>> bad_ranks{
      {"[[0, 6]]", "$.timeline.ops[0].records: expected a record for every rank"},
      {"[[0, 7], [3, 3]]", "$.timeline.ops[0].records[0].ranks: expected each included rank once per op"},
      {"[[0, 8]]", "$.timeline.ops[0].records[0].ranks[0]: expected first <= last < the world size 8"},
      {"[[0, 7, 2]]", "$.timeline.ops[0].records[0].ranks[0][2]: expected a stride that divides last - first"},
      {"[[0, 6, 0]]", "$.timeline.ops[0].records[0].ranks[0][2]"},
      {"[[0, 0, 9223372036854775807]]",
       "$.timeline.ops[0].records[0].ranks[0][2]: expected a stride of at most the world size 8"},
      {"[[0, 7, 1, 1]]", "$.timeline.ops[0].records[0].ranks[0]: expected a [first, last] or [first, last, stride]"}};
  for (const auto& [ranks, error] : bad_ranks) {
    auto doc = j;
    doc["ops"][0]["records"][0]["ranks"] = nlohmann::json::parse(ranks);
    expect_error(plan, doc, error);
  }
  auto unsorted = j;  // the included ranks give the rows' order: sorted
  unsorted["ranks_included"] = nlohmann::json::parse("[[4, 7], [0, 3]]");
  expect_error(plan, unsorted, "$.timeline.ranks_included[1]: expected ranges in increasing order");
  auto v2_stride = j;  // version 2 had no strides
  v2_stride["version"] = 2;
  v2_stride["ops"][1]["records"][0]["ranks"] = nlohmann::json::parse("[[0, 6, 2]]");
  expect_error(plan, v2_stride, "$.timeline.ops[1].records[0].ranks[0]: expected a [first, last] rank range");
  auto v4 = j;
  v4["version"] = 4;
  expect_error(plan, v4, "$.timeline.version: expected version 1, 2 or 3");
  auto short_ops = j;
  short_ops["ops"].erase(2);
  expect_error(plan, short_ops, "$.timeline.ops: expected 3 ops");
}

TEST_CASE("a version 2 folded timeline (ranges only) still reads back", "[core][timeline][json]") {
  const int world = 8;
  const Plan plan = three_op_plan(world);
  const Timeline tl = sample(world);
  std::string text;
  write_folded_timeline_json(plan, tl, parse_rank_set("all", world, "x"), [&](std::string_view s) { text.append(s); });
  auto j = nlohmann::json::parse(text);
  // As version 2 wrote it: every run spelled out as [r, r] ranges.
  j["version"] = 2;
  for (auto& op : j["ops"])
    for (auto& rec : op["records"]) {
      nlohmann::json ranges = nlohmann::json::array();
      for (const auto& run : rec["ranks"]) {
        const int step = run.size() == 3 ? run[2].get<int>() : 1;
        if (step == 1) ranges.push_back(run);
        else
          for (int r = run[0].get<int>(); r <= run[1].get<int>(); r += step) ranges.push_back({r, r});
      }
      rec["ranks"] = ranges;
    }
  const RankedTimeline back = timeline_from_json(JsonIn(j, "$.timeline", "r.json"), plan);
  for (int r = 0; r < world; ++r)
    for (std::size_t op = 0; op < 3; ++op) CHECK(back.timeline.at(r, op) == tl.at(r, op));
}

TEST_CASE("single ranks a fixed distance apart fold into stride runs", "[core][rank_set]") {
  using V = std::vector<RankRun>;
  // One rank per 8-GPU node: a tree's or chain's equal records.
  CHECK(rank_runs({{0, 0}, {8, 8}, {16, 16}, {24, 24}}) == V{{0, 24, 8}});
  // Ranges stay ranges; the singles after them fold by their own distance.
  CHECK(rank_runs({{0, 3}, {5, 5}, {7, 7}, {9, 9}, {20, 29}}) == V{{0, 3, 1}, {5, 9, 2}, {20, 29, 1}});
  // A change of distance starts a new run; each run's ranks are below the next one's.
  CHECK(rank_runs({{0, 0}, {2, 2}, {5, 5}, {8, 8}}) == V{{0, 2, 2}, {5, 8, 3}});
  CHECK(rank_runs({{4, 4}}) == V{{4, 4, 1}});
  CHECK(rank_runs({}).empty());
}

TEST_CASE("a record's ranks that repeat with a period are written as a run per rank of the period",
          "[core][rank_set]") {
  using V = std::vector<RankRun>;
  // Ranks 8, 9 and 11 of every 8-rank node from node 1 to node 100 (PowerSGD's tree records).
  std::vector<int> ranks;
  for (int node = 1; node <= 100; ++node)
    for (int local : {0, 1, 3}) ranks.push_back(8 * node + local);
  CHECK(record_runs(rank_ranges(ranks)) == V{{8, 800, 8}, {9, 801, 8}, {11, 803, 8}});
  // A range before the stretch stays a range; singles 10 apart are one run.
  CHECK(record_runs({{0, 3}, {10, 10}, {20, 20}, {30, 30}, {40, 40}}) == V{{0, 3, 1}, {10, 40, 10}});
  // Three wide blocks would be 4 runs for 3 ranges: left as ranges.
  CHECK(record_runs({{0, 3}, {8, 11}, {16, 19}}) == V{{0, 3, 1}, {8, 11, 1}, {16, 19, 1}});
  // Any rank set: the runs hold exactly its ranks, and never more runs than ranges.
  std::uint64_t state = 12345;
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<int> set;
    for (int r = 0; r < 512; ++r) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      // Mostly periodic (by rank % 8, the pattern changing every 128 ranks), sometimes not.
      const bool periodic = ((state >> 40) % 8) != 0;
      const int pattern = (r / 128 + trial) % 8;
      if (periodic ? (r % 8 == pattern || r % 8 == (pattern * 3) % 8) : ((state >> 20) % 3) == 0) set.push_back(r);
    }
    const auto ranges = rank_ranges(set);
    const auto runs = record_runs(ranges);
    std::vector<int> back;
    for (const RankRun& run : runs) {
      REQUIRE(run.stride >= 1);
      REQUIRE((run.last - run.first) % run.stride == 0);
      for (int r = run.first; r <= run.last; r += run.stride) back.push_back(r);
    }
    std::sort(back.begin(), back.end());
    CHECK(back == set);
    CHECK(runs.size() <= ranges.size());
  }
}

TEST_CASE("rank sets parse as a user writes them and print as ranges", "[core][rank_set]") {
  CHECK(parse_rank_set("all", 4, "--r") == std::vector<int>{0, 1, 2, 3});
  CHECK(parse_rank_set("8-10,0,1,9", 16, "--r") == std::vector<int>{0, 1, 8, 9, 10});
  CHECK(rank_ranges({0, 1, 2, 5, 7, 8}) == std::vector<RankRange>{{0, 2}, {5, 5}, {7, 8}});
  CHECK(rank_ranges_text(rank_ranges({0, 1, 2, 5, 7, 8})) == "0-2,5,7-8");
  for (const char* bad : {"16", "3-1", "x", "", "1,", "-1", "1-2-3"})
    CHECK_THROWS_AS(parse_rank_set(bad, 16, "--timeline-ranks"), InputError);
}

TEST_CASE("a sparse op is written as its default and exceptions, read back per rank, and summarized alike",
          "[core][timeline][json]") {
  const int world = 64;
  const Plan plan = three_op_plan(world);
  // Op 1 as a long chain stores it (core/timeline.h): every rank ends together, its head (rank 9)
  // receives nothing and its tail (rank 8) sends nothing.
  Timeline sparse = sample(world);
  const OpTiming every{1.0, 1.0, 1.75, 8192, 8192};
  sparse.set_op_sparse(1, every, {{9, OpTiming{1.0, 1.0, 1.75, 8192, 0}}, {8, OpTiming{1.0, 1.0, 1.75, 0, 8192}}});
  std::string text;
  write_folded_timeline_json(plan, sparse, parse_rank_set("all", world, "x"), [&](std::string_view s) { text.append(s); });
  const auto j = nlohmann::json::parse(text);
  // Ranks 0-7 and 10-63 share the default; 8 and 9 each have their own, in order of first rank.
  REQUIRE(j["ops"][1]["records"].size() == 3);
  CHECK(j["ops"][1]["records"][0]["ranks"] == nlohmann::json::parse("[[0, 7], [10, 63]]"));
  CHECK(j["ops"][1]["records"][1]["ranks"] == nlohmann::json::parse("[[8, 8]]"));
  CHECK(j["ops"][1]["records"][2]["bytes_received"] == 0);

  for (const auto* set : {"all", "8,10-12", "0-7"}) {
    const RankedTimeline back = round_trip(plan, sparse, parse_rank_set(set, world, "x"));
    for (std::size_t row = 0; row < back.ranks.size(); ++row)
      for (std::size_t op = 0; op < 3; ++op)
        CHECK(back.timeline.at(static_cast<int>(row), op) == sparse.at(back.ranks[row], op));
  }

  // The same records stored a record per rank summarize to the same figures.
  Timeline dense = sparse;
  dense.mutable_at(0, 1);
  REQUIRE_FALSE(dense.op_is_sparse(1));
  Plan two = three_op_plan(world);
  two.ops.pop_back();  // ops 0 and 1 only: every op's times equal on all ranks
  Timeline sparse2 = Timeline::folded("simulated", world, 2), dense2 = sparse2;
  for (int r = 0; r < world; ++r)
    for (std::size_t op = 0; op < 2; ++op) dense2.mutable_at(r, op) = sparse.at(r, op);
  sparse2.set_op(0, std::vector<OpTiming>(world, sparse.at(0, 0)));
  sparse2.set_op_sparse(1, every, {{9, sparse.at(9, 1)}, {8, sparse.at(8, 1)}});
  using Case = std::tuple<const Plan*, const Timeline*, const Timeline*>;
  for (const auto& [p, a, b] : {Case{&plan, &sparse, &dense}, Case{&two, &sparse2, &dense2}}) {
    const auto s = summarize(*p, *a), d = summarize(*p, *b);
    CHECK(s.step_time_s == d.step_time_s);
    CHECK(s.comm_time_s == d.comm_time_s);
    CHECK(s.exposed_comm_s == d.exposed_comm_s);
    CHECK(s.compute_time_s == d.compute_time_s);
    CHECK(s.bytes_sent_per_rank == d.bytes_sent_per_rank);
    REQUIRE(s.collectives.size() == d.collectives.size());
    CHECK(s.collectives[0].end_s == d.collectives[0].end_s);
  }
  // Every rank but the tail sends 8192 bytes of op 1.
  CHECK(summarize(two, sparse2).bytes_sent_per_rank == 8192);
}
