// The local launcher: forked ranks reach the launcher's store; a failing rank is named as the
// cause, ranks whose collectives aborted as consequences, and a rank that hangs is killed.
#include <catch2/catch.hpp>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "realexec/backend.h"
#include "realexec/clock.h"
#include "realexec/launch_env.h"
#include "realexec/local_launcher.h"
#include "realexec/tcp_store.h"

using namespace redsim::realexec;

TEST_CASE("launcher: ranks rendezvous through the launcher's store and succeed", "[realexec][launcher]") {
  auto report = launch_local(3, [](int rank, int port) {
    TcpStore st("127.0.0.1", port, std::chrono::seconds(10), std::chrono::seconds(10), std::getenv(kStoreSecretVar));
    st.set("hello/" + std::to_string(rank), {static_cast<char>('a' + rank)});
    for (int r = 0; r < 3; ++r)
      if (st.get("hello/" + std::to_string(r)) != std::vector<char>{static_cast<char>('a' + r)}) return 1;
    return 0;
  });
  CHECK(report.exit_code == 0);
  CHECK(report.message.empty());
  CHECK(report.exits.size() == 3);
}

TEST_CASE("launcher: the rank that failed first is named, not its victims", "[realexec][launcher]") {
  auto report = launch_local(4, [](int rank, int) {
    if (rank == 2) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      ::raise(SIGKILL);
    }
    // The others notice "their peer" is gone a little later and abort.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    return kExitPeerFailure;
  });
  CHECK(report.exit_code == 1);
  CHECK_THAT(report.message, Catch::StartsWith("rank 2 failed (killed by signal 9 (SIGKILL)"));
  CHECK_THAT(report.message, Catch::Contains("ranks 0, 1, 3 stopped because of it"));
}

TEST_CASE("launcher: a rank that exits with an error is named, bad input keeps status 2", "[realexec][launcher]") {
  auto report = launch_local(2, [](int rank, int) { return rank == 1 ? kExitRankError : 0; });
  CHECK(report.exit_code == 1);
  CHECK_THAT(report.message, Catch::Contains("rank 1 failed (exited with status 1 (rank error)"));
  report = launch_local(2, [](int, int) { return 2; });
  CHECK(report.exit_code == 2);
}

TEST_CASE("launcher: a hung rank is killed after the others give up", "[realexec][launcher]") {
  const double t0 = now_s();
  auto report = launch_local(
      3,
      [](int rank, int) {
        if (rank == 1)
          for (;;) ::pause();
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        return kExitPeerFailure;
      },
      std::chrono::milliseconds(300));
  CHECK(report.exit_code == 1);
  CHECK_THAT(report.message, Catch::Contains("rank 1 stopped responding"));
  CHECK_THAT(report.message, Catch::Contains("ranks 0, 2 aborted a collective"));
  // Bounded by the grace period, not by the hung rank (a generous bound: this is not a speed test).
  CHECK(now_s() - t0 < 30.0);
}
