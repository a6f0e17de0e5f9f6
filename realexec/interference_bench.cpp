#include "realexec/interference_bench.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "core/statistics.h"
#include "realexec/clock.h"

namespace redsim::realexec {

float compute_load_unit(int seed) {
  constexpr int n = 128;
  static thread_local std::vector<float> a(n * n), b(n * n), c(n * n);
  for (int i = 0; i < n * n; ++i) {
    a[static_cast<std::size_t>(i)] = static_cast<float>((i + seed) % 7) * 0.25f;
    b[static_cast<std::size_t>(i)] = static_cast<float>((i * 3 + seed) % 5) * 0.5f;
  }
  std::fill(c.begin(), c.end(), 0.0f);
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < n; ++k) {
      const float aik = a[static_cast<std::size_t>(i * n + k)];
      for (int j = 0; j < n; ++j) c[static_cast<std::size_t>(i * n + j)] += aik * b[static_cast<std::size_t>(k * n + j)];
    }
  float sum = 0;
  for (float x : c) sum += x;
  return sum;
}

namespace {

// One float through a collective on backend memory (every rank calls it): the value each rank
// gets back.
template <typename Collective>
double through_collective(Backend& backend, double value, Collective&& collective) {
  float host = static_cast<float>(value);
  void* dev = backend.allocate(sizeof(float));
  backend.copy_to_buffer(dev, &host, sizeof(float));
  collective(dev);
  backend.copy_from_buffer(&host, dev, sizeof(float));
  backend.release(dev, sizeof(float));
  return static_cast<double>(host);
}

}  // namespace

// Ranks sharing cores do not get equal shares over a one-second pass (three calibrations in a row
// gave rank 0 896, 1032 and 965 ms for the same load while its lone time held at 483-490 ms), but
// their shares add up to the host's cores, so the mean over ranks is what a job's ranks get.
double mean_over_ranks(Communicator& comm, Backend& backend, double value) {
  return reduce_over_ranks(comm, backend, value, ReduceOp::sum) / backend.world_size();
}

double reduce_over_ranks(Communicator& comm, Backend& backend, double value, ReduceOp op) {
  return through_collective(backend, value, [&](void* dev) { comm.allreduce(dev, 1, DType::fp32, op); });
}

namespace {

volatile float g_sink = 0;  // where the compute load's results go

double run_compute(int units) {
  const double t0 = now_s();
  float s = 0;
  for (int u = 0; u < units; ++u) s += compute_load_unit(u);
  g_sink = s;
  return now_s() - t0;
}

// Rank 0's value, on every rank.
double agreed_value(Communicator& comm, Backend& backend, double value) {
  return through_collective(backend, value, [&](void* dev) { comm.broadcast(dev, 1, DType::fp32, 0); });
}

// Every rank agrees on one count: rank 0's, broadcast (ranks time their own loads slightly apart).
int agreed(Communicator& comm, Backend& backend, int value) {
  return static_cast<int>(std::lround(agreed_value(comm, backend, value)));
}

// The load timed on every rank at once, each rank computing on after its timed pass until every
// rank has finished its own (a second thread waits in a barrier meanwhile): a rank that finished
// early and sat idle would hand its core to the others and make them look faster than ranks
// that share the host all the time, as a job's do.
double run_compute_with_peers_busy(Backend& backend, int units) {
  std::mutex mu;
  std::condition_variable cv;
  bool timed = false;
  std::atomic<bool> all_timed{false};
  std::thread waiter([&] {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return timed; });
    lock.unlock();
    backend.barrier();
    all_timed = true;
  });
  const double s = run_compute(units);
  {
    std::lock_guard<std::mutex> lock(mu);
    timed = true;
  }
  cv.notify_one();
  float keep = 0;
  for (int u = 0; !all_timed; ++u) keep += compute_load_unit(u);
  g_sink = keep;
  waiter.join();
  return s;
}

// An allreduce of `count` floats alone, then looped on a second thread beside the compute load
// for long enough to outlast it even slowed 3x; each allreduce's end is stamped and those that
// ended while compute ran count. `compute_beside_s` gets the compute load's time beside it.
AllreduceBeside allreduce_beside_compute(Backend& backend, Communicator& comm, void* buf, std::int64_t count, int units,
                                         double compute_alone_s, double& compute_beside_s) {
  AllreduceBeside t;
  t.bytes = count * 4;
  comm.allreduce(buf, count, DType::fp32, ReduceOp::sum);  // warm-up
  backend.barrier();
  // The median of 5 timed one by one: a mean of 4 let one slow pass put "alone" above "beside"
  // (4 MiB: 151.0 ms alone, 134.3 beside, in one calibration).
  std::vector<double> alone(5);
  for (double& a : alone) {
    const double s0 = now_s();
    comm.allreduce(buf, count, DType::fp32, ReduceOp::sum);
    a = now_s() - s0;
  }
  std::nth_element(alone.begin(), alone.begin() + 2, alone.end());
  t.alone_s = alone[2];
  const int loops = agreed(comm, backend, std::max(4, static_cast<int>(std::ceil(3 * compute_alone_s / t.alone_s))));
  backend.barrier();
  std::vector<double> ends(static_cast<std::size_t>(loops));
  const double t0 = now_s();
  std::thread comm_thread([&] {
    for (int i = 0; i < loops; ++i) {
      comm.allreduce(buf, count, DType::fp32, ReduceOp::sum);
      ends[static_cast<std::size_t>(i)] = now_s();
    }
  });
  const double rank_compute_s = run_compute(units);
  const double compute_end = t0 + rank_compute_s;
  comm_thread.join();
  compute_beside_s = mean_over_ranks(comm, backend, rank_compute_s);
  const auto beside = std::count_if(ends.begin(), ends.end(), [&](double e) { return e <= compute_end; });
  t.beside = static_cast<int>(beside);
  t.beside_s = beside > 0 ? (ends[static_cast<std::size_t>(beside - 1)] - t0) / static_cast<double>(beside) : 0;
  backend.barrier();
  return t;
}

}  // namespace

double InterferenceMeasurement::collective_slowdown() const {
  const double g = two_sizes() ? (large.beside_s - small.beside_s) / (large.alone_s - small.alone_s)
                               : large.beside_s / large.alone_s;
  return std::isfinite(g) ? std::clamp(g, 1.0, 10.0) : 1.0;
}

double InterferenceMeasurement::collective_latency_s() const {
  if (!two_sizes()) return 0;
  const double d = small.beside_s - collective_slowdown() * small.alone_s;
  return std::isfinite(d) ? std::max(0.0, d) : 0.0;
}

namespace {

// The load on rank 0 alone, then on every rank at once, in pairs (more_speed_pairs says how
// many); the pair whose ratio is the median gives the lone and together times. From one pair, a
// slow second of the shared host set the rank speed: 0.431 in one calibration where the pairs
// before and after each job of that grid gave 0.49-0.55 for the model itself (bench/validate/README.md,
// stop 44).
void measure_rank_speed(Backend& backend, Communicator& comm, int units, InterferenceMeasurement& m) {
  std::vector<double> lone, together, slowest, speed;
  do {
    backend.barrier();
    lone.push_back(agreed_value(comm, backend, backend.rank() == 0 ? run_compute(units) : 0.0));
    backend.barrier();
    const double rank_s = run_compute_with_peers_busy(backend, units);
    together.push_back(mean_over_ranks(comm, backend, rank_s));
    slowest.push_back(reduce_over_ranks(comm, backend, rank_s, ReduceOp::max));
    speed.push_back(lone.back() / together.back());
  } while (more_speed_pairs(speed));
  const std::size_t k = median_index(speed);
  m.compute_lone_s = lone[k], m.compute_alone_s = together[k], m.compute_alone_slowest_s = slowest[k];
  const auto [low, high] = std::minmax_element(speed.begin(), speed.end());
  m.rank_speed_low = *low, m.rank_speed_high = *high;
  m.speed_pairs = static_cast<int>(speed.size());
}

}  // namespace

bool more_speed_pairs(const std::vector<double>& speeds) {
  const auto n = static_cast<int>(speeds.size());
  if (n != kSpeedPairs) return n < kMaxSpeedPairs;
  // The first pairs decide: a range only grows with more pairs, so it cannot say when to stop.
  const auto [low, high] = std::minmax_element(speeds.begin(), speeds.end());
  const double mid = speeds[median_index(speeds)];
  return mid > 0 && (*high - *low) > kSpeedSpread * mid;
}

InterferenceMeasurement measure_interference(Backend& backend, Communicator& comm, void* buf, std::int64_t bytes,
                                             double target_s) {
  InterferenceMeasurement m;
  const std::int64_t count = bytes / 4;
  // Size the compute load to about target_s alone: rank 0 times units while the others wait, and
  // all take its count. Timed by every rank at once, the units had shared the cores or not as the
  // scheduler fell, giving loads of 233-525 ms for 500; the two shortest (2 allreduces beside
  // instead of 8) came out with rank speeds of 0.519 and 0.517 against 0.47-0.50.
  backend.barrier();
  const double unit_s = backend.rank() == 0 ? std::max(1e-6, run_compute(8) / 8) : 1.0;
  const int units = agreed(comm, backend, std::max(8, static_cast<int>(target_s / unit_s)));
  measure_rank_speed(backend, comm, units, m);
  m.large = allreduce_beside_compute(backend, comm, buf, count, units, m.compute_alone_s, m.compute_beside_s);
  // 1 MiB, DDP's first bucket and the smallest bucket size people run. The delay beside compute
  // shrinks with size on the testbed (64 KiB +10.8 ms, 1 MiB +8, 4 MiB +4.4, 25 MiB +3.2), so it
  // is measured where a job's small buckets are rather than at a latency-bound size.
  const std::int64_t small_count = std::min<std::int64_t>(count / 4, 256 << 10);
  double compute_beside_small_s = 0;  // the compute load beside the small loop: not reported
  if (small_count > 0)
    m.small = allreduce_beside_compute(backend, comm, buf, small_count, units, m.compute_alone_s, compute_beside_small_s);
  return m;
}

}  // namespace redsim::realexec
