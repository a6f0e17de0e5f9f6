#include "core/json_parse.h"

#include <set>
#include <vector>

#include "core/error.h"

namespace redsim {

using nlohmann::json;

namespace {

// Where the parser is: one frame per open array or object, enough to name a JSON path.
struct Frame {
  bool is_object = false;
  std::size_t index = 0;   // arrays: elements completed so far
  std::string key;         // objects: the member being read
  std::set<std::string> keys;
};

class PathTracker {
 public:
  explicit PathTracker(const std::string& file) : file_(file) {}

  bool on_event(int depth, json::parse_event_t event, const json& parsed) {
    using E = json::parse_event_t;
    switch (event) {
      case E::object_start:
      case E::array_start:
        if (depth >= kMaxJsonDepth)
          throw InputError(file_, path(), "expected at most " + std::to_string(kMaxJsonDepth) +
                                              " levels of nested arrays and objects, got deeper nesting");
        frames_.push_back(Frame{event == E::object_start, 0, {}, {}});
        break;
      case E::key: on_key(parsed.get<std::string>()); break;
      case E::object_end:
      case E::array_end:
        frames_.pop_back();
        completed();
        break;
      case E::value: completed(); break;
    }
    return true;
  }

  // "$", "$.a", "$.a[3]": the value being read now.
  std::string path() const {
    std::string p = "$";
    for (const auto& f : frames_) p += f.is_object ? (f.key.empty() ? "" : "." + f.key) : "[" + std::to_string(f.index) + "]";
    return p;
  }

 private:
  void on_key(const std::string& key) {
    Frame& f = frames_.back();
    f.key = key;
    if (!f.keys.insert(key).second)
      throw InputError(file_, path(), "duplicate member: expected each key once in an object");
  }
  void completed() {
    if (!frames_.empty() && !frames_.back().is_object) ++frames_.back().index;
  }

  std::string file_;
  std::vector<Frame> frames_;
};

std::string line_column(const std::string& text, std::size_t byte) {
  // nlohmann reports a byte offset; turn it into line:column, which editors understand.
  std::size_t line = 1, col = 1;
  for (std::size_t i = 0; i + 1 < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(col);
}

}  // namespace

json parse_json_strict(const std::string& text, const std::string& file) {
  PathTracker where(file);
  try {
    return json::parse(text, [&where](int depth, json::parse_event_t event, json& parsed) {
      return where.on_event(depth, event, parsed);
    });
  } catch (const json::parse_error& e) {
    // nlohmann's own account of what it found ends its message: "... - invalid literal; last read: 'x'".
    const std::string what = e.what();
    const auto dash = what.rfind(" - ");
    const std::string found = dash == std::string::npos ? "" : " (" + printable(what.substr(dash + 3)) + ")";
    throw InputError(file, "$", "malformed JSON at " + line_column(text, e.byte) +
                                    ": expected valid JSON, got text that is not valid JSON" + found);
  } catch (const json::out_of_range&) {
    // The lexer rejects 1e999 before the callback sees it: the path is where the parser stood.
    throw InputError(file, where.path(), "expected a number within the range of a double, got one out of range");
  }
}

}  // namespace redsim
