#include "core/error.h"

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
  return msg;
}
}  // namespace

InputError::InputError(const std::string& file, const std::string& json_path, const std::string& what)
    : std::runtime_error(compose(file, json_path, what)) {}

}  // namespace redsim
