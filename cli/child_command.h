// Running redsim (or the testbed script) as a child process: validate and calibrate measure by
// starting `redsim run` / `redsim calibrate` under realexec/testbed, one process per rank.
#pragma once
#include <string>
#include <vector>

namespace redsim::cli {

// This executable's path (/proc/self/exe).
std::string self_exe();

// The testbed script: $REDSIM_TESTBED, else <source dir>/realexec/testbed (compiled in), else
// ../realexec/testbed or ../../realexec/testbed from the executable. Throws InputError if none.
std::string find_testbed();

// Runs argv (argv[0] a path) with stdout/stderr inherited; returns its exit status, or 128 + the
// signal that ended it.
int run_child(const std::vector<std::string>& argv);

}  // namespace redsim::cli
