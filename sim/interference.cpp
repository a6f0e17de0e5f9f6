#include "sim/interference.h"

#include <algorithm>
#include <mutex>

namespace redsim {
namespace sg4 = simgrid::s4u;

DeviceActivity::DeviceActivity(const InterferenceSpec& spec, int sm_count) : spec_(spec), sm_count_(sm_count) {}

double DeviceActivity::compute_busy_s() const {
  return busy_before_s_ + (computing_ > 0 ? sg4::Engine::get_clock() - busy_since_s_ : 0.0);
}

double DeviceActivity::share() const {
  const int jobs = computing_ + reducing_;
  return jobs > 1 ? 1.0 / jobs : 1.0;
}

double DeviceActivity::compute_rate() const {
  if (collectives_ == 0) return 1.0;
  if (!spec_.compute_slowdown_sm_share || sm_count_ <= 0) return 1.0 / spec_.compute_slowdown;
  return 1.0 - sm_share_taken(blocks_, sm_count_);
}

template <class Rate>
void DeviceActivity::run_at_rate(double work_s, Rate rate) {
  if (work_s <= 0) return;
  std::unique_lock<sg4::Mutex> lock(*mutex_);
  double left_s = work_s;
  // Each change of the device's activity wakes the loop to apply the new rate.
  while (left_s > 0) {
    const double r = rate();
    const double t0 = sg4::Engine::get_clock();
    if (changed_->wait_until(lock, t0 + left_s / r) == std::cv_status::timeout) return;
    left_s -= (sg4::Engine::get_clock() - t0) * r;
  }
}

template <class Body>
void DeviceActivity::as_job(int& counter, Body body) {
  // Others are woken only when their rate changes: another job's share, or a collective's
  // make-up while compute runs.
  const bool compute = &counter == &computing_;
  bool wake = false;
  {
    std::unique_lock<sg4::Mutex> lock(*mutex_);
    if (compute && computing_ == 0) busy_since_s_ = sg4::Engine::get_clock();
    ++counter;
    wake = computing_ + reducing_ > 1 || (compute && spec_.collective_slowdown != 1.0);
  }
  if (wake) changed_->notify_all();
  body();
  {
    std::unique_lock<sg4::Mutex> lock(*mutex_);
    if (--counter == 0 && compute) busy_before_s_ += sg4::Engine::get_clock() - busy_since_s_;
    wake = computing_ + reducing_ > 0 || (compute && spec_.collective_slowdown != 1.0);
  }
  if (wake) changed_->notify_all();
}

void DeviceActivity::run_compute(double work_s) {
  as_job(computing_, [&] {
    run_at_rate(work_s, [this] { return compute_rate() * share(); });
  });
}

void DeviceActivity::run_reduction(double work_s) {
  if (work_s <= 0) return;
  as_job(reducing_, [&] { run_at_rate(work_s, [this] { return share(); }); });
}

DeviceActivity::Mark DeviceActivity::begin_collective(int channels) {
  Mark mark;
  {
    std::unique_lock<sg4::Mutex> lock(*mutex_);
    ++collectives_;
    mark = {compute_busy_s(), sg4::Engine::get_clock(), spec_.compute_slowdown_sm_share ? std::max(channels, 0) : 0};
    blocks_ += mark.blocks;
  }
  if (compute_rate_varies()) changed_->notify_all();
  return mark;
}

void DeviceActivity::finish_collective(Mark mark) {
  double lost_s = 0, latency_s = 0;
  {
    std::unique_lock<sg4::Mutex> lock(*mutex_);
    // The network part ran at full speed; beside compute it should have run at 1/slowdown.
    const double overlap_s = compute_busy_s() - mark.busy_s;
    lost_s = overlap_s * (1.0 - 1.0 / spec_.collective_slowdown);
    const double span_s = sg4::Engine::get_clock() - mark.start_s;
    if (spec_.collective_latency_us > 0 && overlap_s > 0)
      latency_s = spec_.collective_latency_us * 1e-6 * (span_s > 0 ? std::min(1.0, overlap_s / span_s) : 1.0);
  }
  run_at_rate(lost_s, [this] { return computing_ > 0 ? 1.0 / spec_.collective_slowdown : 1.0; });
  if (latency_s > 0) sg4::this_actor::sleep_for(latency_s);
  {
    std::unique_lock<sg4::Mutex> lock(*mutex_);
    --collectives_;
    blocks_ -= mark.blocks;
  }
  if (compute_rate_varies()) changed_->notify_all();
}

}  // namespace redsim
