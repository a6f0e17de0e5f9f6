// Running the redsim binary from a test, in a fresh temporary directory.
#pragma once
#include <filesystem>
#include <string>

namespace redsim::testing {

struct TempDir {
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::filesystem::path path;
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

struct RunResult {
  int status = -1;  // exit status
  std::string out, err;
};

// Runs `redsim ARGS` (ARGS already shell-quoted where needed) with stdout and stderr captured.
RunResult run_redsim(const std::string& args, const TempDir& dir);

std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& text);
void write_gzip(const std::string& path, const std::string& text);  // throws std::runtime_error on failure
std::string quote(const std::string& s);  // single-quoted for sh

}  // namespace redsim::testing
