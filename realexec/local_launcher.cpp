#include "realexec/local_launcher.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <stdexcept>
#include <thread>

#include "core/error.h"
#include "realexec/backend.h"
#include "realexec/clock.h"
#include "realexec/launch_env.h"
#include "realexec/tcp_store.h"

namespace redsim::realexec {
namespace {

std::string rank_list(const std::vector<int>& ranks) {
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

bool failed(const RankExit& e) { return e.signaled || e.status != 0; }

}  // namespace

std::string describe_exit(const RankExit& e) {
  if (e.signaled) {
    const char* abbrev = sigabbrev_np(e.signal);
    return "killed by signal " + std::to_string(e.signal) + (abbrev ? std::string(" (SIG") + abbrev + ")" : std::string());
  }
  std::string s = "exited with status " + std::to_string(e.status);
  if (e.status == kExitPeerFailure) s += " (collective aborted)";
  if (e.status == kExitBadInput) s += " (bad input)";
  if (e.status == kExitRankError) s += " (rank error)";
  return s;
}

namespace {

// Forks one process per rank; each runs rank_main with the store's port and the job's secret.
std::map<pid_t, int> fork_ranks(int ranks, const std::function<int(int, int)>& rank_main, ListeningSocket& sock,
                                const std::string& secret) {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  const pid_t parent = ::getpid();
  std::map<pid_t, int> rank_of;
  for (int r = 0; r < ranks; ++r) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(kExitPeerFailure);
      ::close(sock.fd);
      ::setenv(kStoreSecretVar, secret.c_str(), 1);  // the job's secret, for this rank only
      int rc = kExitRankError;
      try {
        rc = rank_main(r, sock.port);
      } catch (const std::exception& e) {
        std::cerr << "redsim: rank " << r << ": " << e.what() << "\n";
      }
      std::cout.flush();
      std::cerr.flush();
      std::fflush(nullptr);
      ::_exit(rc);
    }
    if (pid < 0) {
      const std::string why = std::strerror(errno);
      for (const auto& [p, rr] : rank_of) ::kill(p, SIGKILL);
      for (const auto& [p, rr] : rank_of) ::waitpid(p, nullptr, 0);
      ::close(sock.fd);
      throw std::runtime_error("cannot start rank " + std::to_string(r) + ": fork: " + why);
    }
    rank_of[pid] = r;
  }
  return rank_of;
}

// Reaps every rank; once one has failed, the others get `grace` to exit before they are killed.
void reap_ranks(std::map<pid_t, int>& rank_of, std::chrono::milliseconds grace, double t0, LaunchReport& report) {
  bool any_failure = false;
  double deadline = 0;
  while (!rank_of.empty()) {
    int st = 0;
    const pid_t p = ::waitpid(-1, &st, any_failure ? WNOHANG : 0);
    if (p > 0) {
      auto it = rank_of.find(p);
      if (it == rank_of.end()) continue;
      RankExit e;
      e.rank = it->second;
      e.signaled = WIFSIGNALED(st);
      e.signal = e.signaled ? WTERMSIG(st) : 0;
      e.status = WIFEXITED(st) ? WEXITSTATUS(st) : 0;
      e.after_s = now_s() - t0;
      report.exits.push_back(e);
      rank_of.erase(it);
      if (failed(e) && !any_failure) {
        any_failure = true;
        deadline = now_s() + static_cast<double>(grace.count()) / 1000.0;
      }
    } else if (p == 0) {
      if (now_s() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        continue;
      }
      for (const auto& [pid, r] : rank_of) ::kill(pid, SIGKILL);
      for (const auto& [pid, r] : rank_of) {
        ::waitpid(pid, nullptr, 0);
        RankExit e;
        e.rank = r;
        e.signaled = true;
        e.signal = SIGKILL;
        e.killed_by_launcher = true;
        e.after_s = now_s() - t0;
        report.exits.push_back(e);
      }
      rank_of.clear();
    } else if (errno != EINTR) {
      break;
    }
  }
}

std::vector<int> sorted_ranks(const std::vector<RankExit>& v) {
  std::vector<int> r;
  for (const auto& e : v) r.push_back(e.rank);
  std::sort(r.begin(), r.end());
  return r;
}

// The report's message and exit code: the ranks that failed first, then those that stopped
// because of them.
void summarise_exits(LaunchReport& report) {
  std::vector<RankExit> causes, aborted, killed;
  for (const auto& e : report.exits) {
    if (!failed(e)) continue;
    if (e.killed_by_launcher)
      killed.push_back(e);
    else if (!e.signaled && e.status == kExitPeerFailure)
      aborted.push_back(e);
    else
      causes.push_back(e);
  }
  if (!causes.empty()) {
    std::sort(causes.begin(), causes.end(), [](const RankExit& a, const RankExit& b) { return a.after_s < b.after_s; });
    std::string msg;
    bool all_bad_input = true;
    char when[64];
    for (const auto& e : causes) {
      std::snprintf(when, sizeof when, "%.2f s into the run", e.after_s);
      msg += (msg.empty() ? "" : "; ") + std::string("rank ") + std::to_string(e.rank) + " failed (" + describe_exit(e) +
             ", " + when + ")";
      all_bad_input = all_bad_input && !e.signaled && e.status == kExitBadInput;
    }
    std::vector<RankExit> others = aborted;
    others.insert(others.end(), killed.begin(), killed.end());
    if (!others.empty()) msg += "; " + rank_list(sorted_ranks(others)) + " stopped because of it";
    report.message = msg;
    report.exit_code = all_bad_input ? kExitBadInput : 1;
  } else if (!aborted.empty() || !killed.empty()) {
    std::string msg;
    if (!killed.empty())
      msg = rank_list(sorted_ranks(killed)) + " stopped responding (the others' collectives aborted; killed by the launcher)";
    if (!aborted.empty())
      msg += (msg.empty() ? "" : "; ") + rank_list(sorted_ranks(aborted)) +
             " aborted a collective (lost peer or timeout; see their messages above)";
    report.message = msg;
    report.exit_code = 1;
  }
}

}  // namespace

LaunchReport launch_local(int ranks, const std::function<int(int, int)>& rank_main, std::chrono::milliseconds grace) {
  if (ranks < 1) throw std::invalid_argument("--ranks must be at least 1");
  ListeningSocket sock = listen_tcp("127.0.0.1", 0);
  const std::string secret = make_store_secret();
  const double t0 = now_s();
  auto rank_of = fork_ranks(ranks, rank_main, sock, secret);
  LaunchReport report;
  {
    TcpStoreServer server(sock, secret);  // serves until every rank is gone
    reap_ranks(rank_of, grace, t0, report);
  }
  summarise_exits(report);
  return report;
}

}  // namespace redsim::realexec
