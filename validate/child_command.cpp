#include "validate/child_command.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "core/error.h"

#ifndef REDSIM_SOURCE_DIR
#define REDSIM_SOURCE_DIR ""
#endif

namespace redsim {

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

TestbedSpec parse_testbed(const std::string& s) {
  TestbedSpec t;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) throw InputError("", "", "--testbed: expected key=value items, got \"" + item + "\"");
    const std::string k = item.substr(0, eq), v = item.substr(eq + 1);
    try {
      if (k == "nodes")
        t.nodes = std::stoi(v);
      else if (k == "ranks-per-node")
        t.ranks_per_node = std::stoi(v);
      else if (k == "rate")
        t.rate = v;
      else
        throw InputError("", "", "--testbed: unknown key \"" + k + "\" (expected nodes, ranks-per-node, rate)");
    } catch (const std::logic_error&) {
      throw InputError("", "", "--testbed: " + k + ": expected an integer, got \"" + v + "\"");
    }
  }
  if (t.nodes < 1 || t.ranks_per_node < 1 || t.rate.empty())
    throw InputError("", "", "--testbed: expected nodes=K,ranks-per-node=R,rate=RATE (e.g. rate=400mbit), got \"" +
                                 s + "\"");
  return t;
}

std::vector<std::string> testbed_argv(const TestbedSpec& tb, const std::vector<std::string>& inner) {
  std::vector<std::string> args = {"/bin/bash", find_testbed(), "run", "--nodes", std::to_string(tb.nodes),
                                   "--ranks-per-node", std::to_string(tb.ranks_per_node), "--rate", tb.rate,
                                   "--", self_exe()};
  args.insert(args.end(), inner.begin(), inner.end());
  return args;
}

}  // namespace redsim
