// Runs N ranks as threads of the test process, each with its own client of one TCP store, and
// collects what each rank reports (Catch2's assertions are not thread-safe: ranks return
// strings, the test thread checks them).
#pragma once
#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "realexec/tcp_store.h"

namespace redsim::testing {

// f(rank, store) returns a list of problems found by that rank (empty: all good). An exception
// thrown by a rank is reported as a problem naming the rank.
inline std::vector<std::string> run_ranks(
    int n, const std::function<std::vector<std::string>(int, gloo::rendezvous::Store&)>& f,
    std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  realexec::TcpStoreServer server(realexec::listen_tcp("127.0.0.1", 0), "test-secret");
  std::vector<std::vector<std::string>> problems(static_cast<std::size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        realexec::TcpStore store("127.0.0.1", server.port(), timeout, timeout, "test-secret");
        problems[static_cast<std::size_t>(r)] = f(r, store);
      } catch (const std::exception& e) {
        problems[static_cast<std::size_t>(r)].push_back("rank " + std::to_string(r) + " threw: " + e.what());
      }
    });
  }
  for (auto& t : threads) t.join();
  std::vector<std::string> all;
  for (auto& p : problems) all.insert(all.end(), p.begin(), p.end());
  return all;
}

}  // namespace redsim::testing
