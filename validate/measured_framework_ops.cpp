#include "validate/measured_framework_ops.h"

namespace redsim {

std::optional<std::vector<std::optional<std::size_t>>> ops_without_framework(const Plan& with, const Plan& without) {
  std::vector<std::optional<std::size_t>> index;
  std::size_t j = 0;
  for (const auto& op : with.ops) {
    if (op.kind == OpKind::framework) {
      index.emplace_back();
      continue;
    }
    if (j >= without.ops.size() || without.ops[j].name != op.name || without.ops[j].kind != op.kind) return std::nullopt;
    index.emplace_back(j++);
  }
  if (j != without.ops.size()) return std::nullopt;
  return index;
}

Timeline with_framework_ops(const Timeline& measured, const Plan& with,
                            const std::vector<std::optional<std::size_t>>& index_in_without) {
  Timeline out(measured.source, measured.world_size, with.ops.size());
  for (int r = 0; r < measured.world_size; ++r) {
    double previous_end_s = 0;
    for (std::size_t i = 0; i < with.ops.size(); ++i) {
      OpTiming& t = out.mutable_at(r, i);
      if (const auto j = index_in_without[i]) {
        t = measured.at(r, *j);
      } else {
        t.ready_s = t.start_s = t.end_s = previous_end_s;
      }
      previous_end_s = t.end_s;
    }
  }
  return out;
}

}  // namespace redsim
