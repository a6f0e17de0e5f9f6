#include "tune/parallel.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace redsim::tune {

int default_threads() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

void parallel_for(std::size_t n, int threads, const std::function<void(std::size_t)>& fn) {
  if (n == 0) return;
  const std::size_t t = std::min<std::size_t>(n, static_cast<std::size_t>(std::max(1, threads)));
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mu;
  std::size_t failed_index = n;
  std::exception_ptr error;
  auto worker = [&] {
    for (;;) {
      const std::size_t i = next.fetch_add(1);
      if (i >= n || failed.load()) return;
      try {
        fn(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (i < failed_index) {
          failed_index = i;
          error = std::current_exception();
        }
        failed = true;
      }
    }
  };
  if (t == 1) {
    worker();
  } else {
    std::vector<std::thread> pool;
    pool.reserve(t);
    for (std::size_t k = 0; k < t; ++k) pool.emplace_back(worker);
    for (auto& th : pool) th.join();
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace redsim::tune
