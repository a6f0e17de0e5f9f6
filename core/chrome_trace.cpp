#include "core/chrome_trace.h"

#include <algorithm>
#include <utility>

#include "core/units.h"

namespace redsim {

namespace {

// A JSON string: quoted as is when nothing in it needs escaping (every key and most names; a
// json object per key was a fifth of a large job's Perfetto output), else as nlohmann escapes it.
void append_json_string(std::string& out, std::string_view s) {
  const bool plain = std::all_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u >= 0x20 && u < 0x7f && c != '"' && c != '\\';
  });
  if (!plain) {
    out += nlohmann::json(s).dump();
    return;
  }
  out += '"';
  out += s;
  out += '"';
}

}  // namespace

void JsonObjectText::key(std::string_view k) {
  if (!body_.empty()) body_ += ", ";
  append_json_string(body_, k);
  body_ += ": ";
}

JsonObjectText& JsonObjectText::str(std::string_view k, std::string_view value) {
  key(k);
  append_json_string(body_, value);  // escaped: op names come from the trace file
  return *this;
}

JsonObjectText& JsonObjectText::num(std::string_view k, double value) {
  key(k);
  body_ += nlohmann::json(value).dump();
  return *this;
}

JsonObjectText& JsonObjectText::integer(std::string_view k, std::int64_t value) {
  key(k);
  body_ += std::to_string(value);
  return *this;
}

JsonObjectText& JsonObjectText::object(std::string_view k, const JsonObjectText& value) {
  key(k);
  body_ += value.text();
  return *this;
}

namespace {

void metadata_events(const Plan& plan, int r, const EventSink& emit) {
  auto meta = [&](std::string_view name, std::int64_t tid, const JsonObjectText& args) {
    emit(JsonObjectText().str("ph", "M").str("name", name).integer("pid", r).integer("tid", tid).object("args", args).text());
  };
  meta("process_name", 0, JsonObjectText().str("name", "rank " + std::to_string(r)));
  meta("process_sort_index", 0, JsonObjectText().integer("sort_index", r));
  for (std::size_t s = 0; s < plan.streams.size(); ++s)
    meta("thread_name", static_cast<std::int64_t>(s), JsonObjectText().str("name", plan.streams[s]));
}

JsonObjectText op_args(const PlanOp& op, const OpTiming& t, const Timeline& tl) {
  JsonObjectText args;
  args.integer("op", op.id);
  if (op_kind_is_collective(op.kind)) {
    args.integer("bytes", op.bytes).integer("bytes_sent", t.bytes_sent).integer("channels", op.channels);
    args.str("algorithm", algorithm_name(op.algorithm));
    if (op.protocol) args.str("protocol", protocol_name(*op.protocol));
    args.num("issued_us", t.ready_s * kUsPerS);
  } else if (tl.source == "simulated" && t.end_s - t.start_s > op.duration_s * (1 + 1e-9) + 1e-12) {
    // Slowed beside collectives (the cluster's interference): what it would take alone.
    args.num("alone_us", op.duration_s * kUsPerS);
    args.num("slowed_by_collectives_us", (t.end_s - t.start_s - op.duration_s) * kUsPerS);
  }
  return args;
}

// The activations the rank holds over the step, as a counter track: each layer's saved bytes
// from the end of its forward to the end of its backward (PlanOp::activation_delta_bytes).
void activation_counter_events(const Plan& plan, const Timeline& tl, int r, const EventSink& emit) {
  std::vector<std::pair<double, std::uint32_t>> changes;
  for (const auto& op : plan.ops)
    if (op.activation_delta_bytes != 0) changes.push_back({tl.at(r, op.id).end_s, op.id});
  if (changes.empty()) return;
  std::sort(changes.begin(), changes.end());
  auto counter = [&](double t_s, std::int64_t bytes) {
    emit(JsonObjectText()
             .str("ph", "C")
             .str("name", "activations held (model)")  // bytes, as the collective counters
             .integer("pid", r)
             .num("ts", t_s * kUsPerS)
             .object("args", JsonObjectText().integer("bytes", bytes))
             .text());
  };
  std::int64_t held = 0;
  counter(0, held);
  for (std::size_t i = 0; i < changes.size(); ++i) {
    held += plan.ops[changes[i].second].activation_delta_bytes;
    // One sample per instant: ops ending together give one value.
    if (i + 1 == changes.size() || changes[i + 1].first != changes[i].first) counter(changes[i].first, held);
  }
}

}  // namespace

void chrome_trace_events(const Plan& plan, const Timeline& tl, const std::vector<int>& ranks, const EventSink& emit) {
  for (int r : ranks) metadata_events(plan, r, emit);
  for (int r : ranks)
    for (const auto& op : plan.ops) {
      const auto& t = tl.at(r, op.id);
      emit(JsonObjectText()
               .str("ph", "X")
               .str("name", op.name)
               .str("cat", op_kind_name(op.kind))
               .integer("pid", r)
               .integer("tid", op.stream)
               .num("ts", t.start_s * kUsPerS)
               .num("dur", (t.end_s - t.start_s) * kUsPerS)
               .object("args", op_args(op, t, tl))
               .text());
    }
  for (int r : ranks) activation_counter_events(plan, tl, r, emit);
}

void write_chrome_trace(const Plan& plan, const Timeline& tl, const std::vector<int>& ranks,
                        const std::function<void(const EventSink&)>& more, const OutputSink& out) {
  std::string buf = "{\"traceEvents\": [";
  bool first = true;
  const EventSink emit = [&](const std::string& event) {
    buf += first ? "\n" : ",\n";
    first = false;
    buf += event;
    if (buf.size() > (1u << 16)) out(buf), buf.clear();
  };
  chrome_trace_events(plan, tl, ranks, emit);
  if (more) more(emit);
  buf += "],\n\"displayTimeUnit\": \"ms\", \"otherData\": ";
  buf += JsonObjectText().str("producer", "redsim").str("source", tl.source).str("strategy", plan.strategy).text();
  out(buf + "}\n");
}

nlohmann::json timeline_to_chrome_trace(const Plan& plan, const Timeline& tl) {
  std::vector<int> ranks(static_cast<std::size_t>(tl.world_size));
  for (int r = 0; r < tl.world_size; ++r) ranks[static_cast<std::size_t>(r)] = r;
  return timeline_to_chrome_trace(plan, tl, ranks);
}

nlohmann::json timeline_to_chrome_trace(const Plan& plan, const Timeline& tl, const std::vector<int>& ranks) {
  std::string text;
  write_chrome_trace(plan, tl, ranks, {}, [&](std::string_view s) { text.append(s); });
  return nlohmann::json::parse(text);
}

}  // namespace redsim
