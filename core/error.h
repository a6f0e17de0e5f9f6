// Errors a user can fix (bad input) versus bugs. InputError maps to exit status 2.
#pragma once
#include <stdexcept>
#include <string>

namespace redsim {

class InputError : public std::runtime_error {
 public:
  // file: where the bad input came from ("" for the command line); json_path: "$.a.b[3]" or "".
  InputError(const std::string& file, const std::string& json_path, const std::string& what);
};

inline constexpr int kExitBadInput = 2;

// Replaces bytes that could drive a terminal or break a line (controls, DEL, non-ASCII) by \xNN,
// so a message never echoes raw input bytes. Every InputError message goes through it.
std::string printable(const std::string& s);

}  // namespace redsim
