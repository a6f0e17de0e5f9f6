// Perfetto event text (core/chrome_trace.h): keys and names are written as JSON strings, quoted
// as they are when nothing needs escaping and escaped as nlohmann escapes them otherwise.
#include <catch2/catch.hpp>

#include "core/chrome_trace.h"

using namespace redsim;

TEST_CASE("event text quotes plain strings and escapes the others as nlohmann does", "[core][chrome_trace]") {
  JsonObjectText plain;
  plain.str("name", "bucket 3: allreduce").integer("pid", 7);
  CHECK(plain.text() == "{\"name\": \"bucket 3: allreduce\", \"pid\": 7}");

  // Names come from the trace file: quotes, backslashes, control bytes, DEL and UTF-8.
  for (const std::string& name : {std::string("layer\"1\""), std::string("a\\b"), std::string("tab\there"),
                                 std::string("nl\n"), std::string("bell\x07"), std::string("del\x7f"),
                                 std::string("caf\xc3\xa9"), std::string("")}) {
    JsonObjectText o;
    o.str("name", name);
    CHECK(o.text() == "{\"name\": " + nlohmann::json(name).dump() + "}");
    CHECK(nlohmann::json::parse(o.text())["name"] == name);
  }
}
