// The Chrome trace event format (opens in ui.perfetto.dev): one process per rank, one thread per
// stream, an X slice per op. Written as text event by event, never as one JSON tree: a ZeRO step
// at 131,072 ranks draws about a million events, and a tree of them took 2.3 GB.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/plan.h"
#include "core/timeline.h"

namespace redsim {

// A JSON object as text, member by member (strings escaped, numbers as nlohmann prints them).
class JsonObjectText {
 public:
  JsonObjectText& str(std::string_view key, std::string_view value);
  JsonObjectText& num(std::string_view key, double value);
  JsonObjectText& integer(std::string_view key, std::int64_t value);
  JsonObjectText& object(std::string_view key, const JsonObjectText& value);
  std::string text() const { return "{" + body_ + "}"; }

 private:
  void key(std::string_view k);
  std::string body_;
};

// Receives each event's text.
using EventSink = std::function<void(const std::string&)>;

// The metadata (process and thread names) and one X slice per op for each of `ranks` (sorted;
// ranks of the timeline).
void chrome_trace_events(const Plan& plan, const Timeline& timeline, const std::vector<int>& ranks, const EventSink& emit);

// The whole trace: those events, then what `more` emits (flows, counters; may be empty).
void write_chrome_trace(const Plan& plan, const Timeline& timeline, const std::vector<int>& ranks,
                        const std::function<void(const EventSink&)>& more, const OutputSink& out);

// The same trace as a JSON value, every rank drawn (for small timelines and tests).
nlohmann::json timeline_to_chrome_trace(const Plan& plan, const Timeline& timeline);
// Only these ranks (sorted; each a rank of the timeline), a process each.
nlohmann::json timeline_to_chrome_trace(const Plan& plan, const Timeline& timeline, const std::vector<int>& ranks);

}  // namespace redsim
