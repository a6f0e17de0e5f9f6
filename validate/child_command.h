// Running redsim (or the testbed script) as a child process: validate and calibrate measure by
// starting `redsim run` / `redsim calibrate` as children, locally or under realexec/testbed (one
// process per rank in network namespaces joined by shaped links; root only).
#pragma once
#include <string>
#include <vector>

namespace redsim {

// This executable's path (/proc/self/exe).
std::string self_exe();

// The testbed script: $REDSIM_TESTBED, else <source dir>/realexec/testbed (compiled in), else
// ../realexec/testbed or ../../realexec/testbed from the executable. Throws InputError if none.
std::string find_testbed();

// Runs argv (argv[0] a path) with stdout/stderr inherited; returns its exit status, or 128 + the
// signal that ended it.
int run_child(const std::vector<std::string>& argv);

// --testbed nodes=K,ranks-per-node=R,rate=RATE (rate as tc writes it: 400mbit, 1gbit).
struct TestbedSpec {
  int nodes = 0;
  int ranks_per_node = 0;
  std::string rate;
  int ranks() const { return nodes * ranks_per_node; }
};
// Throws InputError ("--testbed: ...") for anything but K >= 1, R >= 1 and a rate.
TestbedSpec parse_testbed(const std::string& text);

// The argv that runs `inner` (this executable's argv[1:]: a subcommand and its options) once
// per rank inside the testbed.
std::vector<std::string> testbed_argv(const TestbedSpec& testbed, const std::vector<std::string>& inner);

}  // namespace redsim
