// redsim-timeline version 3, the folded form (core/timeline_json.h): op by op, each distinct
// record once with the ranks it stands for as [first, last] ranges or [first, last, stride]
// runs. Written piece by piece, so a step at 131,072 ranks never exists whole as a JSON document.
#include <algorithm>
#include <unordered_map>

#include "core/error.h"
#include "core/rank_set.h"
#include "core/timeline_json.h"

namespace redsim {

namespace {

struct RecordGroup {
  OpTiming record;
  std::vector<RankRange> ranges;
};

// `ranges` without the ranks in `out` (both sorted).
std::vector<RankRange> ranges_without(const std::vector<RankRange>& ranges, const std::vector<int>& out) {
  std::vector<RankRange> left;
  std::size_t k = 0;
  for (auto [first, last] : ranges) {
    while (k < out.size() && out[k] < first) ++k;
    for (; k < out.size() && out[k] <= last; ++k) {
      if (out[k] > first) left.emplace_back(first, out[k] - 1);
      first = out[k] + 1;
    }
    if (first <= last) left.emplace_back(first, last);
  }
  return left;
}

// A sparse op (core/timeline.h): the default record for the included ranks that are not
// exceptions, then the included exceptions, equal records together; O(exceptions), not O(ranks).
std::vector<RecordGroup> sparse_groups(const Timeline& tl, std::size_t op, const std::vector<int>& ranks,
                                       const std::vector<RankRange>& all_ranges) {
  const auto& recs = tl.op_records(op);
  const auto& ex = tl.op_exception_ranks(op);
  std::vector<int> included;
  for (int r : ex)
    if (std::binary_search(ranks.begin(), ranks.end(), r)) included.push_back(r);
  std::vector<RecordGroup> groups;
  if (auto rest = ranges_without(all_ranges, included); !rest.empty()) groups.push_back({recs[0], std::move(rest)});
  std::unordered_map<OpTiming, std::size_t, OpTimingHash> index;
  for (int r : included) {
    const OpTiming& t = tl.at(r, op);
    auto [it, fresh] = index.emplace(t, groups.size());
    if (fresh) groups.push_back({t, {}});
    groups[it->second].ranges.emplace_back(r, r);
  }
  std::sort(groups.begin(), groups.end(),
            [](const RecordGroup& a, const RecordGroup& b) { return a.ranges.front().first < b.ranges.front().first; });
  return groups;
}

// The op's records among `ranks` (sorted; `all_ranges` the same as ranges), equal records
// together, in order of first rank; a record per rank stops at max_groups + 1 groups, as such an
// op is written as columns instead.
std::vector<RecordGroup> group_records(const Timeline& tl, std::size_t op, const std::vector<int>& ranks,
                                       const std::vector<RankRange>& all_ranges, std::size_t max_groups) {
  std::vector<RecordGroup> groups;
  if (ranks.empty()) return groups;
  if (tl.op_is_folded(op)) {
    groups.push_back({tl.op_records(op)[0], all_ranges});
    return groups;
  }
  if (tl.op_is_sparse(op)) return sparse_groups(tl, op, ranks, all_ranges);
  std::unordered_map<OpTiming, std::size_t, OpTimingHash> index;
  for (int r : ranks) {
    const OpTiming& t = tl.at(r, op);
    auto [it, fresh] = index.emplace(t, groups.size());
    if (fresh) {
      groups.push_back({t, {}});
      if (groups.size() > max_groups) return groups;  // only the count matters now
    }
    auto& rr = groups[it->second].ranges;
    if (!rr.empty() && rr.back().second + 1 == r) rr.back().second = r;
    else rr.emplace_back(r, r);
  }
  return groups;
}

// Appends runs: [first, last] when contiguous, else [first, last, stride].
void append_runs(std::string& s, const std::vector<RankRun>& runs) {
  s += '[';
  bool comma = false;
  for (const RankRun& r : runs) {
    if (comma) s += ',';
    comma = true;
    s += '[';
    s += std::to_string(r.first);
    s += ',';
    s += std::to_string(r.last);
    if (r.stride != 1) {
      s += ',';
      s += std::to_string(r.stride);
    }
    s += ']';
  }
  s += ']';
}

std::string number(double v) { return nlohmann::json(v).dump(); }

// An op with more distinct records than this (a chain's ranks end in turn) is written as columns.
constexpr std::size_t kColumnsFromRecords = 256;

// One record of all `ranks` whose members that differ between ranks are arrays of one value per
// rank, in rank order: a number per rank instead of a record per rank (ZeRO's chains below 4,097
// ranks). Flushed to `out` as it grows.
void append_columns(std::string& s, const Timeline& tl, std::size_t op, const std::vector<int>& ranks,
                    const std::vector<RankRange>& all_ranges, bool collective, const OutputSink& out) {
  s += "{\"ranks\": ";
  append_runs(s, rank_runs(all_ranges));
  auto column = [&](const char* key, auto value_of, auto text_of) {
    const auto first = value_of(tl.at(ranks.front(), op));
    const bool same = std::all_of(ranks.begin(), ranks.end(), [&](int r) { return value_of(tl.at(r, op)) == first; });
    s += ", \"";
    s += key;
    s += "\": ";
    if (same) {
      s += text_of(first);
      return;
    }
    s += '[';
    for (std::size_t k = 0; k < ranks.size(); ++k) {
      if (k) s += ',';
      s += text_of(value_of(tl.at(ranks[k], op)));
      if (s.size() > (1u << 16)) out(s), s.clear();
    }
    s += ']';
  };
  auto seconds = [](double v) { return number(v); };
  auto count = [](std::int64_t v) { return std::to_string(v); };
  column("ready_s", [](const OpTiming& t) { return t.ready_s; }, seconds);
  column("start_s", [](const OpTiming& t) { return t.start_s; }, seconds);
  column("end_s", [](const OpTiming& t) { return t.end_s; }, seconds);
  if (collective) {
    column("bytes_sent", [](const OpTiming& t) { return t.bytes_sent; }, count);
    column("bytes_received", [](const OpTiming& t) { return t.bytes_received; }, count);
  }
  s += "}";
}

}  // namespace

void write_folded_timeline_json(const Plan& plan, const Timeline& tl, const std::vector<int>& ranks,
                                const OutputSink& out) {
  const auto all_ranges = rank_ranges(ranks);
  // Appended in place: prefixing a record's long rank list would move it once per member.
  std::string s = "{\"format\": \"redsim-timeline\", \"version\": 3, \"source\": " + nlohmann::json(tl.source).dump() +
                  ", \"world_size\": " + std::to_string(tl.world_size) + ", \"ranks_included\": ";
  append_runs(s, rank_runs(all_ranges));  // sorted: the rows' order
  out(s + ",\n  \"ops\": [");
  for (std::size_t i = 0; i < tl.op_count; ++i) {
    s = i ? ",\n   " : "\n   ";
    s += "{\"op\": " + std::to_string(i) + ", \"records\": [";
    const bool collective = op_kind_is_collective(plan.ops[i].kind);
    const auto groups = group_records(tl, i, ranks, all_ranges, kColumnsFromRecords);
    if (groups.size() > kColumnsFromRecords) {
      append_columns(s, tl, i, ranks, all_ranges, collective, out);
      out(s + "]}");
      continue;
    }
    for (std::size_t g = 0; g < groups.size(); ++g) {
      const OpTiming& t = groups[g].record;
      if (g) s += ", ";
      s += "{\"ranks\": ";
      append_runs(s, record_runs(groups[g].ranges));
      s += ", \"ready_s\": " + number(t.ready_s) + ", \"start_s\": " + number(t.start_s) + ", \"end_s\": " + number(t.end_s);
      if (collective)
        s += ", \"bytes_sent\": " + std::to_string(t.bytes_sent) + ", \"bytes_received\": " + std::to_string(t.bytes_received);
      s += "}";
      if (s.size() > (1u << 16)) out(s), s.clear();
    }
    out(s + "]}");
  }
  out("\n  ]}");
}

namespace {

// Version 2 holds [first, last] ranges; version 3 also [first, last, stride] runs, which in a
// record may come in any order (`sorted` false: read_op checks each rank comes once).
std::vector<int> read_ranges(const JsonIn& node, int world_size, bool strides, bool sorted) {
  const std::string what = strides ? "a [first, last] or [first, last, stride] rank run" : "a [first, last] rank range";
  if (!node.raw().is_array()) node.fail("an array of " + what + "s");
  std::vector<int> ranks;
  for (const auto& item : node.items()) {
    const std::size_t n = item.raw().is_array() ? item.raw().size() : 0;
    if (n != 2 && !(strides && n == 3)) item.fail(what);
    const auto run = item.items();
    const auto first = run[0].nonnegative_integer(), last = run[1].nonnegative_integer();
    const auto stride = n == 3 ? run[2].positive_integer() : 1;
    if (last < first || last >= world_size)
      item.fail("first <= last < the world size " + std::to_string(world_size));
    if (stride > world_size) run[2].fail("a stride of at most the world size " + std::to_string(world_size));
    if ((last - first) % stride != 0) run[2].fail("a stride that divides last - first");
    if (sorted && !ranks.empty() && first <= ranks.back()) item.fail("ranges in increasing order, without overlap");
    for (auto r = first; r <= last; r += stride) ranks.push_back(static_cast<int>(r));
  }
  return ranks;
}

// One op's records onto the rows of the included ranks (row_of: rank -> row, -1 if not included).
void read_op(const JsonIn& op, std::size_t i, const std::vector<int>& row_of, std::size_t rows, bool strides,
             Timeline& tl) {
  if (op.at("op").integer() != static_cast<std::int64_t>(i)) op.at("op").fail("op " + std::to_string(i) + " (ops in plan order)");
  std::vector<OpTiming> per_row(rows);
  std::vector<char> seen(rows, 0);
  std::size_t covered = 0;
  for (const auto& rec : op.at("records").items()) {
    const auto rec_ranks = read_ranges(rec.at("ranks"), static_cast<int>(row_of.size()), strides, !strides);
    // Version 3's columns: members that are arrays hold one value per rank, in the runs' order.
    const bool columns = strides && op_timing_has_columns(rec);
    const OpTiming shared = columns ? OpTiming{} : op_timing_from_json(rec);
    for (std::size_t k = 0; k < rec_ranks.size(); ++k) {
      const int row = row_of[static_cast<std::size_t>(rec_ranks[k])];
      if (row < 0 || seen[static_cast<std::size_t>(row)]) rec.at("ranks").fail("each included rank once per op");
      seen[static_cast<std::size_t>(row)] = 1, ++covered;
      per_row[static_cast<std::size_t>(row)] = columns ? op_timing_from_json(rec, k, rec_ranks.size()) : shared;
    }
  }
  if (covered != rows) op.at("records").fail("a record for every rank in ranks_included");
  tl.set_op(i, std::move(per_row));
}

}  // namespace

RankedTimeline folded_timeline_from_json(const JsonIn& node, const Plan& plan) {
  RankedTimeline out;
  out.world_size = static_cast<int>(node.at("world_size").positive_integer());
  if (out.world_size != plan.world_size)
    node.at("world_size").fail("the simulated plan's " + std::to_string(plan.world_size) +
                               " ranks (validate --layout simulates the part of the cluster a run used)");
  const bool strides = node.at("version").integer() >= 3;
  out.ranks = read_ranges(node.at("ranks_included"), out.world_size, strides, true);
  if (out.ranks.empty()) node.at("ranks_included").fail("at least one rank");
  std::vector<int> row_of(static_cast<std::size_t>(out.world_size), -1);
  for (std::size_t i = 0; i < out.ranks.size(); ++i) row_of[static_cast<std::size_t>(out.ranks[i])] = static_cast<int>(i);
  const JsonIn ops = node.at("ops");
  if (!ops.raw().is_array() || ops.raw().size() != plan.ops.size())
    ops.fail(std::to_string(plan.ops.size()) +
             " ops (the plan's op count): were the same trace and knobs used? (validate --step-times-only compares "
             "step times alone)");
  out.timeline = Timeline::folded(node.string_or("source", "measured"), static_cast<int>(out.ranks.size()), plan.ops.size());
  const auto items = ops.items();
  for (std::size_t i = 0; i < items.size(); ++i) read_op(items[i], i, row_of, out.ranks.size(), strides, out.timeline);
  return out;
}

}  // namespace redsim
