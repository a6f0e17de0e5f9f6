#include "trace_tools/kernel_overlap.h"

#include <algorithm>

namespace redsim::kineto {

std::map<std::string, Busy> busy_by_device(const KinetoEvents& ev, bool nccl) {
  std::map<std::string, Busy> out;
  for (const auto& k : ev.kernels)
    if (k.nccl == nccl) out[k.span->pid].push_back({k.ts(), k.end()});
  for (auto& [pid, v] : out) {
    std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) { return a.begin_us < b.begin_us; });
    Busy merged;
    for (const auto& i : v) {
      if (!merged.empty() && i.begin_us <= merged.back().end_us)
        merged.back().end_us = std::max(merged.back().end_us, i.end_us);
      else
        merged.push_back(i);
    }
    v = std::move(merged);
  }
  return out;
}

double overlap_us(const Busy& busy, double begin_us, double end_us) {
  auto it = std::upper_bound(busy.begin(), busy.end(), begin_us, [](double t, const Interval& i) { return t < i.end_us; });
  double sum = 0;
  for (; it != busy.end() && it->begin_us < end_us; ++it)
    sum += std::max(0.0, std::min(end_us, it->end_us) - std::max(begin_us, it->begin_us));
  return sum;
}

double overlap_fraction(const Kernel& k, const std::map<std::string, Busy>& other_by_device) {
  if (!(k.span->dur > 0)) return 0;
  const auto it = other_by_device.find(k.span->pid);
  return it == other_by_device.end() ? 0 : overlap_us(it->second, k.ts(), k.end()) / k.span->dur;
}

}  // namespace redsim::kineto
