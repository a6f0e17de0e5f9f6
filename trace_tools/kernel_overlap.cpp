#include "trace_tools/kernel_overlap.h"

#include <algorithm>

#include "core/cluster.h"

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

int grid_blocks(const Kernel& k) {
  if (k.span->args == nullptr || !k.span->args->is_object()) return 0;
  const auto it = k.span->args->find("grid");
  if (it == k.span->args->end() || !it->is_array() || it->empty() || !(*it)[0].is_number_integer()) return 0;
  const auto x = (*it)[0].get<std::int64_t>();
  return x > 0 && x <= 1024 ? static_cast<int>(x) : 0;
}

HeldByDevice nccl_blocks_by_device(const KinetoEvents& ev) {
  HeldByDevice out;
  for (const auto& k : ev.kernels)
    if (k.nccl) out[k.span->pid].push_back({k.ts(), k.end(), grid_blocks(k)});
  for (auto& [pid, v] : out)
    std::sort(v.begin(), v.end(), [](const HeldSms& a, const HeldSms& b) { return a.begin_us < b.begin_us; });
  return out;
}

double sm_share_lost_us(const Kernel& k, const HeldByDevice& held, int sm_count) {
  const auto it = held.find(k.span->pid);
  if (it == held.end() || sm_count <= 0) return 0;
  double lost = 0;
  for (const auto& h : it->second) {
    if (h.begin_us >= k.end()) break;
    const double o = std::min(k.end(), h.end_us) - std::max(k.ts(), h.begin_us);
    if (o > 0) lost += o * sm_share_taken(h.blocks, sm_count);
  }
  return lost;
}

int profile_sm_count(const nlohmann::json& root) {
  if (!root.is_object()) return 0;
  const auto it = root.find("deviceProperties");
  if (it == root.end() || !it->is_array()) return 0;
  int sms = 0;
  for (const auto& d : *it) {
    const auto n = d.is_object() ? d.find("numSms") : d.end();
    if (n == d.end() || !n->is_number_integer() || n->get<std::int64_t>() <= 0 || n->get<std::int64_t>() > 4096) return 0;
    const int v = static_cast<int>(n->get<std::int64_t>());
    if (sms != 0 && v != sms) return 0;
    sms = v;
  }
  return sms;
}

}  // namespace redsim::kineto
