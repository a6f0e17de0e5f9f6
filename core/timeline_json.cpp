#include "core/timeline_json.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <set>

#include "core/error.h"
#include "core/units.h"

namespace redsim {

using nlohmann::json;

json timeline_to_json(const Plan& plan, const Timeline& tl) {
  std::vector<int> ranks(static_cast<std::size_t>(tl.world_size));
  for (int r = 0; r < tl.world_size; ++r) ranks[static_cast<std::size_t>(r)] = r;
  return timeline_to_json(plan, tl, ranks, tl.world_size);
}

json timeline_to_json(const Plan& plan, const Timeline& tl, const std::vector<int>& rank_of_row, int world_size) {
  json ranks = json::array();
  for (int r = 0; r < tl.world_size; ++r) {
    json ops = json::array();
    for (std::size_t i = 0; i < tl.op_count; ++i) {
      const auto& t = tl.at(r, i);
      json o = {{"op", i}, {"ready_s", t.ready_s}, {"start_s", t.start_s}, {"end_s", t.end_s}};
      if (op_kind_is_collective(plan.ops[i].kind)) {
        o["bytes_sent"] = t.bytes_sent;
        o["bytes_received"] = t.bytes_received;
      }
      ops.push_back(std::move(o));
    }
    ranks.push_back({{"rank", rank_of_row.at(static_cast<std::size_t>(r))}, {"ops", std::move(ops)}});
  }
  return {{"format", "redsim-timeline"}, {"version", 1}, {"source", tl.source}, {"world_size", world_size},
          {"ranks", std::move(ranks)}};
}

namespace {

// A measured time in seconds: finite and within 1e9 s (31 years) of the step's start.
double time_s(const JsonIn& v) {
  const double t = v.number();
  if (std::fabs(t) > 1e9) v.fail("a time in seconds within 1e9 of the step's start");
  return t;
}

}  // namespace

namespace {

// The members op_timing_from_json reads.
constexpr std::array<const char*, 5> kRecordMembers{"ready_s", "start_s", "end_s", "bytes_sent", "bytes_received"};

// Member `key` of a record for its k-th rank of n: the member, or, when n > 0 and it is an array,
// its element k (an array holds one value per rank).
std::optional<JsonIn> member(const JsonIn& o, std::string_view key, std::size_t k, std::size_t n) {
  auto m = o.find(key);
  if (!m || n == 0 || !m->raw().is_array()) return m;
  if (m->raw().size() != n) m->fail("a value, or an array of one value per rank of the record (" + std::to_string(n) + ")");
  return JsonIn(m->raw()[k], m->path() + "[" + std::to_string(k) + "]", m->file());
}

}  // namespace

OpTiming op_timing_from_json(const JsonIn& o, std::size_t rank_index, std::size_t record_ranks) {
  auto required = [&](std::string_view key) {
    if (auto m = member(o, key, rank_index, record_ranks)) return *m;
    return o.at(key);  // its "missing member" error
  };
  OpTiming t;
  t.start_s = time_s(required("start_s"));
  t.end_s = time_s(required("end_s"));
  const auto ready = member(o, "ready_s", rank_index, record_ranks);
  t.ready_s = ready ? time_s(*ready) : t.start_s;
  if (auto b = member(o, "bytes_sent", rank_index, record_ranks)) t.bytes_sent = b->nonnegative_integer();
  if (auto b = member(o, "bytes_received", rank_index, record_ranks)) t.bytes_received = b->nonnegative_integer();
  return t;
}

bool op_timing_has_columns(const JsonIn& record) {
  const auto& r = record.raw();
  return std::any_of(kRecordMembers.begin(), kRecordMembers.end(),
                     [&](const char* key) { return r.contains(key) && r[key].is_array(); });
}

namespace {

void read_rank_ops(const JsonIn& ops, const Plan& plan, Timeline& tl, int row) {
  if (!ops.raw().is_array() || ops.raw().size() != plan.ops.size())
    throw InputError(ops.file(), ops.path(),
                     "expected " + std::to_string(plan.ops.size()) +
                         " ops (the plan's op count): were the same trace and knobs measured? (validate "
                         "--step-times-only compares step times alone)");
  const auto items = ops.items();
  for (std::size_t i = 0; i < items.size(); ++i) {
    const JsonIn& o = items[i];
    if (auto id = o.find("op"); id && id->integer() != static_cast<std::int64_t>(i))
      id->fail("op " + std::to_string(i) + " (ops in plan order)");
    tl.mutable_at(row, i) = op_timing_from_json(o);
  }
}

}  // namespace

RankedTimeline timeline_from_json(const JsonIn& node, const Plan& plan) {
  node.expect_object();
  if (auto version = node.find("version"); version && version->integer() >= 2) {
    if (version->integer() > 3) version->fail("version 1, 2 or 3 (this redsim writes 3)");
    return folded_timeline_from_json(node, plan);
  }
  const JsonIn ranks = node.at("ranks");
  const auto rows = ranks.nonempty_items();
  RankedTimeline out;
  const auto world = node.find("world_size");
  out.world_size = world ? static_cast<int>(world->positive_integer()) : static_cast<int>(rows.size());
  if (out.world_size != plan.world_size)
    throw InputError(node.file(), world ? world->path() : ranks.path(),
                     "the measured timeline has " + std::to_string(out.world_size) +
                         " ranks but the simulated plan has " + std::to_string(plan.world_size) +
                         ": was it measured on this cluster? (validate --layout simulates the part of it a run used)");
  out.timeline = Timeline(node.string_or("source", "measured"), static_cast<int>(rows.size()), plan.ops.size());
  std::set<int> seen;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const JsonIn& row = rows[i];
    int rank = static_cast<int>(i);
    if (auto r = row.find("rank")) {
      const auto v = r->nonnegative_integer();
      if (v >= out.world_size) r->fail("a rank below the world size " + std::to_string(out.world_size));
      rank = static_cast<int>(v);
      if (!seen.insert(rank).second) r->fail("each rank once");
    } else if (!seen.insert(rank).second) {
      row.fail("a \"rank\" member (the rows before name their ranks)");
    }
    out.ranks.push_back(rank);
    read_rank_ops(row.at("ops"), plan, out.timeline, static_cast<int>(i));
  }
  return out;
}

json summary_to_json(const Plan& plan, const StepSummary& s) {
  json colls = json::array();
  for (const auto& c : s.collectives) {
    const auto& op = plan.ops[c.op];
    json o = {{"op", c.op},           {"name", op.name},          {"kind", op_kind_name(op.kind)},
              {"bytes", c.bytes},     {"tensors", c.tensors},     {"start_s", c.start_s},
              {"end_s", c.end_s},     {"algbw_GBps", c.algbw_GBps}, {"busbw_GBps", c.busbw_GBps}};
    if (c.bucket >= 0) o["bucket"] = c.bucket;
    o["algorithm"] = algorithm_name(op.algorithm);
    if (op.protocol) o["protocol"] = protocol_name(*op.protocol);
    o["channels"] = op.channels;
    colls.push_back(std::move(o));
  }
  json out = {{"step_time_s", s.step_time_s},
              {"compute_time_s", s.compute_time_s},
              {"comm_time_s", s.comm_time_s},
              {"exposed_comm_s", s.exposed_comm_s},
              {"time_per_sample_s", s.time_per_sample_s},
              {"bytes_sent_per_rank", s.bytes_sent_per_rank},
              {"collectives", std::move(colls)}};
  if (s.compute_stretched_s > 0) out["compute_stretched_s"] = s.compute_stretched_s;
  return out;
}

}  // namespace redsim
