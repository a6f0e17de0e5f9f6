#include "core/json_in.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/join.h"
#include "core/json_parse.h"

namespace redsim {

JsonIn::JsonIn(const json& node, std::string path, std::string file)
    : node_(&node), path_(std::move(path)), file_(std::move(file)) {}

json JsonIn::parse_text(const std::string& text, const std::string& file) {
  return parse_json_strict(text, file);
}

json JsonIn::parse_file(const std::string& file) {
  std::error_code ec;
  // A directory opens as a stream that reads nothing: say what it is rather than "malformed JSON".
  if (std::filesystem::is_directory(file, ec)) throw InputError(file, "", "expected a JSON file, got a directory");
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(file, "", "cannot open file for reading");
  // Bounded: --trace /dev/zero must not read forever.
  std::string text;
  std::vector<char> buf(1 << 16);
  while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0) {
    text.append(buf.data(), static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxJsonFileBytes)
      throw InputError(file, "", "expected a JSON file of at most " + std::to_string(kMaxJsonFileBytes >> 20) +
                                     " MiB, got more");
  }
  return parse_text(text, file);
}

std::string JsonIn::describe() const {
  std::string s = node_->dump();
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

void JsonIn::fail(const std::string& expectation) const {
  throw InputError(file_, path_, "expected " + expectation + ", got " + describe());
}

void JsonIn::expect_object() const {
  if (!node_->is_object()) fail("an object");
}

JsonIn JsonIn::at(std::string_view key) const {
  expect_object();
  auto it = node_->find(key);
  if (it == node_->end() || it->is_null())
    throw InputError(file_, path_ + "." + std::string(key), "missing required member");
  return JsonIn(*it, path_ + "." + std::string(key), file_);
}

std::optional<JsonIn> JsonIn::find(std::string_view key) const {
  expect_object();
  auto it = node_->find(key);
  if (it == node_->end() || it->is_null()) return std::nullopt;
  return JsonIn(*it, path_ + "." + std::string(key), file_);
}

std::vector<JsonIn> JsonIn::items() const {
  if (!node_->is_array()) fail("an array");
  std::vector<JsonIn> out;
  out.reserve(node_->size());
  for (std::size_t i = 0; i < node_->size(); ++i)
    out.emplace_back((*node_)[i], path_ + "[" + std::to_string(i) + "]", file_);
  return out;
}

std::vector<JsonIn> JsonIn::nonempty_items() const {
  auto v = items();
  if (v.empty()) fail("a non-empty array");
  return v;
}

void JsonIn::allow_only(std::initializer_list<std::string_view> keys) const {
  expect_object();
  for (auto it = node_->begin(); it != node_->end(); ++it) {
    bool known = false;
    for (auto k : keys) known = known || it.key() == k;
    if (!known) {
      const std::string list = join(keys, ", ");
      throw InputError(file_, path_ + "." + it.key(), "unknown member; expected one of: " + list);
    }
  }
}

std::string JsonIn::string() const {
  if (!node_->is_string()) fail("a string");
  return node_->get<std::string>();
}

std::string JsonIn::nonempty_string() const {
  auto s = string();
  if (s.empty()) fail("a non-empty string");
  return s;
}

bool JsonIn::boolean() const {
  if (!node_->is_boolean()) fail("true or false");
  return node_->get<bool>();
}

double JsonIn::number() const {
  if (!node_->is_number()) fail("a number");
  double v = node_->get<double>();
  if (!std::isfinite(v)) fail("a finite number");
  return v;
}

double JsonIn::positive_number() const {
  double v = number();
  if (!(v > 0)) fail("a positive number");
  return v;
}

double JsonIn::nonnegative_number() const {
  double v = number();
  if (v < 0) fail("a non-negative number");
  return v;
}

std::int64_t JsonIn::integer() const {
  if (node_->is_number_integer()) return node_->get<std::int64_t>();
  // 1e6 written as a float is still an integer value; 2.5 is not.
  if (node_->is_number_float()) {
    double v = node_->get<double>();
    if (std::isfinite(v) && std::floor(v) == v && std::fabs(v) < 9.0e18) return static_cast<std::int64_t>(v);
  }
  fail("an integer");
}

std::int64_t JsonIn::positive_integer() const {
  if (node_->is_number_unsigned() && node_->get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
    fail("an integer below 2^63");
  auto v = integer();
  if (v <= 0) fail("a positive integer");
  return v;
}

std::int64_t JsonIn::nonnegative_integer() const {
  auto v = integer();
  if (v < 0) fail("a non-negative integer");
  return v;
}

std::string JsonIn::one_of(std::initializer_list<std::string_view> names) const {
  const std::string list = join(names, "|");
  if (!node_->is_string()) fail("one of " + list);
  auto s = node_->get<std::string>();
  for (auto n : names)
    if (s == n) return s;
  fail("one of " + list);
}

double JsonIn::number_or(std::string_view key, double fallback) const {
  auto m = find(key);
  return m ? m->number() : fallback;
}
double JsonIn::positive_number_or(std::string_view key, double fallback) const {
  auto m = find(key);
  return m ? m->positive_number() : fallback;
}
double JsonIn::nonnegative_number_or(std::string_view key, double fallback) const {
  auto m = find(key);
  return m ? m->nonnegative_number() : fallback;
}
std::int64_t JsonIn::positive_integer_or(std::string_view key, std::int64_t fallback) const {
  auto m = find(key);
  return m ? m->positive_integer() : fallback;
}
std::string JsonIn::string_or(std::string_view key, const std::string& fallback) const {
  auto m = find(key);
  return m ? m->string() : fallback;
}
bool JsonIn::boolean_or(std::string_view key, bool fallback) const {
  auto m = find(key);
  return m ? m->boolean() : fallback;
}

}  // namespace redsim
