// Strict reading of JSON input: every accessor knows its file and JSON path, so a bad value
// produces a one-line InputError such as "c.json: $.nodes: expected a positive integer, got -1".
#pragma once
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace redsim {

using nlohmann::json;

class JsonIn {
 public:
  JsonIn(const json& node, std::string path, std::string file);

  // Parses a whole file; malformed JSON becomes an InputError naming the line and column.
  static json parse_file(const std::string& file);
  static json parse_text(const std::string& text, const std::string& file);

  const json& raw() const { return *node_; }
  const std::string& path() const { return path_; }
  const std::string& file() const { return file_; }

  JsonIn at(std::string_view key) const;               // required member
  std::optional<JsonIn> find(std::string_view key) const;  // optional member (null counts as absent)
  std::vector<JsonIn> items() const;                   // array elements (expects an array)
  std::vector<JsonIn> nonempty_items() const;

  void expect_object() const;
  // Rejects members not listed: a typo in an optional key must not be silently ignored.
  void allow_only(std::initializer_list<std::string_view> keys) const;

  std::string string() const;
  std::string nonempty_string() const;
  bool boolean() const;
  double number() const;
  double positive_number() const;     // > 0
  double nonnegative_number() const;  // >= 0
  std::int64_t integer() const;
  std::int64_t positive_integer() const;
  std::int64_t nonnegative_integer() const;
  // One of the listed names; the message lists them.
  std::string one_of(std::initializer_list<std::string_view> names) const;

  // Convenience for optional members with defaults.
  double number_or(std::string_view key, double fallback) const;
  double positive_number_or(std::string_view key, double fallback) const;
  double nonnegative_number_or(std::string_view key, double fallback) const;
  std::int64_t positive_integer_or(std::string_view key, std::int64_t fallback) const;
  std::string string_or(std::string_view key, const std::string& fallback) const;
  bool boolean_or(std::string_view key, bool fallback) const;

  [[noreturn]] void fail(const std::string& expectation) const;

 private:
  std::string describe() const;  // short rendering of the offending value
  const json* node_;
  std::string path_;
  std::string file_;
};

}  // namespace redsim
