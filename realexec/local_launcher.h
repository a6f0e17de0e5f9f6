// `--ranks N`: N rank processes on this machine. The launcher serves the rendezvous store on
// 127.0.0.1 (an ephemeral port), forks the ranks (each dies with the launcher:
// PR_SET_PDEATHSIG), and watches them. When a rank fails it waits a moment for the others to
// report, kills the rest, and names the rank that failed first: a rank killed by a signal or
// exiting with its own error is a cause; a rank whose collective aborted (exit status
// kExitPeerFailure) is a consequence.
#pragma once
#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace redsim::realexec {

struct RankExit {
  int rank = 0;
  int status = 0;         // exit status, when !signaled
  int signal = 0;         // terminating signal, when signaled
  bool signaled = false;
  bool killed_by_launcher = false;
  double after_s = 0;     // seconds after launch
};

struct LaunchReport {
  int exit_code = 0;        // 0, 1 (a rank failed) or 2 (every failing rank reported bad input)
  std::string message;      // one line naming the failed rank(s); empty on success
  std::vector<RankExit> exits;
};

// rank_main runs in each forked child with (rank, store port) and returns its exit status.
// The calling process must not have started threads (fork duplicates only the caller).
// grace: how long to let the other ranks finish reporting after the first failure.
LaunchReport launch_local(int ranks, const std::function<int(int rank, int store_port)>& rank_main,
                          std::chrono::milliseconds grace = std::chrono::milliseconds(2000));

// "killed by signal 9 (SIGKILL)" / "exited with status 3 (collective aborted)".
std::string describe_exit(const RankExit& e);

}  // namespace redsim::realexec
