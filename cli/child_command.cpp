#include "cli/child_command.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <stdexcept>

#include "core/error.h"

#ifndef REDSIM_SOURCE_DIR
#define REDSIM_SOURCE_DIR ""
#endif

namespace redsim::cli {

std::string self_exe() {
  std::error_code ec;
  const auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw std::runtime_error("cannot resolve /proc/self/exe");
  return p.string();
}

std::string find_testbed() {
  if (const char* e = std::getenv("REDSIM_TESTBED"); e != nullptr && *e) return e;
  namespace fs = std::filesystem;
  std::vector<fs::path> candidates;
  if (std::string(REDSIM_SOURCE_DIR).size()) candidates.push_back(fs::path(REDSIM_SOURCE_DIR) / "realexec/testbed");
  const fs::path exe = self_exe();
  candidates.push_back(exe.parent_path().parent_path() / "realexec/testbed");
  candidates.push_back(exe.parent_path().parent_path().parent_path() / "realexec/testbed");
  for (const auto& c : candidates)
    if (fs::exists(c)) return c.string();
  throw InputError("", "", "--testbed: cannot find realexec/testbed (set REDSIM_TESTBED to its path)");
}

int run_child(const std::vector<std::string>& args) {
  std::cout.flush();
  std::cerr.flush();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    std::perror(("redsim: exec " + args.front()).c_str());
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

}  // namespace redsim::cli
