#include "trace_tools/kineto_memory.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

namespace redsim::kineto {
namespace {

constexpr int kCudaDeviceType = 1;  // c10::DeviceType::CUDA

struct Sample {
  double ts = 0;
  std::int64_t total = 0;  // the allocator's bytes after the event
};

// The CUDA device's allocator over time. "Total Allocated" where the event gives it; otherwise the
// running sum of the allocations and frees since the trace began (differences are what count).
std::vector<Sample> device_samples(const KinetoEvents& ev, const std::string& device_id) {
  std::map<std::int64_t, std::size_t> count_by_id;
  for (const auto& m : ev.memory)
    if (m.device_type == kCudaDeviceType) ++count_by_id[m.device_id];
  if (count_by_id.empty()) return {};
  // The kernels' device; a trace whose kernels name none has one GPU's events, or the busiest's.
  std::int64_t id = std::max_element(count_by_id.begin(), count_by_id.end(), [](const auto& a, const auto& b) {
                      return a.second < b.second;
                    })->first;
  for (const auto& [i, n] : count_by_id)
    if (std::to_string(i) == device_id) id = i;
  std::vector<Sample> out;
  std::int64_t running = 0;
  for (const auto& m : ev.memory) {
    if (m.device_type != kCudaDeviceType || m.device_id != id) continue;
    running += m.bytes;
    out.push_back({m.ts, m.total_allocated.value_or(running)});
  }
  std::stable_sort(out.begin(), out.end(), [](const Sample& a, const Sample& b) { return a.ts < b.ts; });
  return out;
}

// The host's first autograd op of the window: backward begins there.
std::optional<double> backward_begins_us(const KinetoEvents& ev, const StepWindow& w) {
  std::optional<double> first;
  for (const auto& s : ev.spans)
    if (s.ts >= w.ts && s.ts <= w.end && starts_with(s.name, "autograd::engine::evaluate_function"))
      first = std::min(first.value_or(s.ts), s.ts);
  return first;
}

std::optional<std::int64_t> one_step(const std::vector<Sample>& samples, const KinetoEvents& ev, const StepWindow& w) {
  const auto bwd = backward_begins_us(ev, w);
  if (!bwd) return std::nullopt;
  std::optional<std::int64_t> least, at_backward;
  for (const auto& s : samples) {
    if (s.ts > *bwd) break;
    // What the allocator held as the window began counts too: the last sample before it.
    if (s.ts < w.ts) {
      least = s.total;
      at_backward = s.total;
      continue;
    }
    least = std::min(least.value_or(s.total), s.total);
    at_backward = s.total;
  }
  if (!least || !at_backward) return std::nullopt;
  return *at_backward - *least;
}

}  // namespace

std::optional<std::int64_t> forward_allocated_bytes(const KinetoEvents& ev, const std::vector<StepResult>& steps,
                                                    const std::string& device_id) {
  const auto samples = device_samples(ev, device_id);
  if (samples.empty() || steps.empty()) return std::nullopt;
  double sum = 0;
  for (const auto& r : steps) {
    const auto b = one_step(samples, ev, r.window);
    if (!b) return std::nullopt;
    sum += static_cast<double>(*b);
  }
  return std::llround(sum / static_cast<double>(steps.size()));
}

}  // namespace redsim::kineto
