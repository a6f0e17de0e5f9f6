#include "realexec/model_state.h"

#include <sys/resource.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>

#include "realexec/exec_layout.h"
#include "strategies/memory_model.h"

namespace redsim::realexec {
namespace {

using Interval = std::pair<std::int64_t, std::int64_t>;  // [begin, end) elements of one parameter

// The parameter elements a collective's buffer range [begin, end) carries: slices are laid out
// one after another in the buffer, in their order.
void collect(const PlanOp& op, std::int64_t begin, std::int64_t end, std::vector<std::vector<Interval>>& out) {
  std::int64_t at = 0;
  for (const auto& s : op.slices) {
    const std::int64_t lo = std::max(begin, at), hi = std::min(end, at + s.numel);
    if (lo < hi && s.param < out.size())
      out[s.param].push_back({s.offset_elems + (lo - at), s.offset_elems + (hi - at)});
    at += s.numel;
  }
}

// Total length of a set of intervals (FSDP gathers a unit before forward and again before
// backward: the same elements twice count once).
std::int64_t union_length(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  std::int64_t total = 0, end = -1;
  for (const auto& [lo, hi] : v) {
    if (hi <= end) continue;
    total += hi - std::max(lo, end);
    end = hi;
  }
  return total;
}

}  // namespace

ModelStateSpec model_state_spec(const ModelTrace& trace, int zero_stage) {
  ModelStateSpec spec;
  spec.zero_stage = zero_stage;
  for (const auto& p : trace.params)
    spec.params.push_back({p.numel, dtype_size_bytes(p.dtype), adam_state_bytes_per_element(p.dtype), p.trainable});
  return spec;
}

std::vector<std::optional<std::int64_t>> owned_elements(const Plan& plan, int rank, std::size_t param_count,
                                                        bool gathered) {
  std::vector<std::vector<Interval>> mine(param_count);
  std::vector<bool> carried(param_count, false);
  for (const auto& op : plan.ops) {
    // A broadcast that carries parameters (ZeroRedundancyOptimizer's) is sent by their owner.
    const bool owns = gathered ? op.kind == OpKind::allgather
                               : op.kind == OpKind::reduce_scatter || op.kind == OpKind::reduce ||
                                     op.kind == OpKind::broadcast;
    if (!owns || op.slices.empty()) continue;
    for (const auto& s : op.slices)
      if (s.param < param_count) carried[s.param] = true;
    const int member = op.group_size > 0 ? group_member_index(op, rank) : rank;
    if (op.kind == OpKind::reduce || op.kind == OpKind::broadcast) {
      if (op.root == member) collect(op, 0, op.bytes / dtype_size_bytes(op.dtype), mine);
      continue;
    }
    const auto layout = layout_collective(op, plan.world_size, 1.0);
    const Segment& shard = layout.shards[static_cast<std::size_t>(member)];
    collect(op, shard.offset, shard.offset + shard.count, mine);
  }
  std::vector<std::optional<std::int64_t>> owned(param_count);
  for (std::size_t i = 0; i < param_count; ++i)
    if (carried[i]) owned[i] = union_length(std::move(mine[i]));
  return owned;
}

HeldMemory model_state_bytes(const Plan& plan, const ModelStateSpec& spec, int rank) {
  const std::size_t n = spec.params.size();
  // Gradients and optimizer state belong to the rank their reduction ends on; parameters to the
  // rank whose shard the allgathers spread.
  const auto reduced = spec.zero_stage >= 1 ? owned_elements(plan, rank, n, false) : std::vector<std::optional<std::int64_t>>(n);
  const auto gathered = spec.zero_stage >= 3 ? owned_elements(plan, rank, n, true) : std::vector<std::optional<std::int64_t>>(n);
  HeldMemory h;
  for (std::size_t i = 0; i < n; ++i) {
    const auto& p = spec.params[i];
    h.params_bytes += gathered[i].value_or(p.numel) * p.elem_bytes;
    if (!p.trainable) continue;
    const std::int64_t own = reduced[i].value_or(p.numel);
    h.grads_bytes += (spec.zero_stage >= 2 ? own : p.numel) * p.elem_bytes;
    h.optimizer_bytes += own * p.optimizer_bytes_per_elem;
  }
  return h;
}

std::int64_t peak_rss_bytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) != 0) continue;
    std::istringstream s(line.substr(6));
    std::int64_t kb = 0;
    if (s >> kb) return kb * 1024;
  }
  struct rusage u {};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<std::int64_t>(u.ru_maxrss) * 1024;  // Linux reports kilobytes
}

}  // namespace redsim::realexec
