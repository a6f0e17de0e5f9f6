#include "core/error.h"

#include <cstdio>

namespace redsim {
namespace {
std::string compose(const std::string& file, const std::string& json_path, const std::string& what) {
  std::string msg;
  if (!file.empty()) msg += file + ": ";
  if (!json_path.empty()) msg += json_path + ": ";
  msg += what;
  // One line, always: a newline inside an error message breaks log grepping.
  for (char& c : msg)
    if (c == '\n' || c == '\r') c = ' ';
  return printable(msg);
}
}  // namespace

std::string printable(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

InputError::InputError(const std::string& file, const std::string& json_path, const std::string& what)
    : std::runtime_error(compose(file, json_path, what)) {}

}  // namespace redsim
